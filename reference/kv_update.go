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
// rounding; an all-zero row gives scale 0 and q 0. The contract also
// accepts the code of the exact quotient v_i/scale where it differs (a
// double-rounding tie; QuantizeRowTies gives both): q is the RN32 form,
// the one every kernel that divides in fp32 computes.
func QuantizeRow(v []float64, round func(float64) float64) (q []float64, scale float64) {
	q, _, scale = QuantizeRowTies(v, round)
	return q, scale
}

// QuantizeRowTies is QuantizeRow with, beside each code q_i, the other
// code the contract accepts, alt_i. The contract takes the quotient
// v_i/scale exactly or as RN32 (a kernel dividing in fp32 gets the
// latter, one computing in float64 or with a correctly rounded divide of
// another width the former). The two round to the same code except at a
// double-rounding tie: RN32(v_i/scale) lands exactly on k+½ while the
// exact quotient lies strictly on one side of it, so the exact quotient
// rounds to its nearer integer and the RN32 one by the tie rule (half even
// or half away), possibly to the other. There alt_i is the exact
// quotient's code; everywhere else alt_i = q_i, and every other code is
// wrong (the exactness of the int8 judgement holds but for this one
// ambiguity the contract admits; docs/operators.md).
func QuantizeRowTies(v []float64, round func(float64) float64) (q, alt []float64, scale float64) {
	amax := 0.0
	for _, x := range v {
		amax = math.Max(amax, math.Abs(x))
	}
	q = make([]float64, len(v))
	alt = make([]float64, len(v))
	if amax == 0 {
		return q, alt, 0
	}
	scale = float64(float32(amax / 127))
	for i, x := range v {
		// x/scale in float64 then to fp32 is RN32 of the exact quotient:
		// double rounding through binary64 is innocuous for a quotient of
		// binary32 values (53 ≥ 2·24+2).
		t := float64(float32(x / scale))
		q[i] = math.Max(-127, math.Min(127, round(t)))
		alt[i] = q[i]
		if tie, exact := quotientTie(x, scale, t); tie && !exact {
			// The exact quotient is the nearer integer on its side of k+½.
			a := math.Abs(t) - 0.5
			if math.Abs(x) > math.Abs(t)*scale {
				a++
			}
			alt[i] = math.Max(-127, math.Min(127, math.Copysign(a, t)))
		}
	}
	return q, alt, scale
}

// QuotientTie reports whether RN32(x/scale) lands exactly on a half
// integer k+½ (a rounding tie of the int8 quantiser), and whether the
// exact quotient x/scale is that half integer too (exact); a tie that is
// not exact is a double-rounding tie. Non-finite x or scale, and scale
// 0, are never ties.
func QuotientTie(x, scale float64) (tie, exact bool) {
	if scale == 0 || math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(scale) || math.IsInf(scale, 0) {
		return false, false
	}
	return quotientTie(x, scale, float64(float32(x/scale)))
}

// quotientTie is QuotientTie for t = RN32(x/scale). |t|·scale is exact in
// float64 when t is a half integer of at most 24 significant bits and
// scale an fp32 value (at most 48 bits together), so comparing it with x
// decides on which side of t the exact quotient lies.
func quotientTie(x, scale, t float64) (tie, exact bool) {
	if math.IsInf(t, 0) || math.IsNaN(t) || t-math.Floor(t) != 0.5 {
		return false, false
	}
	return true, math.Abs(t)*scale == math.Abs(x)
}
