package reference

import (
	"math"

	"github.com/npuverify/npuverify/internal/dgemm"
	"github.com/npuverify/npuverify/tensor"

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
// rounded to float64 and then added (matMulLoop). Three paths compute
// exactly those bits (TestMatMulPathsAgree):
//   - inputs that are all fp32 values (so every product is exact in
//     float64, Inf and NaN included) take dgemm.MulAbs, the packed,
//     parallel AVX2 kernel that computes d and s together; its fused
//     multiply-add rounds once where the loop rounds the exact product
//     and then the sum, which is the same rounding;
//   - other finite inputs take gonum's blocked, parallel Dgemm (twice: on
//     a, b for d and on |a|, |b| for s), which walks each block of C along
//     k in order and adds a[i,k]·b[k,j] by an unfused axpy. Dgemm skips a
//     zero a[i,k]; with b finite that product is ±0, and adding ±0 to an
//     accumulator that started at +0 and was never −0 (a rounded sum is
//     −0 only when both addends are) changes nothing;
//     (On amd64, where that axpy is gonum's assembly; elsewhere it is Go
//     code the compiler may fuse, so those inputs take the loop:
//     gonumUnfused.)
//   - the rest (non-fp32 values with an Inf or NaN, where 0·Inf = NaN
//     must not be skipped) take the plain loop.
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
	a, b = a[:m*k], b[:k*n]
	switch {
	case allFP32(a) && allFP32(b):
		dgemm.MulAbs(m, k, n, dgemm.Slice(a), dgemm.Slice(b), d, s)
	case gonumUnfused && allFinite(a) && allFinite(b):
		clear(d)
		clear(s)
		if m == 0 || n == 0 || k == 0 {
			return
		}
		gonumDgemm(m, k, n, a, b, d)
		gonumDgemm(m, k, n, absCopy(a), absCopy(b), s)
	default:
		clear(d)
		clear(s)
		matMulLoop(m, k, n, a, b, d, s)
	}
}

// MatMulTensors is MatMulInto on the values of a [m,k] and b [k,n]. For
// the dtypes whose products are exact in float64 (fp32, fp16, bf16, int8,
// uint8) it packs straight from the tensors, without float64 copies of
// them: a 1024³ fp16 case then holds 4 MiB of inputs, not 20.
func MatMulTensors(a, b *tensor.Tensor, d, s []float64) {
	MatMulTensorRows(a, b, 0, a.Shape[0], d, s)
}

// MatMulTensorRows is MatMulTensors for rows [r0, r1) of a alone, into d
// and s of (r1−r0)·n elements: the same bits as those rows of
// MatMulTensors', since an element's sum reads only its own row and
// column. It lets a caller compute a large product a block of rows at a
// time.
func MatMulTensorRows(a, b *tensor.Tensor, r0, r1 int, d, s []float64) {
	k, n := a.Shape[1], b.Shape[1]
	rows := a.Window(r0*k, (r1-r0)*k)
	if exactProductDType(a.DType) && exactProductDType(b.DType) {
		dgemm.MulAbs(r1-r0, k, n, rows, b, d, s)
		return
	}
	MatMulInto(r1-r0, k, n, rows.Float64s(), b.Float64s(), d, s)
}

// MulTensors is MatMulTensors' d alone (the same bits), for callers that
// bound the magnitudes some other way.
func MulTensors(a, b *tensor.Tensor, d []float64) {
	MulTensorRows(a, b, 0, a.Shape[0], d)
}

// MulTensorRows is MatMulTensorRows' d alone (the same bits).
func MulTensorRows(a, b *tensor.Tensor, r0, r1 int, d []float64) {
	k, n := a.Shape[1], b.Shape[1]
	rows := a.Window(r0*k, (r1-r0)*k)
	if exactProductDType(a.DType) && exactProductDType(b.DType) {
		dgemm.Mul(r1-r0, k, n, rows, b, d)
		return
	}
	MatMulInto(r1-r0, k, n, rows.Float64s(), b.Float64s(), d, make([]float64, (r1-r0)*n))
}

// exactProductDType reports whether every value of d has at most 24
// significant bits within fp32's exponent range, so that the product of
// two such values is exact in float64.
func exactProductDType(d tensor.DType) bool {
	switch d {
	case tensor.Float32, tensor.Float16, tensor.BFloat16, tensor.Int8, tensor.Uint8:
		return true
	}
	return false
}

// gonumDgemm sets c = a·b with gonum's Dgemm (alpha 1, beta 0: c starts at +0).
func gonumDgemm(m, k, n int, a, b, c []float64) {
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
				// The conversions round each product on its own: no
				// fused multiply-add, whatever the architecture.
				di[j] += float64(aik * bkj)
				si[j] += float64(math.Abs(aik) * math.Abs(bkj))
			}
		}
	}
}

// allFP32 reports whether every value of x is an fp32 value (Inf and NaN
// included), so that products of them are exact in float64.
func allFP32(x []float64) bool {
	for _, v := range x {
		if float64(float32(v)) != v && v == v {
			return false
		}
	}
	return true
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
			// Each product rounds on its own (converted, so the
			// compiler may not fuse alpha·v + beta·c): the same bits on
			// every platform.
			v = float64(alpha * v)
			if beta != 0 {
				v += float64(beta * c[i*n+j])
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
