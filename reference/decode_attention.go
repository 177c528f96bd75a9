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
