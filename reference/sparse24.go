package reference

import (
	"cmp"
	"math"
	"slices"

	"github.com/npuverify/npuverify/internal/dgemm"
)

// Prune24 returns, for a row-major w [m,k] (k a multiple of 4), the two
// kept positions of every group of four along k: keep[2g] < keep[2g+1],
// both in 0..3, where group g is row g/(k/4), columns 4·(g mod k/4)…+3.
// The kept two are the largest |w| (a NaN counts as larger than every
// number, NaNs among themselves and equal magnitudes go to the lower
// index), listed in ascending index order.
//
// It sorts each group's four positions whole by that order and takes the
// first two: slower than the kernel's running top two, on purpose, so that
// the truth shares no selection code with the kernel it judges.
func Prune24(w []float64, m, k int) []int {
	groups := m * (k / 4)
	keep := make([]int, 0, 2*groups)
	for g := 0; g < groups; g++ {
		x := w[4*g : 4*g+4]
		order := []int{0, 1, 2, 3}
		slices.SortStableFunc(order, func(a, b int) int {
			if c := compareMagnitude24(x[b], x[a]); c != 0 {
				return c // the larger magnitude first
			}
			return cmp.Compare(a, b)
		})
		kept := order[:2]
		slices.Sort(kept)
		keep = append(keep, kept...)
	}
	return keep
}

// compareMagnitude24 orders x and y by magnitude as sparse24_prune ranks
// them: −1, 0 or +1 as |x| is smaller than, equal to or larger than |y|,
// where a NaN is larger than every number (+Inf included) and equal to
// another NaN.
func compareMagnitude24(x, y float64) int {
	xNaN, yNaN := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xNaN && yNaN:
		return 0
	case xNaN:
		return 1
	case yNaN:
		return -1
	}
	return cmp.Compare(math.Abs(x), math.Abs(y))
}

// Gemm24 returns, for a 2:4 compressed a (values [m,k/2] and the kept
// positions keep as made by Prune24, two per group of four) and b [k,n],
// the float64 dot products over the kept k only, ascending,
// d[i,j] = Σ_t values[i,t]·b[k_t,j], and their magnitudes s[i,j] =
// Σ_t |values[i,t]|·|b[k_t,j]|. Pruned positions are never multiplied, so
// an Inf or NaN in a row of b that only pruned positions meet does not
// reach the result.
func Gemm24(m, k, n int, values []float64, keep []int, b []float64) (d, s []float64) {
	d, s = make([]float64, m*n), make([]float64, m*n)
	Gemm24Into(m, k, n, values, keep, b, d, s)
	return d, s
}

// Gemm24Into is Gemm24 into d and s (m·n each, overwritten). Where a and
// b are fp32 values (every product exact in float64) it runs
// dgemm.MulAbsELL on the kept values and their columns, on all cores: the
// sparse loop's sums in the same order, bit for bit (NaN payloads aside;
// TestGemm24IntoMatchesLoop), at half the multiply-adds of the dense form
// (whose pruned zeros added exact ±0 products and kept the same bits only
// while b was finite: 0·Inf = NaN). Otherwise the sparse loop runs.
func Gemm24Into(m, k, n int, values []float64, keep []int, b, d, s []float64) {
	d, s = d[:m*n], s[:m*n]
	if allFP32(values) && allFP32(b) {
		dgemm.MulAbsELL(m, k, k/2, n, values, keptColumns(m, k, keep), b, d, s)
		return
	}
	clear(d)
	clear(s)
	gemm24Loop(m, k, n, values, keep, b, d, s)
}

// keptColumns is the column in a [m,k] of every kept value, row by row
// in the compressed order (ascending within a row).
func keptColumns(m, k int, keep []int) []int {
	cols := make([]int, m*k/2)
	for g := range m * k / 4 {
		c0 := 4 * (g % (k / 4))
		cols[2*g], cols[2*g+1] = c0+keep[2*g], c0+keep[2*g+1]
	}
	return cols
}

// gemm24Loop adds the kept products into d and s, the plain sparse loop.
func gemm24Loop(m, k, n int, values []float64, keep []int, b, d, s []float64) {
	kh := k / 2
	for i := 0; i < m; i++ {
		di, si := d[i*n:(i+1)*n], s[i*n:(i+1)*n]
		for t := 0; t < kh; t++ {
			g := i*(k/4) + t/2
			kk := 4*(t/2) + keep[2*g+t%2]
			a := values[i*kh+t]
			for j, bkj := range b[kk*n : (kk+1)*n] {
				// Converted: each product rounds before its sum
				// (never fused), as in matMulLoop.
				di[j] += float64(a * bkj)
				si[j] += float64(abs(a) * abs(bkj))
			}
		}
	}
}

// Decompress24 scatters compressed values [m,k/2] with kept positions
// keep back into a dense [m,k] matrix, zeros at the pruned positions.
func Decompress24(m, k int, values []float64, keep []int) []float64 {
	w := make([]float64, m*k)
	for i := 0; i < m; i++ {
		for t := 0; t < k/2; t++ {
			g := i*(k/4) + t/2
			w[i*k+4*(t/2)+keep[2*g+t%2]] = values[i*(k/2)+t]
		}
	}
	return w
}
