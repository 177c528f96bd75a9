package reference

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// MatMul returns, for row-major a [m,k] and b [k,n], the float64 products
// d[i,j] = Σ_k a[i,k]·b[k,j] (k ascending) and the magnitudes
// s[i,j] = Σ_k |a[i,k]|·|b[k,j]| that error bounds scale with.
//
// Every product of fp32, fp16, bf16 or int8 values is exact in float64
// (at most 48 significant bits, exponents far inside float64's range), so
// d differs from the exact dot product only by the float64 additions:
// |d − exact| ≤ γ_k(2^-53)·s. For int8 inputs with k ≤ 2^37 everything is
// an integer below 2^53 and d is exact. Non-finite inputs follow IEEE
// float64 arithmetic (Inf·0 = NaN, Inf + −Inf = NaN).
//
// The summation order is the contract, not the loop: every element starts
// from +0 and adds its products one at a time, k ascending, each product
// rounded to float64 and then added (no fused multiply-add on amd64). With
// finite inputs MatMul runs gonum's blocked, parallel Dgemm (and a second
// Dgemm on |a|, |b| for s), which keeps exactly that order per element: it
// walks each block of C along k in order and adds a[i,k]·b[k,j] by an
// axpy. Dgemm skips a zero a[i,k]; with b finite that product is ±0, and
// adding ±0 to an accumulator that started at +0 and was never −0 (a
// rounded sum is −0 only when both addends are) changes nothing, so the
// bits are those of the plain loop. Inputs holding an Inf or NaN, where
// 0·Inf = NaN must not be skipped, take the plain loop (matMulLoop);
// TestMatMulPathsAgree checks the two bit for bit.
func MatMul(m, k, n int, a, b []float64) (d, s []float64) {
	d = make([]float64, m*n)
	s = make([]float64, m*n)
	MatMulInto(m, k, n, a, b, d, s)
	return d, s
}

// MatMulInto is MatMul into d and s (each of length m·n, overwritten), for
// callers that have somewhere to put them already.
func MatMulInto(m, k, n int, a, b, d, s []float64) {
	d, s = d[:m*n], s[:m*n]
	clear(d)
	clear(s)
	if m == 0 || n == 0 || k == 0 {
		return
	}
	if !allFinite(a[:m*k]) || !allFinite(b[:k*n]) {
		matMulLoop(m, k, n, a, b, d, s)
		return
	}
	dgemm(m, k, n, a, b, d)
	dgemm(m, k, n, absCopy(a[:m*k]), absCopy(b[:k*n]), s)
}

// dgemm sets c = a·b with gonum's Dgemm (alpha 1, beta 0: c starts at +0).
func dgemm(m, k, n int, a, b, c []float64) {
	blas64.Implementation().Dgemm(blas.NoTrans, blas.NoTrans, m, n, k, 1, a, k, b, n, 0, c, n)
}

// matMulLoop is MatMul as the plain loop, into zeroed d and s.
func matMulLoop(m, k, n int, a, b, d, s []float64) {
	for i := 0; i < m; i++ {
		di, si := d[i*n:(i+1)*n], s[i*n:(i+1)*n]
		// i-k-j order: each d[i,j] still sums its terms with k ascending.
		for kk := 0; kk < k; kk++ {
			aik := a[i*k+kk]
			brow := b[kk*n : (kk+1)*n]
			for j, bkj := range brow {
				di[j] += aik * bkj
				si[j] += math.Abs(aik) * math.Abs(bkj)
			}
		}
	}
}

// allFinite reports whether x holds no Inf or NaN.
func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return false
		}
	}
	return true
}

// absCopy returns |x| element-wise in a new slice.
func absCopy(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Abs(v)
	}
	return out
}

// GEMM returns out[i,j] = alpha·((sa[i]·sb[j])·d[i,j]) + beta·c[i,j] in
// float64, with d from MatMul, together with MatMul's magnitudes s.
//
// sa and sb are the int8 dequantisation scales: nil means 1, a slice of
// length 1 is broadcast. When beta == 0, c is not read (BLAS convention),
// so a NaN in c does not propagate; otherwise c is [m,n].
func GEMM(m, k, n int, a, b []float64, alpha, beta float64, c, sa, sb []float64) (out, s []float64) {
	d, s := MatMul(m, k, n, a, b)
	out = make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			v := d[i*n+j]
			if sa != nil || sb != nil {
				v = (scaleAt(sa, i) * scaleAt(sb, j)) * v
			}
			v = alpha * v
			if beta != 0 {
				v += beta * c[i*n+j]
			}
			out[i*n+j] = v
		}
	}
	return out, s
}

// scaleAt returns the dequantisation scale for index i: 1 for nil, the
// single value of a broadcast [1] scale, or s[i].
func scaleAt(s []float64, i int) float64 {
	switch len(s) {
	case 0:
		return 1
	case 1:
		return s[0]
	}
	return s[i]
}

func abs(x float64) float64 { return math.Abs(x) }
