package dgemm

import (
	"math"

	"github.com/npuverify/npuverify/internal/parallel"
)

// ellWidth is how many columns of d and s one call of the row kernel
// keeps in registers: four ymm accumulators of d and four of s, eight
// chains of FMAs in flight, as many as two FMA units of four cycles'
// latency keep busy.
const ellWidth = 16

// MulAbsELL sets d = a·b and s = |a|·|b| for an a [m,k] given by kh
// entries per row (ELLPACK: row i's values vals[i·kh+t] in columns
// cols[i·kh+t], each in [0, k); a 2:4-compressed matrix's kept values and
// positions) and a row-major b [k,n]; d and s are [m,n] (overwritten).
// Every product vals·b must be exact in float64 (see the package
// comment). Then d and s are those of the plain loop over each row's
// entries in the order given (ellLoop), bit for bit: each sum starts at
// +0 and takes the products of the row's entries only, so an Inf or NaN in
// a row of b that no entry of a row meets does not reach that row, and a
// 2:4 matrix costs half the multiply-adds of its dense form (NaN payloads
// may differ).
func MulAbsELL(m, k, kh, n int, vals []float64, cols []int, b, d, s []float64) {
	d, s, b = d[:m*n], s[:m*n], b[:k*n]
	_ = vals[:m*kh]
	for i := range m {
		for _, c := range cols[i*kh : (i+1)*kh] {
			if c < 0 || c >= k { // the kernel reads the panel at c unchecked
				panic("dgemm: MulAbsELL: a column out of [0, k)")
			}
		}
	}
	// Each core takes a range of rows and copies b a panel of ellWidth
	// columns at a time into a buffer of its own, contiguous, which its
	// rows then read from its L2: b's own rows, n values apart (4 KiB at
	// n = 512), met in the same few sets of the L1 cache, and the product
	// took longer than the dense one's twice as many multiply-adds.
	// (Taking the panel's rows 128 or 256 at a time, so that they stay in
	// L1 for every row, made no difference.)
	parallel.For(m, max(1, (1<<16)/max(kh*n, 1)), func(lo, hi int) {
		panel := make([]float64, k*ellWidth)
		for j0 := 0; j0 < n; j0 += ellWidth {
			w := min(ellWidth, n-j0)
			for kk := range k {
				copy(panel[kk*ellWidth:kk*ellWidth+w], b[kk*n+j0:kk*n+j0+w])
			}
			for i := lo; i < hi; i++ {
				ellRow(kh, w, vals[i*kh:(i+1)*kh], cols[i*kh:(i+1)*kh], panel, d[i*n+j0:i*n+j0+w], s[i*n+j0:i*n+j0+w])
			}
		}
	})
}

// ellRow sets d[j] = Σ_t v[t]·panel[c[t]·ellWidth+j] and s[j] = Σ_t
// |v[t]|·|panel[c[t]·ellWidth+j]| for j < w (≤ ellWidth), t ascending,
// each sum from +0: the assembly kernel for a whole panel where there is
// one, else ellRowGo.
func ellRow(kh, w int, v []float64, c []int, panel, d, s []float64) {
	if w == ellWidth && ellKernel != nil && kh > 0 {
		_, _ = v[kh-1], c[kh-1]
		_, _ = d[ellWidth-1], s[ellWidth-1]
		ellKernel(kh, &v[0], &c[0], &panel[0], &d[0], &s[0])
		return
	}
	ellRowGo(kh, w, v, c, panel, d, s)
}

// ellRowGo is ellRow in Go: the assembly kernel's twin, and the tail
// columns of a row.
func ellRowGo(kh, w int, v []float64, c []int, panel, d, s []float64) {
	var dd, ss [ellWidth]float64
	for t := range kh {
		x := v[t]
		ax := math.Abs(x)
		row := panel[c[t]*ellWidth : c[t]*ellWidth+w]
		for j, y := range row {
			// Converted: the product rounds (exactly) before its sum.
			dd[j] += float64(x * y)
			ss[j] += float64(ax * math.Abs(y))
		}
	}
	copy(d[:w], dd[:w])
	copy(s[:w], ss[:w])
}
