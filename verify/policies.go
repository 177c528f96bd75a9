package verify

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// elem is one element as the value policies see it: index, got, and the
// expected reference, bound and alternatives.
type elem struct {
	i       int
	g, r, b float64
	alt     bound.Special
}

// element builds the Element for x with the given bound.
func (x elem) element(b float64) Element {
	return Element{Index: x.i, Got: x.g, Ref: x.r, Bound: b, Alt: x.alt}
}

// mismatchElement builds the Element for a non-finite class mismatch.
func (x elem) mismatchElement() Element {
	e := x.element(x.b)
	e.Note = mismatchNote(x.alt, x.r, x.g)
	return e
}

// mismatchText renders ", M non-finite class mismatches" or "".
func mismatchText(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; 1 non-finite class mismatch"
	}
	return fmt.Sprintf("; %d non-finite class mismatches", n)
}

// notRoundedText renders "; K exact elements not correctly rounded" or "".
func notRoundedText(n int) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "; 1 exact element not correctly rounded"
	}
	return fmt.Sprintf("; %d exact elements not correctly rounded", n)
}

// firstBadText renders where the rejected elements start, or "" when
// none is.
func firstBadText(m *Metrics) string {
	if m.FirstBad < 0 {
		return ""
	}
	return fmt.Sprintf("; first wrong element at index %d", m.FirstBad)
}

// ambiguousText renders the overflow-ambiguous count, or "".
func ambiguousText(m *Metrics) string {
	if m.Ambiguous == 0 {
		return ""
	}
	return fmt.Sprintf("; %d overflow-ambiguous, %d took the non-finite outcome", m.Ambiguous, m.AmbiguousTaken)
}

// scanElements visits every element of in once, in index order, a block
// at a time: a non-finite class mismatch is counted and ranked first in
// fails, an accepted non-finite outcome is counted, and every finite pair
// goes to finite (x.g and x.r finite). It is the loop every value policy
// shares.
func scanElements(in Input, m *Metrics, fails *ranked, finite func(x elem)) (mis, nonFinite int) {
	gb := make([]float64, min(block, m.N))
	var v bound.View
	for b0 := 0; b0 < m.N; b0 += block {
		gv := gb[:min(block, m.N-b0)]
		in.Got.Float64sFrom(b0, gv)
		in.Want.Load(&v, b0, len(gv))
		for j, g := range gv {
			x := elem{i: b0 + j, g: g, r: v.Ref[j], b: v.Bound[j], alt: v.Alt[j]}
			switch classify(x.alt, x.r, g) {
			case classMismatch:
				mis++
				fails.add(x.mismatchElement(), math.Inf(1), math.Inf(1))
			case classNonFinite:
				nonFinite++
			case classFinite:
				finite(x)
			}
		}
	}
	return mis, nonFinite
}

// scanLimits judges every element of in against a per-element limit on
// |got − want|: limit(r, e) is the limit for reference r (e is the
// element's error, for limits that also track statistics). A non-finite
// class mismatch counts in mis, a finite element past its limit in far;
// the worst of both are returned, mismatches first, then by how far past
// the limit. note, if set, annotates each failing element.
func scanLimits(in Input, m *Metrics, limit func(r, e float64) float64, note func(r, e float64) string) (far, mis int, worst []Element) {
	fails := newRanked(WorstCount)
	mis, _ = scanElements(in, m, fails, func(x elem) {
		e := math.Abs(x.g - x.r)
		if lim := limit(x.r, e); !(e <= lim) {
			far++
			el := x.element(lim)
			if note != nil {
				el.Note = note(x.r, e)
			}
			fails.add(el, ratio(e, lim), e)
		}
	})
	return far, mis, fails.elements()
}

// ---- bound ----

type boundPolicy struct{}

func (boundPolicy) Name() string             { return "bound" }
func (boundPolicy) needsWant() bool          { return true }
func (p boundPolicy) Judge(in Input) Verdict { return run(p, in, nil) }
func (boundPolicy) metricsOnly()             {}

func (boundPolicy) judge(in Input, m *Metrics) Verdict {
	// Metrics.Worst ranks class mismatches (key +Inf) and then e/b: every
	// rejected element ranks above every accepted one, so the rejected
	// prefix of Worst is the worst WorstCount rejected elements.
	var fails []Element
	for _, e := range m.Worst {
		if e.Note != "" || !(math.Abs(e.Got-e.Ref) <= e.Bound) { // a note marks a class mismatch or a not-rounded element
			fails = append(fails, e)
		}
	}
	bad := m.OutOfBound + m.NonFiniteMismatch + m.NotRounded
	v := Verdict{Pass: bad == 0, Failures: fails}
	if v.Pass {
		v.Reason = fmt.Sprintf("all %d elements within bound (tightness %.3g)%s", m.N, m.Tightness, ambiguousText(m))
	} else {
		v.Reason = fmt.Sprintf("%d of %d elements out of bound (tightness %.3g)%s%s%s%s",
			m.OutOfBound, m.N, m.Tightness, mismatchText(m.NonFiniteMismatch), notRoundedText(m.NotRounded), ambiguousText(m), firstBadText(m))
	}
	return v
}

// ---- exact ----

type exactPolicy struct{}

func (exactPolicy) Name() string             { return "exact" }
func (exactPolicy) needsWant() bool          { return false }
func (p exactPolicy) Judge(in Input) Verdict { return run(p, in, nil) }

func (exactPolicy) judge(in Input, _ *Metrics) Verdict {
	got, gold := in.Got, in.Golden
	switch {
	case gold == nil:
		return Verdict{Reason: "no golden tensor (expected bits) for this output; exact needs one"}
	case got.DType != gold.DType:
		return Verdict{Reason: fmt.Sprintf("dtype %s, golden has %s", got.DType, gold.DType)}
	case !got.SameShape(gold.Shape):
		return Verdict{Reason: fmt.Sprintf("shape %v, golden has %v", got.Shape, gold.Shape)}
	}
	fails, diff := BitDiff(got, gold, WorstCount)
	if diff == 0 {
		return Verdict{Pass: true, Reason: fmt.Sprintf("all %d elements bit-identical to golden", got.Len())}
	}
	return Verdict{
		Reason:   fmt.Sprintf("%d of %d elements differ bitwise from golden (first at [%d])", diff, got.Len(), fails[0].Index),
		Failures: fails,
	}
}

// BitDiff compares got and golden (same dtype and shape) bit for bit and
// returns the first max differing elements by index, Ref holding the
// golden value, Bound 0 and Note the two bit patterns, plus the total
// number of differing elements.
func BitDiff(got, golden *tensor.Tensor, max int) ([]Element, int) {
	if same, _ := tensor.BitsEqual(got, golden); same {
		return nil, 0 // the common case, compared at memory speed
	}
	var out []Element
	diff := 0
	digits := 2 * got.DType.Size()
	for i, n := 0, min(got.Len(), golden.Len()); i < n; i++ {
		gb, wb := got.Bits(i), golden.Bits(i)
		if gb == wb {
			continue
		}
		diff++
		if len(out) < max {
			out = append(out, Element{
				Index: i, Got: got.Float64(i), Ref: golden.Float64(i),
				Note: fmt.Sprintf("bits 0x%0*x, golden 0x%0*x", digits, gb, digits, wb),
			})
		}
	}
	return out, diff
}

// ---- allclose ----

type allclosePolicy struct {
	rtol, atol       float64
	hasRtol, hasAtol bool
}

// allcloseDefaults are the torch.testing.assert_close defaults per dtype;
// integer dtypes compare exactly.
func allcloseDefaults(d tensor.DType) (rtol, atol float64) {
	switch d {
	case tensor.Float16:
		return 1e-3, 1e-5
	case tensor.BFloat16:
		return 1.6e-2, 1e-5
	case tensor.Float32:
		return 1.3e-6, 1e-5
	case tensor.Float64:
		return 1e-7, 1e-7
	}
	return 0, 0
}

func (p allclosePolicy) Name() string {
	var kv []string
	if p.hasRtol {
		kv = append(kv, "rtol", num(p.rtol))
	}
	if p.hasAtol {
		kv = append(kv, "atol", num(p.atol))
	}
	return optionsName("allclose", kv...)
}
func (allclosePolicy) needsWant() bool          { return true }
func (p allclosePolicy) Judge(in Input) Verdict { return run(p, in, nil) }

func (p allclosePolicy) tols(d tensor.DType) (rtol, atol float64) {
	rtol, atol = allcloseDefaults(d)
	if p.hasRtol {
		rtol = p.rtol
	}
	if p.hasAtol {
		atol = p.atol
	}
	return rtol, atol
}

func (p allclosePolicy) judge(in Input, m *Metrics) Verdict {
	rtol, atol := p.tols(in.Got.DType)
	far, mis, worst := scanLimits(in, m, func(r, _ float64) float64 { return atol + float64(rtol*math.Abs(r)) }, nil)
	v := Verdict{Pass: far == 0 && mis == 0, Failures: worst}
	rule := fmt.Sprintf("|got−want| ≤ atol + rtol·|want| (rtol=%s, atol=%s)", num(rtol), num(atol))
	if v.Pass {
		v.Reason = fmt.Sprintf("all %d elements close: %s; max abs err %.3g", m.N, rule, m.MaxAbs)
	} else {
		v.Reason = fmt.Sprintf("%d of %d elements not close: want %s; max abs err %.3g%s", far, m.N, rule, m.MaxAbs, mismatchText(mis))
	}
	return v
}

// ---- ulp ----

type ulpPolicy struct{ n float64 }

func (p ulpPolicy) Name() string           { return optionsName("ulp", "n", num(p.n)) }
func (ulpPolicy) needsWant() bool          { return true }
func (p ulpPolicy) Judge(in Input) Verdict { return run(p, in, nil) }

func (p ulpPolicy) judge(in Input, m *Metrics) Verdict {
	d := in.Got.DType
	maxU := 0.0
	far, mis, worst := scanLimits(in, m,
		func(r, e float64) float64 {
			q := ulpOf(d, r)
			maxU = math.Max(maxU, e/q)
			return p.n * q
		},
		func(r, e float64) string { return fmt.Sprintf("%.3g ulp", e/ulpOf(d, r)) })
	v := Verdict{Pass: far == 0 && mis == 0, Failures: worst}
	if v.Pass {
		v.Reason = fmt.Sprintf("all %d elements within %s ulp (%s) of want; max %.3g ulp", m.N, num(p.n), d, maxU)
	} else {
		v.Reason = fmt.Sprintf("%d of %d elements more than %s ulp (%s) from want; max %.3g ulp%s", far, m.N, num(p.n), d, maxU, mismatchText(mis))
	}
	return v
}

// ---- exact values on integer outputs (the Ascend standards) ----

// judgeIntegers is what the Ascend policies apply to integer outputs
// (indices, masks, counters, int8 caches): every value equal to Ref.
func judgeIntegers(in Input, m *Metrics) Verdict {
	far, mis, worst := scanLimits(in, m, func(_, _ float64) float64 { return 0 }, nil)
	v := Verdict{Pass: far == 0 && mis == 0, Failures: worst}
	if v.Pass {
		v.Reason = fmt.Sprintf("%s output: all %d elements equal want", in.Got.DType, m.N)
	} else {
		v.Reason = fmt.Sprintf("%s output: %d of %d elements differ from want (integers must match exactly)%s", in.Got.DType, far, m.N, mismatchText(mis))
	}
	return v
}

// ---- ascend-thousandth ----

type thousandthPolicy struct{ n float64 }

// thousandthThreshold is 1e-3 for fp16/bf16 and 1e-4 for fp32 (and fp64).
func thousandthThreshold(d tensor.DType) float64 {
	if d == tensor.Float16 || d == tensor.BFloat16 {
		return 1e-3
	}
	return 1e-4
}

func (p thousandthPolicy) Name() string           { return optionsName("ascend-thousandth", "n", num(p.n)) }
func (thousandthPolicy) needsWant() bool          { return true }
func (p thousandthPolicy) Judge(in Input) Verdict { return run(p, in, nil) }

func (p thousandthPolicy) judge(in Input, m *Metrics) Verdict {
	if !in.Got.DType.IsFloat() {
		return judgeIntegers(in, m)
	}
	th := thousandthThreshold(in.Got.DType)
	limit := p.n * th * float64(m.N)
	fails := newRanked(WorstCount)
	nRel, nAbs := 0, 0
	mis, _ := scanElements(in, m, fails, func(x elem) {
		r := x.r
		e, rel := math.Abs(x.g-r), relErr(x.g, r)
		failRel, failAbs := rel > th, e > th
		if failRel {
			nRel++
		}
		if failAbs {
			nAbs++
		}
		if failRel || failAbs {
			fails.add(x.element(th*math.Max(math.Abs(r), 1)), math.Min(rel, e)/th, e)
		}
	})
	v := Verdict{Pass: mis == 0 && !(float64(nRel) > limit && float64(nAbs) > limit), Failures: fails.elements()}
	counts := fmt.Sprintf("rel err > %s at %d and abs err > %s at %d of %d elements (limit n·threshold·N = %.4g each)",
		num(th), nRel, num(th), nAbs, m.N, limit)
	switch {
	case v.Pass:
		v.Reason = counts
	case mis > 0 && !(float64(nRel) > limit && float64(nAbs) > limit):
		v.Reason = counts + mismatchText(mis)
	default:
		v.Reason = "both counts above the limit: " + counts + mismatchText(mis)
	}
	return v
}

// ---- ascend-mere ----

type merePolicy struct{}

// mereThreshold is Th: fp16 2^-10, bf16 2^-7, fp32 (and fp64) 2^-13.
func mereThreshold(d tensor.DType) float64 {
	switch d {
	case tensor.Float16:
		return math.Ldexp(1, -10)
	case tensor.BFloat16:
		return math.Ldexp(1, -7)
	}
	return math.Ldexp(1, -13)
}

func (merePolicy) Name() string             { return "ascend-mere" }
func (merePolicy) needsWant() bool          { return true }
func (p merePolicy) Judge(in Input) Verdict { return run(p, in, nil) }

func (merePolicy) judge(in Input, m *Metrics) Verdict {
	if !in.Got.DType.IsFloat() {
		return judgeIntegers(in, m)
	}
	th := mereThreshold(in.Got.DType)
	mereOK, mareOK := m.MERE < th, m.MARE < 10*th
	fails := newRanked(WorstCount)
	scanElements(in, m, fails, func(x elem) {
		den := math.Abs(x.r) + mereGuard
		e := math.Abs(x.g - x.r)
		mr := e / den
		if mr < th {
			return
		}
		lim := th
		if !mareOK && mr >= 10*th {
			lim = 10 * th
		}
		el := x.element(lim * den)
		el.Note = fmt.Sprintf("rel %.3g", mr)
		fails.add(el, mr, e)
	})
	v := Verdict{Pass: mereOK && mareOK && m.NonFiniteMismatch == 0, Failures: fails.elements()}
	v.Reason = fmt.Sprintf("MERE %.4g (limit < Th = %s), MARE %.4g (limit < 10·Th = %s)%s",
		m.MERE, num(th), m.MARE, num(10*th), mismatchText(m.NonFiniteMismatch))
	if !v.Pass {
		var what string
		switch {
		case !mereOK && !mareOK:
			what = "MERE and MARE too large: "
		case !mereOK:
			what = "MERE too large: "
		case !mareOK:
			what = "MARE too large: "
		}
		v.Reason = what + v.Reason
	}
	return v
}

// ---- ascend-mixed ----

type mixedPolicy struct{}

// mixedTols are the ascend-mixed (rtol, atol): fp16 2^-9/2^-9,
// bf16 2^-6/2^-6, fp32 (and fp64) rtol 2^-16, atol 2^-10.
func mixedTols(d tensor.DType) (rtol, atol float64) {
	switch d {
	case tensor.Float16:
		return math.Ldexp(1, -9), math.Ldexp(1, -9)
	case tensor.BFloat16:
		return math.Ldexp(1, -6), math.Ldexp(1, -6)
	}
	return math.Ldexp(1, -16), math.Ldexp(1, -10)
}

// MixedMinMatched is the fraction of elements ascend-mixed requires
// within atol + rtol·|ref|.
const MixedMinMatched = 0.99

// MixedCapULP is the ascend-mixed outlier cap in ulps of the output dtype.
const MixedCapULP = 32

func (mixedPolicy) Name() string             { return "ascend-mixed" }
func (mixedPolicy) needsWant() bool          { return true }
func (p mixedPolicy) Judge(in Input) Verdict { return run(p, in, nil) }

func (mixedPolicy) judge(in Input, m *Metrics) Verdict {
	d := in.Got.DType
	if !d.IsFloat() {
		return judgeIntegers(in, m)
	}
	rtol, atol := mixedTols(d)
	fails := newRanked(WorstCount)
	matched, overCap := 0, 0
	mis, nonFinite := scanElements(in, m, fails, func(x elem) {
		r := x.r
		e := math.Abs(x.g - r)
		tol := atol + float64(rtol*math.Abs(r))
		lim := math.Max(atol, MixedCapULP*ulpOf(d, r))
		if e <= tol {
			matched++
		}
		switch {
		case !(e <= lim):
			overCap++
			el := x.element(lim)
			el.Note = "over cap max(atol, 32 ulp)"
			fails.add(el, 1, ratio(e, lim))
		case !(e <= tol):
			fails.add(x.element(tol), 0, ratio(e, tol))
		}
	})
	matched += nonFinite // an accepted non-finite outcome matches
	// matched/N ≥ 0.99, in integers to avoid rounding at the boundary.
	enough := 100*matched >= 99*m.N
	v := Verdict{Pass: enough && overCap == 0 && mis == 0, Failures: fails.elements()}
	frac := 1.0
	if m.N > 0 {
		frac = float64(matched) / float64(m.N)
	}
	v.Reason = fmt.Sprintf("%d of %d elements (%.2f%%, need ≥ 99%%) within atol + rtol·|want| (rtol=%s, atol=%s); %d over the cap max(atol, %d ulp)%s",
		matched, m.N, 100*frac, num(rtol), num(atol), overCap, MixedCapULP, mismatchText(mis))
	return v
}

// interface checks
var (
	_ judger = boundPolicy{}
	_ judger = exactPolicy{}
	_ judger = allclosePolicy{}
	_ judger = ulpPolicy{}
	_ judger = thousandthPolicy{}
	_ judger = merePolicy{}
	_ judger = mixedPolicy{}
)
