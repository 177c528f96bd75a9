package verify

import (
	"math"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// Accepted reports whether the bound policy accepts every element of got
// against want: no element of a class its Expected does not allow, no
// finite element farther from its reference than its bound, no exact
// element other than bit for bit its rounding. It is true exactly when
// Compute(got, want) counts no NonFiniteMismatch, OutOfBound or
// NotRounded element (TestAcceptedMatchesCompute), so exactly when the
// bound policy passes; but it computes none of the metrics (no error
// sums, ulp buckets, worst elements), and stops at the first rejected
// element. A judge that needs only the verdict (a fuzzer's body,
// CheckVerdicts) computes the metrics of an output it rejects, to say
// why, and of no other. As Compute, it judges the elements present in
// both got and want.
func Accepted(got *tensor.Tensor, want *bound.Expected) bool {
	if got == nil || want == nil {
		return true
	}
	n := min(got.Len(), want.Span())
	bp := blockBufs.Get().(*[2 * block]float64)
	defer blockBufs.Put(bp)
	gb, rb := bp[:block], bp[block:]
	if exactReadable(got, want) {
		return acceptedExact(got, want, n, gb, rb)
	}
	var v bound.View
	general := func(lo, hi int) bool {
		for b0 := lo; b0 < hi; b0 += block {
			gv := gb[:min(block, hi-b0)]
			got.Float64sFrom(b0, gv)
			want.Load(&v, b0, len(gv))
			for j, g := range gv {
				if !acceptsElement(g, v.Ref[j], v.Bound[j], v.Alt[j], v.IsExact(j), rounded(&v, j)) {
					return false
				}
			}
		}
		return true
	}
	// Over an unchanged base, an element outside the overridden spans
	// whose got has the base's bits is accepted (computeUnchanged says
	// why): compared with the base as computeUnchanged compares them.
	if base, num, spans, ok := want.UnchangedBase(); ok && base.DType == got.DType && base.Len() >= n {
		var acc sameAcc
		return walkUnchanged(got, base, num, spans, 0, n, &acc, general)
	}
	return general(0, n)
}

// rounded is v.Rounded[j], or 0 where v holds no exact element.
func rounded(v *bound.View, j int) float64 {
	if v.Exact == nil {
		return 0
	}
	return v.Rounded[j]
}

// acceptedExact is Accepted for a compact Expected read through its exact
// values (exactReadable), a block of gb and rb at a time. A floating
// element acceptRun takes, or an integer one intRun takes (got its
// clamp), is accepted without its Expected: almost every
// element of a correct output is one of them. So is one whose exact
// value overflows the format, or is a NaN under saturation, and whose got
// is that value's rounding (beyondAsRounded): a fuzzer's outputs are
// full of them (over half of the elements FuzzVectorAdd's corpus sent
// to the memo). Any other is judged by its outcome from
// bound.ExactElement.
func acceptedExact(got *tensor.Tensor, want *bound.Expected, n int, gb, rb []float64) bool {
	d := got.DType
	src, _, num, _ := want.ExactSource()
	sf, short := bound.NewShortForm(d)
	lo, hi := d.IntRange()
	inf := num.Overflow != tensor.OverflowSaturate
	var maxF float64
	if f, ok := d.FloatFormat(); ok {
		maxF = f.MaxFinite()
	}
	var memo exactMemo
	var vec exactRunVec
	if short {
		vec.set(&sf, 0, 0, 0, 0)
	}
	for b0 := 0; b0 < n; b0 += block {
		k := min(block, n-b0)
		gv, rv := gb[:k], rb[:k]
		got.Float64sFrom(b0, gv)
		src(b0, rv)
		for j := 0; j < k; j++ {
			if short {
				if j += acceptRun(&vec, &sf, inf, gv[j:], rv[j:]); j == k {
					break
				}
				if beyondAsRounded(gv[j], rv[j], sf.Min+sf.Span, inf, maxF) {
					continue
				}
			} else if j += intRun(gv[j:], rv[j:], lo, hi, false); j == k {
				break
			}
			if !memo.accepts(gv[j], rv[j], d, num) {
				return false
			}
		}
	}
	return true
}

// beyondAsRounded reports whether exact value r lies beyond the format's
// finite values and g has the bits of its rounding (tensor.Numerics.Round),
// which the bound policy accepts: r at or above the overflow threshold
// thr (the bits of MaxFinite + ulp/2, where the short form ends) or
// infinite rounds to the infinity of its sign, or to ±maxF under
// saturation; a NaN rounds to +0 under saturation (and to a NaN
// otherwise, nonFiniteAsRounded's case, which acceptRun takes).
// TestAcceptedMatchesCompute and TestAcceptedSpecialGrid hold Accepted,
// which relies on it, to the single loop's definition. It states the
// rounding (tensor.Numerics.Round) of these values rather than calling
// it: with the call, FuzzVectorAdd's instrumented body took 11% longer
// (98.4 against 109.3 µs, BenchmarkFuzzCorpus, six runs each).
func beyondAsRounded(g, r float64, thr uint64, inf bool, maxF float64) bool {
	if r != r {
		return !inf && math.Float64bits(g) == 0
	}
	if math.Float64bits(r)&^(1<<63) < thr {
		return false
	}
	want := math.Copysign(maxF, r)
	if inf {
		want = math.Copysign(math.Inf(1), r)
	}
	return math.Float64bits(g) == math.Float64bits(want)
}

// acceptsElement reports whether the bound policy accepts got g at an
// element with reference r, bound b and alternatives alt (exact: one that
// accepts only rnd): its definition, element by element, as
// computeSerial counts the rejected ones.
func acceptsElement(g, r, b float64, alt bound.Special, exact bool, rnd float64) bool {
	switch classify(alt, r, g) {
	case classMismatch:
		return false
	case classFinite:
		if !(math.Abs(g-r) <= b) {
			return false
		}
	}
	return !exact || bound.Identical(g, rnd)
}

// acceptRun returns how many of the elements 0, 1, … of gv (got) and rv
// (exact values) acceptRunGo takes, four at a time by acceptRunAVX2 where
// the CPU has AVX2 (vec holds sf's constants).
func acceptRun(vec *exactRunVec, sf *bound.ShortForm, inf bool, gv, rv []float64) int {
	j := 0
	if useAVX2 && len(gv) >= 4 {
		var m uint64
		if inf {
			m = ^m
		}
		j = acceptRunAVX2(vec, &gv[0], &rv[:len(gv)][0], len(gv)&^3, m)
	}
	return j + acceptRunGo(sf, inf, gv[j:], rv[j:])
}

// acceptRunGo returns how many of the elements 0, 1, … of gv (got) and rv
// (exact values) of a compact Expected under a profile of overflow=inf
// (inf) or saturate are accepted for one of these reasons, which hold for
// almost every element of a correct output:
//   - r is in the short form and g is bit for bit its rounding: there the
//     element's bound is half an ulp at r, and its rounding is within it;
//   - r is a zero and g has its bits, or (inf) r is a NaN or ±Inf and g
//     is of its class (addExactBlock's test): the rounding is r itself,
//     of a class and at an error (0) the element accepts.
func acceptRunGo(sf *bound.ShortForm, inf bool, gv, rv []float64) int {
	rv = rv[:len(gv)]
	for j, g := range gv {
		r := rv[j]
		if sf.Takes(r) && math.Float64bits(g) == math.Float64bits(sf.Rounded(r)) ||
			zeroAsRounded(g, r) || inf && nonFiniteAsRounded(g, r) {
			continue
		}
		return j
	}
	return len(gv)
}
