package bound

import "math"

// Interval is a value of an operator's evaluation model, as seen by every
// legal implementation at once. If Finite, a finite outcome is possible
// and lies within Err of Ref, the float64 reference of the exact value
// (Err includes the error of that float64 evaluation). Alt lists the
// non-finite outcomes a legal implementation may produce.
//
// An Interval that is not Finite has only the outcomes in Alt. Its Ref
// only chooses how Store reports it: Exact and Dot.Sum keep the float64
// reference's own non-finite value (reported by its class when Alt has
// it), the operations leave 0 (reported as the first of NaN, +Inf, −Inf
// in Alt). Acceptance depends on Alt alone.
type Interval struct {
	Ref    float64
	Err    float64
	Finite bool
	Alt    Special
}

// Exact is an input value known exactly, finite or not.
func Exact(x float64) Interval {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return Interval{Ref: x, Alt: Of(x)}
	}
	return Interval{Ref: x, Finite: true}
}

// F64Err bounds the error of one float64 operation whose result is x: half
// an ulp of float64 relative (2^-53, doubled to cover library functions
// accurate to one ulp) plus the smallest float64 subnormal for underflow.
func F64Err(x float64) float64 { return float64(math.Abs(x)*0x1p-52) + 0x1p-1074 }

// mul0 is x·y with 0·Inf = 0: an exact zero times an unbounded error
// contributes nothing.
func mul0(x, y float64) float64 {
	if x == 0 || y == 0 {
		return 0
	}
	return float64(x * y)
}

// Mul is the exact product a·b (rounding to a format is a separate step,
// Format.Round). Its error is |x1|·e2 + |x2|·e1 + e1·e2 plus the float64
// reference's rounding; its classes follow IEEE over every outcome pair
// (a finite factor that may be zero times Inf may give NaN).
func Mul(a, b Interval) Interval {
	r := Interval{Finite: a.Finite && b.Finite, Alt: combine(a, b, mulKinds)}
	if r.Finite {
		r.Ref = a.Ref * b.Ref
		r.Err = mul0(math.Abs(a.Ref), b.Err) + mul0(math.Abs(b.Ref), a.Err) + mul0(a.Err, b.Err) + F64Err(r.Ref)
	}
	return r
}

// Add is the exact sum a + b (rounding is a separate step). Errors add;
// Inf − Inf and NaN give NaN.
func Add(a, b Interval) Interval {
	r := Interval{Finite: a.Finite && b.Finite, Alt: combine(a, b, addKinds)}
	if r.Finite {
		r.Ref = a.Ref + b.Ref
		r.Err = a.Err + b.Err + F64Err(r.Ref)
	}
	return r
}

// Neg is −v, exact: the infinities swap.
func Neg(v Interval) Interval {
	alt := v.Alt &^ (PosInf | NegInf)
	if v.Alt&PosInf != 0 {
		alt |= NegInf
	}
	if v.Alt&NegInf != 0 {
		alt |= PosInf
	}
	return Interval{Ref: -v.Ref, Err: v.Err, Finite: v.Finite, Alt: alt}
}

// Sub is the exact difference a − b, as Add(a, Neg(b)): attention's
// max-subtracted score s − m is one.
func Sub(a, b Interval) Interval { return Add(a, Neg(b)) }

// Div is the exact quotient a/b. When b's finite part is bounded away
// from zero (|y| > e_b, as attention's normalising sum is) the error is
// (|y|·e_a + |x|·e_b) / (|y|·(|y| − e_b)) plus the float64 reference's
// rounding, rounded up. When it may be zero the finite part is unbounded
// (Err = +Inf) and x/0 = ±Inf, 0/0 = NaN join the classes. Inf/Inf = NaN;
// finite/±Inf = 0 is a finite outcome, so the finite part then also holds 0.
func Div(a, b Interval) Interval {
	r := Interval{Alt: combine(a, b, divKinds)}
	bInf := b.Alt&(PosInf|NegInf) != 0
	switch {
	case a.Finite && b.Finite && (b.Ref != 0 || b.Err != 0):
		r.Finite = true
		x, y := a.Ref, b.Ref
		if math.Abs(y) <= b.Err {
			r.Ref, r.Err = 0, math.Inf(1) // any centre will do
			if q := x / y; y != 0 && !math.IsInf(q, 0) {
				r.Ref = q
			}
			return r
		}
		r.Ref = x / y
		num := mul0(math.Abs(y), a.Err) + mul0(math.Abs(x), b.Err)
		den := math.Abs(y) * (math.Abs(y) - b.Err)
		r.Err = float64(num/den*(1+0x1p-48)) + F64Err(r.Ref)
		if bInf {
			r.Err = math.Max(r.Err, math.Abs(r.Ref))
		}
	case a.Finite && bInf:
		r.Finite = true // only finite/±Inf = 0 is finite (a zero b gives none)
	}
	return r
}

// Exp is e^v evaluated by an implementation whose exp has relative error
// at most rel (its rounding into a format is a separate Format.Round).
// The finite part is [e^(x−e), e^(x+e)] around the reference e^x:
// Err = e^x·expm1(e) + rel·e^(x+e) plus the float64 exp's own error,
// rounded up. Meant for attention's max-subtracted scores (x ≤ 0, so no
// overflow), it is rigorous for any argument: an e^x beyond float64
// drops the finite outcome for +Inf. exp(+Inf) = +Inf, exp(−Inf) = 0 (a
// finite outcome), exp(NaN) = NaN.
func Exp(v Interval, rel float64) Interval {
	r := Interval{Alt: v.Alt &^ NegInf}
	if v.Finite {
		x := math.Exp(v.Ref)
		if math.IsInf(x, 1) {
			r.Ref, r.Alt = x, r.Alt|PosInf
		} else {
			r.Finite, r.Ref = true, x
			r.Err = float64(mul0(x, expm1(v.Err))*(1+0x1p-48)) + 2*F64Err(x)
			if rel != 0 {
				r.Err += float64(rel * (x + r.Err) * (1 + 0x1p-48))
			}
		}
	}
	if v.Alt&NegInf != 0 { // e^−Inf = 0: a finite outcome
		if r.Finite {
			r.Err = math.Max(r.Err, r.Ref) // the interval must hold 0
		} else {
			r.Finite, r.Ref, r.Err = true, 0, 0
		}
	}
	return r
}

// Overflow applies a format's overflow threshold thr (MaxFinite +
// ulp(MaxFinite)/2) to the finite part: ±Inf join the classes when Ref ±
// Err can reach ±thr, and the finite outcome is dropped when the whole
// interval is at or beyond it (or the float64 reference itself
// overflowed).
func (v Interval) Overflow(thr float64) Interval {
	if !v.Finite {
		return v
	}
	if math.IsInf(v.Ref, 0) { // the float64 reference itself overflowed
		v.Finite, v.Alt = false, v.Alt|Of(v.Ref)
		return v
	}
	if v.Ref+v.Err >= thr {
		v.Alt |= PosInf
	}
	if v.Ref-v.Err <= -thr {
		v.Alt |= NegInf
	}
	if v.Ref-v.Err >= thr || v.Ref+v.Err <= -thr {
		v.Finite = false
	}
	return v
}
