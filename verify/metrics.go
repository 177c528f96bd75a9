package verify

import (
	"fmt"
	"math"
	"sync"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// WorstCount is how many elements Metrics.Worst and Verdict.Failures hold
// at most.
const WorstCount = 8

// mereGuard is the denominator guard of the Ascend MERE/MARE definitions.
const mereGuard = 1e-7

// UlpBuckets lists the keys of Metrics.UlpHist in display order.
var UlpBuckets = []string{"0", "1", "2", "3-4", "5-8", "9-16", ">16", "nonfinite"}

// Metrics are the accuracy figures reported for one output.
//
// Let g be a got value, r its reference (Expected.Ref, already rounded by
// the numerics profile), b its bound (Expected.Bound) and e = |g − r|.
// Elements where g or r is non-finite take no part in the error figures;
// they are counted in UlpHist["nonfinite"] and, when their class is not
// accepted, in NonFiniteMismatch. Over the remaining Compared elements
// (both finite):
//
//   - MaxAbs = max e; RMSE = sqrt(mean e²).
//   - MaxRel = max rel, rel = e/|r| for r ≠ 0 and rel = e for r = 0
//     (absolute error where the relative error is undefined).
//   - MERE = mean(e/(|r| + 1e-7)), MARE = max(e/(|r| + 1e-7)): the Ascend
//     definitions, whose guard makes tiny references dominate.
//   - Cosine = Σgr / sqrt(Σg²·Σr²); 1 when both vectors are zero (or no
//     element is compared), 0 when exactly one is.
//   - ErrRatio1e3, ErrRatio5e3 = fraction of compared elements with
//     rel > 1e-3, > 5e-3 (rel as for MaxRel).
//   - UlpHist counts ceil(e/ulp(r)) per bucket, ulp of the output dtype
//     at r (1 for integer dtypes); 0.5 ulp counts as "1".
//   - Tightness = max e/b (0/0 = 0, e/0 = +Inf, e/+Inf = 0, a NaN bound = +Inf):
//     above 1 exactly when some compared element is out of bound, so it
//     is reported for failing outputs too.
//   - OutOfBound counts compared elements with e > b (or b NaN).
//   - NotRounded counts the exact elements (bound.Expected.IsExact) that
//     are otherwise accepted (within b, or an accepted non-finite class)
//     but are not bit for bit the correctly rounded value
//     Expected.Rounded: a tie broken the wrong way, a zero of the wrong
//     sign. At an exact element b is half an ulp around the exact value r,
//     so e/b is the error in half-ulps: a correctly rounded result has
//     e/b ≤ 1, a wrong tie e/b = 1 too (counted here, not in OutOfBound).
//     OutOfBound + NonFiniteMismatch + NotRounded is the number of
//     elements the `bound` policy rejects.
//
// Worst holds up to WorstCount elements, class mismatches first, then by
// e/b and then by e, both descending, with not-rounded elements ranked
// just above e/b = 1 and noted ("not the correctly rounded …"); accepted
// elements with e = 0 and accepted non-finite elements are never listed. Metrics of different policies on
// one output share UlpHist: treat it as read-only.
type Metrics struct {
	N        int // elements judged
	Compared int // elements with finite got and finite reference

	MaxAbs, MaxRel, MERE, MARE, RMSE, Cosine float64

	UlpHist map[string]int

	ErrRatio1e3, ErrRatio5e3 float64

	Tightness float64

	NonFiniteMismatch int
	Ambiguous         int // overflow-ambiguous elements (bound.Expected.Ambiguous)
	AmbiguousTaken    int // of those, how many took an allowed non-finite outcome
	OutOfBound        int
	NotRounded        int // exact elements accepted by value but not bit for bit the rounded one
	// FirstBad is the lowest index of a rejected element (a non-finite
	// class mismatch, out of bound, or not correctly rounded), −1 when
	// there is none: where a fault that only shows past a size (an index
	// that wraps, a misplaced tile) starts, which the worst elements,
	// ranked by how far off they are, need not show.
	FirstBad int

	Worst []Element
}

// notRoundedRank ranks a not-rounded element in Metrics.Worst: above
// every accepted element (e/b ≤ 1), below the elements out of bound.
var notRoundedRank = math.Nextafter(1, 2)

// notRoundedElement describes exact element i, whose value g is accepted
// by value but is not the correctly rounded w (Expected.Rounded[i]; r, b
// and alt are its Ref, Bound and Alt): its note names that value and how
// many ulps of d g is from it.
func notRoundedElement(d tensor.DType, i int, g, r, b float64, alt bound.Special, w float64) Element {
	el := Element{Index: i, Got: g, Ref: r, Bound: b, Alt: alt}
	switch {
	case g == w: // equal values, different bits: the sign of a zero
		el.Note = "not the correctly rounded " + FormatValue(w) + " (sign of zero)"
	case bound.Of(g) != 0 || bound.Of(w) != 0:
		el.Note = "not the correctly rounded " + FormatValue(w)
	default:
		el.Note = fmt.Sprintf("not the correctly rounded %s (%.3g ulp from it)", FormatValue(w), math.Abs(g-w)/ulpOf(d, w))
	}
	return el
}

// ulpBucket maps an error in ulps to its UlpHist key.
func ulpBucket(u float64) string { return UlpBuckets[ulpBucketIndex(u)] }

// ulpBucketIndex maps an error in ulps to its index in UlpBuckets.
func ulpBucketIndex(u float64) int {
	k := math.Ceil(u)
	switch {
	case k <= 0:
		return 0
	case k <= 1:
		return 1
	case k <= 2:
		return 2
	case k <= 4:
		return 3
	case k <= 8:
		return 4
	case k <= 16:
		return 5
	}
	return 6
}

// nonFiniteBucket is the index of "nonfinite" in UlpBuckets.
const nonFiniteBucket = 7

// metricsPart is what Compute gathers over one range of elements:
// counts, maxima, the histogram and the worst elements, none of which
// depends on the order the ranges are merged in (ranked is a total
// order). The sums (MERE, RMSE, cosine) are not here: they are taken
// per chunk of fixed offsets (sums.go), so that their rounding is the
// same however the work is split.
type metricsPart struct {
	ambiguous, ambiguousTaken, mismatch, notRounded, outOfBound int
	compared, over1e3, over5e3, firstBad                        int
	maxAbs, maxRel, tightness                                   float64
	hist                                                        [8]int
	worst                                                       *ranked
}

// newMetricsPart returns an empty part: nothing gathered, no element
// rejected.
func newMetricsPart() *metricsPart {
	return &metricsPart{worst: newRanked(WorstCount), firstBad: -1}
}

// Compute returns the metrics of got against want. The output dtype (for
// ulps) is got's. Only the elements present in both got and want are
// judged; Check rejects a length mismatch before computing. A nil want
// gives Metrics with only N set.
//
// The per-element work runs over all cores in contiguous ranges; the
// floating sums are taken per chunk of sumChunk elements and the chunks
// added in order (sums.go), so the result does not depend on how the
// work is split, nor on whether the Expected comes whole or a block at a
// time (Compute is a Stream given one block). A compact want
// (bound.NewExactFrom, all elements exact) is read from its exact values
// a block at a time, its common elements gathered inline
// (addExactBlock), and for a floating output most chunks judged in one
// pass with their sums (leanChunk); an ordinary one through windows of its arrays
// (addBlock; for an fp16, bf16 or fp32 output, its common elements inline:
// addBoundBlock). TestComputeMatchesSerial,
// TestComputeCompactMatchesSerial, TestComputeVectorMatchesPortable and
// TestComputeOrdinaryMatchesSerial hold every path to the single loop,
// TestComputeFusedMatchesTwoPasses the fused sums of a one-chunk compact
// output to the two passes, TestComputeLeanMatchesPerElement the lean
// chunks to the per-element path.
func Compute(got *tensor.Tensor, want *bound.Expected) Metrics {
	if got == nil {
		return Metrics{UlpHist: map[string]int{}, Cosine: 1, FirstBad: -1}
	}
	if want == nil {
		return Metrics{UlpHist: map[string]int{}, Cosine: 1, FirstBad: -1, N: got.Len()}
	}
	n := min(got.Len(), want.Span())
	// An output of one chunk that Stream.addExact would take (a fuzzer's,
	// a small case's) is judged here on the caller's goroutine, in a
	// Stream that stays on its stack: nothing allocated for it.
	if fuseSums && n > 0 && n <= sumChunk && exactReadable(got, want) {
		bp := termBufs.Get()
		defer termBufs.Put(bp)
		s := &Stream{got: got, n: n, next: n, acc: newMetricsPart(), chunks: []chunkSums{{}}}
		s.exactChunk(s.acc, want, *bp, 0)
		return s.metrics()
	}
	s := newStream(got, n)
	s.add(want, n)
	return s.metrics()
}

// block is how many got values Compute converts to float64 at a time.
const block = 2048

// blockBufs holds computePart's got and reference blocks, reused: a
// fuzzer judges millions of small outputs.
var blockBufs = sync.Pool{New: func() any { return new([2 * block]float64) }}

// computePart gathers the order-free metrics of elements [lo, hi) of got
// against want.
func computePart(got *tensor.Tensor, want *bound.Expected, lo, hi int) *metricsPart {
	p := newMetricsPart()
	d := got.DType
	f, isFloat := d.FloatFormat()
	bp := blockBufs.Get().(*[2 * block]float64)
	defer blockBufs.Put(bp)
	if computeExact(p, got, want, lo, hi, bp[:block], bp[block:], false, nil) {
		return p
	}
	if base, num, spans, ok := want.UnchangedBase(); ok && base.DType == d && base.Len() >= hi {
		p.computeUnchanged(got, want, base, num, spans, lo, hi, bp[:block])
		return p
	}
	gb := bp[:min(block, hi-lo)]
	var v bound.View
	for b0 := lo; b0 < hi; b0 += block {
		gv := gb[:min(block, hi-b0)]
		got.Float64sFrom(b0, gv)
		want.Load(&v, b0, len(gv))
		p.addWindow(d, f, isFloat, gv, &v, b0)
	}
	return p
}

// computeExact gathers elements [lo, hi) of got into p if want is a
// compact Expected of got's dtype that computePart reads through its
// exact values (addExactBlock, addExactIntBlock), and reports whether it
// did. It converts a block at a time into windows of gb (got values) and
// rb (exact values): with keep, window b0−lo, so that gb[:hi−lo] and
// rb[:hi−lo] hold every element's values afterwards (Stream.addExact's fused
// sums; rb then holds the references, bound.Expected.Refs, not the exact
// values); else window 0, gb and rb at least a block long. With vm (and
// keep), a floating output's elements raise vm's maxima to chunkMax's
// figures of gb[:hi−lo] and rb[:hi−lo] and set vm.ok; an integer output's
// leave vm alone.
func computeExact(p *metricsPart, got *tensor.Tensor, want *bound.Expected, lo, hi int, gb, rb []float64, keep bool, vm *valueMax) bool {
	if !exactReadable(got, want) {
		return false
	}
	d := got.DType
	src, _, num, _ := want.ExactSource()
	f, _ := d.FloatFormat()
	sf, short := bound.NewShortForm(d)
	for b0 := lo; b0 < hi; b0 += block {
		w := 0
		if keep {
			w = b0 - lo
		}
		k := min(block, hi-b0)
		gv, rv := gb[w:w+k:w+k], rb[w:w+k:w+k]
		got.Float64sFrom(b0, gv)
		src(b0, rv)
		if short {
			if vm != nil {
				vm.ok = true
			}
			p.addExactBlock(d, f, num, &sf, gv, rv, b0, keep, vm)
		} else {
			p.addExactIntBlock(d, f, num, gv, rv, b0, keep)
		}
	}
	return true
}

// exactReadable reports whether computeExact reads want through its
// exact values for got: want compact (bound.NewExactFrom) in got's own
// dtype, an integer one or a floating one with a short form.
func exactReadable(got *tensor.Tensor, want *bound.Expected) bool {
	_, ed, _, ok := want.ExactSource()
	_, isFloat := got.DType.FloatFormat()
	return ok && ed == got.DType && (bound.HasShortForm(got.DType) || !isFloat)
}

// addBlock gathers elements b0, b0+1, … whose got values are gv and
// whose expected values are the window v.
//
// Most elements have a finite got and reference and no alternatives; the
// loop handles those inline, with the part's figures in locals, and
// hands the rest (non-finite values, overflow-ambiguous elements) and
// every rejected element to methods. Where the code departs from the
// definitions, it computes the same values:
//   - for fp16, bf16 and fp32 outputs the ulp bucket compares e with
//     ulp·2^k instead of dividing: ulp is a power of two, and e/ulp
//     neither overflows nor underflows for these formats, so the quotient
//     is exact and ceil(e/ulp) ≤ 2^k exactly when e ≤ 2^k·ulp;
//   - at a finite got, Identical(g, w) is equality of the bit patterns;
//   - the relative error e/|r| is not computed where e ≤ q = fl(c·|r|)
//     with c = fl(M·(1 − 2^-50)), M = min(MaxRel so far, 1e-3), q normal:
//     with two roundings of at most 2^-53 relative each, q < M·|r|, so
//     e/|r| < M, its rounding is at most M, and it can neither raise
//     MaxRel nor exceed 1e-3 (nor 5e-3);
//   - where the bound b is a power of two 2^k whose reciprocal is a
//     normal float64, e/b is computed as e·2^-k: the same real number,
//     rounded once the same way (an exact element's half-ulp bound is
//     such a b);
//   - an element whose ratio is below that of the last of the worst
//     elements held, or equal with a smaller error, cannot enter them
//     (ranked.takes would say so).
func (p *metricsPart) addBlock(d tensor.DType, f tensor.Format, isFloat bool, gv []float64, v *bound.View, b0 int) {
	n := len(gv)
	refs, bnds, alts := v.Ref[:n], v.Bound[:n], v.Alt[:n]
	var exact []bool
	var rounded []float64
	if v.Exact != nil {
		exact, rounded = v.Exact[:n], v.Rounded[:n]
	}
	ulpCmp := isFloat && d != tensor.Float64
	emin, emax, pp := f.Emin, f.Emax, f.P
	compared, over1e3, over5e3 := p.compared, p.over1e3, p.over5e3
	maxAbs, maxRel, tight := p.maxAbs, p.maxRel, p.tightness
	hist := p.hist
	floor, floor2, full := p.worst.floor()
	// relSkip·|r| bounds the errors whose relative error cannot change
	// MaxRel or the 1e-3 count: see addBlock's doc.
	relSkip := math.Min(maxRel, 1e-3) * (1 - 0x1p-50)
	for j, g := range gv {
		r, b := refs[j], bnds[j]
		if alts[j] != 0 || !isFinite(g) || !isFinite(r) {
			if !p.special(d, b0+j, g, r, b, alts[j], exact != nil && exact[j], rounded, j) {
				continue
			}
		}
		compared++
		e := math.Abs(g - r)
		ar := math.Abs(r)
		maxAbs = maxNonNeg(maxAbs, e)
		if q := relSkip * ar; !(e <= q && q >= 0x1p-1020) { // else rel ≤ min(maxRel, 1e-3): nothing to do
			rel := e
			if r != 0 {
				rel = e / ar
			}
			maxRel = maxNonNeg(maxRel, rel)
			if rel > 1e-3 {
				over1e3++
				if rel > 5e-3 {
					over5e3++
				}
			}
			relSkip = math.Min(maxRel, 1e-3) * (1 - 0x1p-50)
		}
		if ulpCmp {
			// ulp(r) = 2^(clamp(exponent(r), Emin, Emax) − p + 1) (Format.Ulp).
			ue := min(max(int(math.Float64bits(r)>>52&0x7FF)-1023, emin), emax) - pp + 1
			u := math.Float64frombits(uint64(ue+1023) << 52)
			// The bucket as a count of thresholds passed, without
			// branches: whether e is 0, one ulp or a few is random.
			hist[b2i(e > 0)+b2i(e > u)+b2i(e > 2*u)+b2i(e > 4*u)+b2i(e > 8*u)+b2i(e > 16*u)]++
		} else {
			ulp := 1.0
			if isFloat {
				ulp = f.Ulp(r)
			}
			hist[ulpBucketIndex(e/ulp)]++
		}
		var t float64
		if inv, ok := pow2Recip(b); ok {
			t = e * inv
		} else {
			t = ratio(e, b)
		}
		tight = maxNonNeg(tight, t)
		switch {
		case !(e <= b):
			p.outOfBound++
			p.bad(b0 + j)
			p.worst.add(Element{Index: b0 + j, Got: g, Ref: r, Bound: b, Alt: alts[j]}, t, e)
			floor, floor2, full = p.worst.floor()
		case exact != nil && exact[j] && math.Float64bits(g) != math.Float64bits(rounded[j]):
			p.notRounded++
			p.bad(b0 + j)
			p.worst.add(notRoundedElement(d, b0+j, g, r, b, alts[j], rounded[j]), notRoundedRank, e)
			floor, floor2, full = p.worst.floor()
		case b2i(e > 0)&(b2i(!full)|b2i(t > floor)|b2i(t == floor)&b2i(e >= floor2)) != 0 && p.worst.takes(t, e, b0+j):
			p.worst.add(Element{Index: b0 + j, Got: g, Ref: r, Bound: b, Alt: alts[j]}, t, e)
			floor, floor2, full = p.worst.floor()
		}
	}
	p.compared, p.over1e3, p.over5e3 = compared, over1e3, over5e3
	p.maxAbs, p.maxRel, p.tightness = maxAbs, maxRel, tight
	hist[nonFiniteBucket] = p.hist[nonFiniteBucket] // special counts there
	p.hist = hist
}

// worstFloor is ranked.floor of the part's worst elements as bits (the
// keys are non-negative): 0 and 0, which every element passes, while the
// list is not full.
func (p *metricsPart) worstFloor() (key1, key2 uint64) {
	k1, k2, full := p.worst.floor()
	if !full {
		return 0, 0
	}
	return math.Float64bits(k1), math.Float64bits(k2)
}

// b2i is 1 for true and 0 for false, without a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isFinite reports whether x is neither ±Inf nor NaN.
func isFinite(x float64) bool { return math.Float64bits(x)&(0x7FF<<52) != 0x7FF<<52 }

// special gathers element i, whose got g or reference r is non-finite or
// which has alternatives alt (exact says whether it is exact, and
// rounded[j] is then its value), and reports whether it still goes
// through the finite comparison (an overflow-ambiguous element with a
// finite got).
func (p *metricsPart) special(d tensor.DType, i int, g, r, b float64, alt bound.Special, exact bool, rounded []float64, j int) bool {
	amb := alt != 0 && bound.Of(r) == 0 // Expected.Ambiguous
	if amb {
		p.ambiguous++
	}
	switch classify(alt, r, g) {
	case classMismatch:
		p.hist[nonFiniteBucket]++
		p.mismatch++
		p.bad(i)
		p.worst.add(Element{Index: i, Got: g, Ref: r, Bound: b, Alt: alt, Note: mismatchNote(alt, r, g)},
			math.Inf(1), math.Inf(1))
		return false
	case classNonFinite:
		p.hist[nonFiniteBucket]++
		if amb {
			p.ambiguousTaken++
		}
		if exact && !bound.Identical(g, rounded[j]) {
			p.notRounded++
			p.bad(i)
			p.worst.add(notRoundedElement(d, i, g, r, b, alt, rounded[j]), notRoundedRank, math.Inf(1))
		}
		return false
	}
	return true
}

// bad records rejected element i: the range's elements come in index
// order, so the first one recorded is the lowest.
func (p *metricsPart) bad(i int) {
	if p.firstBad < 0 {
		p.firstBad = i
	}
}

// maxNonNeg is math.Max for the non-negative, non-NaN figures of
// computePart (absolute values and their ratios, +0 never −0), where it
// is a plain comparison.
func maxNonNeg(x, y float64) float64 {
	if y > x {
		return y
	}
	return x
}
