package reference

import "math"

// Attention is single-query attention of one head in float64: scores
// s_j = scale·(q·k_j) over the n positions of k and v (each [n][D]),
// p = softmax(s) with the maximum subtracted, out = Σ_j p_j·v_j. It also
// returns the scores, the weights and the magnitudes S_j = Σ_i |q_i·k_ji|
// the error bound is built from. n = 0 gives a zero row. Every product is
// rounded before it is added (written float64(x*y), which the compiler
// may not fuse), as the bound counts the roundings and so that the bits
// are the same on every platform.
func Attention(q []float64, k, v [][]float64, scale float64) (out, s, p, mag []float64) {
	d := len(q)
	out = make([]float64, d)
	n := len(k)
	if n == 0 {
		return out, nil, nil, nil
	}
	s, p, mag = make([]float64, n), make([]float64, n), make([]float64, n)
	m := math.Inf(-1)
	for j := range n {
		for i := range d {
			s[j] += float64(q[i] * k[j][i])
			mag[j] += math.Abs(q[i] * k[j][i])
		}
		s[j] *= scale
		mag[j] *= scale
		m = math.Max(m, s[j])
	}
	z := 0.0
	for j := range n {
		p[j] = math.Exp(s[j] - m)
		z += p[j]
	}
	for j := range n {
		p[j] /= z
		for i := range d {
			out[i] += float64(p[j] * v[j][i])
		}
	}
	return out, s, p, mag
}

// AttentionInto is Attention on flat rows (k and v hold n = len(s) rows of
// len(q) values each) into the caller's buffers out [len(q)] and s, p,
// mag [n], so a loop over many heads allocates nothing. It performs the
// same operations in the same order as Attention, so it gives the same
// bits. Its three steps are exported so that a caller can feed k and v
// in chunks of positions (in order) that stay in cache.
func AttentionInto(q, k, v []float64, scale float64, out, s, p, mag []float64) {
	clear(out)
	if len(s) == 0 {
		return
	}
	AttentionScores(q, k, scale, s, mag)
	AttentionSoftmax(s, p)
	AttentionAccum(p, v, out)
}

// AttentionScores stores Attention's scores and magnitudes of the
// len(s) rows of k (flat, len(q) each) in s and mag. It interleaves four
// positions' independent sums (each still summed in i order) so they do
// not wait on one another.
func AttentionScores(q, k []float64, scale float64, s, mag []float64) {
	d, n, j := len(q), len(s), 0
	for ; j+4 <= n; j += 4 {
		k0, k1, k2, k3 := k[j*d:j*d+d], k[(j+1)*d:(j+1)*d+d], k[(j+2)*d:(j+2)*d+d], k[(j+3)*d:(j+3)*d+d]
		var s0, s1, s2, s3, m0, m1, m2, m3 float64
		for i, qi := range q {
			x0, x1, x2, x3 := float64(qi*k0[i]), float64(qi*k1[i]), float64(qi*k2[i]), float64(qi*k3[i])
			s0, s1, s2, s3 = s0+x0, s1+x1, s2+x2, s3+x3
			m0, m1, m2, m3 = m0+math.Abs(x0), m1+math.Abs(x1), m2+math.Abs(x2), m3+math.Abs(x3)
		}
		s[j], s[j+1], s[j+2], s[j+3] = s0*scale, s1*scale, s2*scale, s3*scale
		mag[j], mag[j+1], mag[j+2], mag[j+3] = m0*scale, m1*scale, m2*scale, m3*scale
	}
	for ; j < n; j++ {
		kj := k[j*d : j*d+d]
		var sj, mj float64
		for i, qi := range q {
			sj += float64(qi * kj[i])
			mj += math.Abs(qi * kj[i])
		}
		s[j] = sj * scale
		mag[j] = mj * scale
	}
}

// AttentionSoftmax stores Attention's weights of the scores s in p.
func AttentionSoftmax(s, p []float64) {
	m := math.Inf(-1)
	for _, x := range s {
		m = Max(m, x)
	}
	z := 0.0
	for j := range s {
		p[j] = math.Exp(s[j] - m)
		z += p[j]
	}
	for j := range p {
		p[j] /= z
	}
}

// AttentionAccum adds Σ_j p_j·v_j over the len(p) rows of v (flat,
// len(out) each) to out, each element summed over j in order (four rows
// per pass).
func AttentionAccum(p, v, out []float64) {
	d, n, j := len(out), len(p), 0
	for ; j+4 <= n; j += 4 {
		v0, v1, v2, v3 := v[j*d:j*d+d], v[(j+1)*d:(j+1)*d+d], v[(j+2)*d:(j+2)*d+d], v[(j+3)*d:(j+3)*d+d]
		p0, p1, p2, p3 := p[j], p[j+1], p[j+2], p[j+3]
		for i := range out {
			x := out[i] + float64(p0*v0[i])
			x += float64(p1 * v1[i])
			x += float64(p2 * v2[i])
			out[i] = x + float64(p3*v3[i])
		}
	}
	for ; j < n; j++ {
		pj, vj := p[j], v[j*d:j*d+d]
		for i := range out {
			out[i] += float64(pj * vj[i])
		}
	}
}

// Max is math.Max (+Inf wins over NaN, NaN over any other value, +0
// over −0) in a form the compiler inlines: the two comparisons settle
// every ordered pair of unequal values, the common case in a running
// maximum.
func Max(x, y float64) float64 {
	if x > y {
		return x
	}
	if y > x {
		return y
	}
	if x == y {
		if x == 0 && math.Signbit(x) {
			return y
		}
		return x
	}
	if math.IsInf(x, 1) || math.IsInf(y, 1) {
		return math.Inf(1)
	}
	return math.NaN()
}
