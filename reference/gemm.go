package reference

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
func MatMul(m, k, n int, a, b []float64) (d, s []float64) {
	d = make([]float64, m*n)
	s = make([]float64, m*n)
	for i := 0; i < m; i++ {
		di, si := d[i*n:(i+1)*n], s[i*n:(i+1)*n]
		// i-k-j order: each d[i,j] still sums its terms with k ascending.
		for kk := 0; kk < k; kk++ {
			aik := a[i*k+kk]
			brow := b[kk*n : (kk+1)*n]
			for j, bkj := range brow {
				di[j] += aik * bkj
				si[j] += abs(aik) * abs(bkj)
			}
		}
	}
	return d, s
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

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
