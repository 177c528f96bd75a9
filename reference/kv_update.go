package reference

import "math"

// Project returns, for every b and head h, the row vector x[b,h,:]·w[h]
// (x [B,H,D], w [H,D,D], row-major) in float64, and beside each output
// element the sum of the magnitudes of its products, S = Σ_i |x_i·w_ij|,
// which the error bound scales with. Non-finite products propagate as
// IEEE float64 arithmetic does.
func Project(x, w []float64, b, h, d int) (out, mag []float64) {
	out = make([]float64, b*h*d)
	mag = make([]float64, b*h*d)
	for bb := range b {
		for hh := range h {
			xr := x[(bb*h+hh)*d:][:d]
			wm := w[hh*d*d:][:d*d]
			o := out[(bb*h+hh)*d:][:d]
			m := mag[(bb*h+hh)*d:][:d]
			for i, xi := range xr {
				for j := range d {
					p := float64(xi * wm[i*d+j]) // converted: rounded before the sum, never fused
					o[j] += p
					m[j] += math.Abs(p)
				}
			}
		}
	}
	return out, mag
}

// QuantizeRow quantises one fp16 row v symmetrically to int8 the way the
// kv_update contract fixes it: scale = RN32(max|v|/127); q_i =
// clamp(round(RN32(v_i/scale)), ±127) with round the given integer
// rounding; an all-zero row gives scale 0 and q 0.
func QuantizeRow(v []float64, round func(float64) float64) (q []float64, scale float64) {
	amax := 0.0
	for _, x := range v {
		amax = math.Max(amax, math.Abs(x))
	}
	q = make([]float64, len(v))
	if amax == 0 {
		return q, 0
	}
	scale = float64(float32(amax / 127))
	for i, x := range v {
		q[i] = math.Max(-127, math.Min(127, round(float64(float32(x/scale)))))
	}
	return q, scale
}
