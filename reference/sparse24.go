package reference

import "math"

// Prune24 returns, for a row-major w [m,k] (k a multiple of 4), the two
// kept positions of every group of four along k: keep[2g] < keep[2g+1],
// both in 0..3, where group g is row g/(k/4), columns 4·(g mod k/4)…+3.
// The kept two are the largest |w| (a NaN counts as larger than every
// number, NaNs among themselves and equal magnitudes go to the lower
// index), listed in ascending index order.
func Prune24(w []float64, m, k int) []int {
	groups := m * (k / 4)
	keep := make([]int, 2*groups)
	for g := 0; g < groups; g++ {
		x := w[4*g : 4*g+4]
		beats := func(i, j int) bool { // i ranks above j
			ni, nj := math.IsNaN(x[i]), math.IsNaN(x[j])
			switch {
			case ni != nj:
				return ni
			case ni || math.Abs(x[i]) == math.Abs(x[j]):
				return i < j
			}
			return math.Abs(x[i]) > math.Abs(x[j])
		}
		best, second := 0, 1
		if beats(1, 0) {
			best, second = 1, 0
		}
		for i := 2; i < 4; i++ {
			switch {
			case beats(i, best):
				best, second = i, best
			case beats(i, second):
				second = i
			}
		}
		keep[2*g], keep[2*g+1] = min(best, second), max(best, second)
	}
	return keep
}

// Gemm24 returns, for a 2:4 compressed a (values [m,k/2] and the kept
// positions keep as made by Prune24, two per group of four) and b [k,n],
// the float64 dot products over the kept k only, ascending,
// d[i,j] = Σ_t values[i,t]·b[k_t,j], and their magnitudes s[i,j] =
// Σ_t |values[i,t]|·|b[k_t,j]|. Pruned positions are never multiplied, so
// an Inf or NaN in a row of b that only pruned positions meet does not
// reach the result.
func Gemm24(m, k, n int, values []float64, keep []int, b []float64) (d, s []float64) {
	d = make([]float64, m*n)
	s = make([]float64, m*n)
	kh := k / 2
	for i := 0; i < m; i++ {
		di, si := d[i*n:(i+1)*n], s[i*n:(i+1)*n]
		for t := 0; t < kh; t++ {
			g := i*(k/4) + t/2
			kk := 4*(t/2) + keep[2*g+t%2]
			a := values[i*kh+t]
			for j, bkj := range b[kk*n : (kk+1)*n] {
				di[j] += a * bkj
				si[j] += abs(a) * abs(bkj)
			}
		}
	}
	return d, s
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
