package reference

import "math"

// Attention is single-query attention of one head in float64: scores
// s_j = scale·(q·k_j) over the n positions of k and v (each [n][D]),
// p = softmax(s) with the maximum subtracted, out = Σ_j p_j·v_j. It also
// returns the scores, the weights and the magnitudes S_j = Σ_i |q_i·k_ji|
// the error bound is built from. n = 0 gives a zero row.
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
			s[j] += q[i] * k[j][i]
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
			out[i] += p[j] * v[j][i]
		}
	}
	return out, s, p, mag
}

// AttentionInto is Attention on flat rows (k and v hold n = len(s) rows of
// len(q) values each) into the caller's buffers out [len(q)] and s, p,
// mag [n], so a loop over many heads allocates nothing. It performs the
// same operations in the same order as Attention: the same bits.
func AttentionInto(q, k, v []float64, scale float64, out, s, p, mag []float64) {
	d := len(q)
	clear(out)
	n := len(s)
	if n == 0 {
		return
	}
	m := math.Inf(-1)
	for j := range n {
		kj := k[j*d : j*d+d]
		var sj, mj float64
		for i, qi := range q {
			sj += qi * kj[i]
			mj += math.Abs(qi * kj[i])
		}
		s[j] = sj * scale
		mag[j] = mj * scale
		m = math.Max(m, s[j])
	}
	z := 0.0
	for j := range n {
		p[j] = math.Exp(s[j] - m)
		z += p[j]
	}
	for j := range n {
		p[j] /= z
		pj, vj := p[j], v[j*d:j*d+d]
		for i := range out {
			out[i] += pj * vj[i]
		}
	}
}
