package verify

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// ---- ascend-dual ----

// The ascend-dual factors: the kernel's MERE and RMSE may be at most
// DualMeanFactor times, and its MARE DualMaxFactor times, those of the
// trusted implementation on the same inputs.
const (
	DualMeanFactor = 2
	DualMaxFactor  = 10
)

// dualPolicy is the dual benchmark: on top of the bound, the kernel's
// error metrics against the reference may not exceed a small multiple of
// those of a trusted second implementation (the emulator, whose outputs
// are the golden expected bits, Input.Golden) on the same inputs. It
// catches systematic precision loss that stays inside worst-case bounds.
//
// A limit is factor × max(trusted metric, floor). The floor keeps a
// perfect trusted result (zero error: every reference representable and
// hit) from demanding perfection. It is derived from what must still
// pass against such a result: a correctly rounded one, each element
// within u·|r| of the reference (u the unit roundoff of the output dtype),
// whose MERE and MARE are then at most u and RMSE at most u·rms(Ref). With
// the factor 2 that needs floors of u/2 for MERE and u/2·rms(Ref) for
// RMSE; MARE takes the same u/2 (limit 5u). The floor is no larger, so
// where the trusted result is itself only correctly rounded (MERE about
// 0.36u on random data) the factor 2 applies to it nearly unchanged. No
// term for the metric of a correctly rounded result is needed: the
// correctly rounded value is the nearest value of the dtype to the
// reference, so its error at every element is at most the trusted
// result's, and so are its metrics.
type dualPolicy struct{}

func (dualPolicy) Name() string             { return "ascend-dual" }
func (dualPolicy) needsWant() bool          { return true }
func (p dualPolicy) Judge(in Input) Verdict { return run(p, in, nil) }

// dualLimits are the three limits of ascend-dual and what set them.
type dualLimits struct {
	mere, rmse, mare float64
	trusted          Metrics
}

func (dualPolicy) judge(in Input, m *Metrics) Verdict {
	bv := boundPolicy{}.judge(in, m)
	d := in.Got.DType
	tr := in.Golden
	switch {
	case tr == nil:
		return Verdict{Reason: "no trusted outputs for this output: ascend-dual compares the kernel's MERE, RMSE and MARE with those of the emulator on the same inputs, whose outputs are the golden store's expected bits (check a golden case)"}
	case tr.DType != d:
		return Verdict{Reason: fmt.Sprintf("trusted output (golden) has dtype %s, the output %s", tr.DType, d)}
	case !tr.SameShape(in.Got.Shape):
		return Verdict{Reason: fmt.Sprintf("trusted output (golden) has shape %v, the output %v", tr.Shape, in.Got.Shape)}
	}
	if !d.IsFloat() {
		v := judgeIntegers(in, m)
		if !bv.Pass {
			v.Pass, v.Reason, v.Failures = false, "bound: "+bv.Reason+"; "+v.Reason, bv.Failures
		}
		return v
	}
	lim := dualLimitsOf(in, d)
	t := lim.trusted
	mereOK, rmseOK, mareOK := m.MERE <= lim.mere, m.RMSE <= lim.rmse, m.MARE <= lim.mare
	v := Verdict{Pass: bv.Pass && mereOK && rmseOK && mareOK}
	cmp := fmt.Sprintf("MERE %.4g (emulator %.4g, limit %.4g), RMSE %.4g (emulator %.4g, limit %.4g), MARE %.4g (emulator %.4g, limit %.4g)",
		m.MERE, t.MERE, lim.mere, m.RMSE, t.RMSE, lim.rmse, m.MARE, t.MARE, lim.mare)
	var broken string
	for _, c := range []struct {
		ok   bool
		name string
	}{{mereOK, "MERE"}, {rmseOK, "RMSE"}, {mareOK, "MARE"}} {
		if !c.ok {
			if broken != "" {
				broken += ", "
			}
			broken += c.name
		}
	}
	switch {
	case !bv.Pass:
		v.Reason = "bound: " + bv.Reason + "; " + cmp
		v.Failures = bv.Failures
	case broken != "":
		v.Reason = broken + " above the dual limit: " + cmp
		v.Failures = dualFailures(in, m, lim, mareOK)
	default:
		v.Reason = cmp + "; " + bv.Reason
	}
	return v
}

// dualLimitsOf computes the limits of ascend-dual for in (floating d).
func dualLimitsOf(in Input, d tensor.DType) dualLimits {
	t := Compute(in.Golden, in.Want)
	f, _ := d.FloatFormat()
	floor := f.UnitRoundoffValue() / 2
	// rms of the finite references, scaled so the squares cannot overflow.
	var scale, sumSq float64
	finite := 0
	eachRef(in.Want, func(r float64) {
		if !math.IsNaN(r) && !math.IsInf(r, 0) {
			finite++
			scale = math.Max(scale, math.Abs(r))
		}
	})
	rms := 0.0
	if scale > 0 {
		eachRef(in.Want, func(r float64) {
			if !math.IsNaN(r) && !math.IsInf(r, 0) {
				sumSq += float64((r / scale) * (r / scale))
			}
		})
		rms = scale * math.Sqrt(sumSq/float64(finite))
	}
	return dualLimits{
		mere:    DualMeanFactor * max(t.MERE, floor),
		rmse:    DualMeanFactor * max(t.RMSE, floor*rms),
		mare:    DualMaxFactor * max(t.MARE, floor),
		trusted: t,
	}
}

// dualFailures lists the elements that drive a broken limit: with MARE
// broken, those whose relative error e/(|r| + 1e-7) exceeds the MARE
// limit; otherwise (MERE or RMSE) the worst elements whose relative error
// exceeds the MERE limit. Element bound: that limit × (|r| + 1e-7).
func dualFailures(in Input, m *Metrics, lim dualLimits, mareOK bool) []Element {
	th := lim.mere
	if !mareOK {
		th = lim.mare
	}
	fails := newRanked(WorstCount)
	scanElements(in, m, fails, func(x elem) {
		den := math.Abs(x.r) + mereGuard
		e := math.Abs(x.g - x.r)
		if mr := e / den; mr > th {
			el := x.element(th * den)
			el.Note = fmt.Sprintf("rel %.3g", mr)
			fails.add(el, mr, e)
		}
	})
	return fails.elements()
}

// eachRef calls fn on every reference of w in index order (Expected.Refs,
// a block at a time, so that a compact Expected is read as cheaply).
func eachRef(w *bound.Expected, fn func(r float64)) {
	n := w.Len()
	buf := make([]float64, min(block, n))
	for b0 := 0; b0 < n; b0 += block {
		for _, r := range w.Refs(b0, buf[:min(block, n-b0)]) {
			fn(r)
		}
	}
}

var _ judger = dualPolicy{}
