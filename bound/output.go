package bound

import (
	"math"

	"github.com/npuverify/npuverify/tensor"
)

// Output maps the float64 reference r of a value an implementation stores
// into dtype d, together with a bound b on how far any legal
// implementation's value before that final store may be from r, to the
// element's expected outcome under the numerics profile num.
//
// For a floating d:
//   - a finite r whose whole interval r ± b stays below the overflow
//     threshold T = MaxFinite + ulp(MaxFinite)/2 gives Bound = b +
//     ulp(|r|+b)/2: the value before the store lies in r ± b and one
//     round-to-nearest moves it by at most half the spacing there (ulp is
//     non-decreasing in magnitude; in the subnormal range the spacing is the
//     smallest subnormal). This is never looser than the textbook
//     b + u·(|r|+b) + η/2, and for b = 0 it is the half-ulp that a correctly
//     rounded operation meets, so a result one ulp off is rejected. Under
//     SubnormalFlush, an interval reaching below MinNormal is given
//     b + max(MinNormal, ulp(|r|+b)/2): a value that flushes moves by less
//     than MinNormal, any other by at most half its spacing;
//   - an interval entirely at or beyond T overflows in every legal
//     implementation: Ref ±Inf (or ±MaxFinite with Bound 0 under
//     saturation);
//   - an interval straddling T is overflow-ambiguous: the finite bound
//     above holds, and ±Inf is also accepted (under saturation the clamped
//     value ±MaxFinite is within that bound, so nothing extra is needed);
//   - NaN and ±Inf references map to themselves, or to 0 and ±MaxFinite
//     under saturation.
//
// For an integer d, an exact reference (b == 0) is rounded and saturated
// exactly as the profile stores it, with Bound 0; otherwise Ref is r
// clamped to the range and Bound = b + 1/2.
func Output(r, b float64, d tensor.DType, num tensor.Numerics) (ref, bnd float64, alt Special) {
	f, isFloat := d.FloatFormat()
	sat := num.Overflow == tensor.OverflowSaturate
	if !isFloat {
		if b == 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return num.Round(r, d), 0, 0
		}
		lo, hi := d.IntRange()
		return math.Max(lo, math.Min(hi, r)), b + 0.5, 0
	}
	if math.IsNaN(r) {
		if sat {
			return 0, 0, 0
		}
		return r, math.NaN(), NaN
	}
	if d == tensor.Float64 {
		if math.IsInf(r, 0) {
			return r, math.NaN(), Of(r)
		}
		return r, b, 0
	}
	inf := math.Copysign(math.Inf(1), r)
	thr := f.MaxFinite() + float64(f.Ulp(f.MaxFinite())/2)
	if math.IsInf(r, 0) || math.Abs(r)-b >= thr {
		if sat {
			return math.Copysign(f.MaxFinite(), r), 0, 0
		}
		return inf, math.NaN(), Of(inf)
	}
	bnd = b + float64(f.Ulp(math.Abs(r)+b)/2)
	if num.Subnormals == tensor.SubnormalFlush && math.Abs(r)-b < f.MinNormal() {
		bnd = b + math.Max(f.MinNormal(), f.Ulp(math.Abs(r)+b)/2)
	}
	if math.Abs(r)+b >= thr && !sat {
		alt = Of(inf)
	}
	return r, bnd, alt
}

// Store maps the final interval v of an element through the store into
// dtype d under num, to that element's expected outcome (one entry of an
// Expected).
//
// A finite part goes through Output (the store's rounding, underflow and
// overflow); v's non-finite classes join the alternatives. With only
// non-finite outcomes, the reference is v.Ref's class if v can take it,
// else the first of NaN, +Inf, −Inf that it can.
//
// Under overflow=saturate (and for integer d, which always saturates) the
// store maps ±Inf to the format's extremes and NaN to 0: those outcomes
// are finite, so they are folded into the bound around the reference (the
// smallest symmetric interval holding them), since Expected has no other
// way to hold a second finite outcome.
func Store(v Interval, d tensor.DType, num tensor.Numerics) (ref, bnd float64, alt Special) {
	_, isFloat := d.FloatFormat()
	sat := num.Overflow == tensor.OverflowSaturate || !isFloat
	satPoint := func(c Special) float64 {
		switch c {
		case PosInf:
			return num.Round(math.Inf(1), d)
		case NegInf:
			return num.Round(math.Inf(-1), d)
		}
		return 0 // NaN
	}
	classes := []Special{NaN, PosInf, NegInf}
	fold := func(ref, bnd float64) float64 {
		for _, c := range classes {
			if v.Alt&c != 0 {
				bnd = math.Max(bnd, math.Abs(satPoint(c)-ref))
			}
		}
		return bnd
	}
	if v.Finite {
		ref, bnd, alt = Output(v.Ref, v.Err, d, num)
		if !sat {
			return ref, bnd, alt | v.Alt
		}
		return ref, fold(ref, bnd), alt
	}
	// Only non-finite outcomes: represent by the reference's own class
	// when it is among them, else by the first possible one.
	rep := Of(v.Ref)
	if v.Alt&rep == 0 {
		for _, c := range classes {
			if v.Alt&c != 0 {
				rep = c
				break
			}
		}
	}
	if !sat {
		switch rep {
		case PosInf:
			ref = math.Inf(1)
		case NegInf:
			ref = math.Inf(-1)
		default:
			ref = math.NaN()
		}
		return ref, math.NaN(), v.Alt
	}
	ref = satPoint(rep)
	return ref, fold(ref, 0), 0
}
