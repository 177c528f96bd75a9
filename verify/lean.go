package verify

import (
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// The lean path of Stream.exactChunk: one pass over a chunk of a compact
// floating output that gathers its metrics and its sums together, for
// the chunks whose every element is inline (one the run, exactRun.run,
// would gather, or a zero or a subnormal of the format whose got is its
// exact value, which addExactBlock gathers as compared at e = 0) and
// whose figures, given what the part holds already, need no element's
// own tests. The two passes it replaces (the metrics'
// run, keeping every value, then termSums over them) read each value
// twice and test each element for the worst list and the relative-error
// limits, which for the bulk of a correct output cannot change anything:
//
//   - An inline element's e = |g − r| is at most its bound b = ulp(r)/2
//     (g is the nearest rounding of r), so its e/b is at most 1: once the
//     part's Tightness is 1 it cannot raise it, and once its worst list
//     is full and its last element ranks at least 1 (ranked.floor) only
//     an element with e/b = 1 and e above the last one's could enter:
//     none if the chunk's largest e is not above it (checked after the
//     pass, from the chunk's maximum).
//   - An inline element's relative error e/|r| is at most u/(1 + u),
//     u = 2^-p, attained at |r| = 2^k·(1 + u) (leanRelStar): once the
//     part's limit min(MaxRel, 1e-3) is at least that, every inline
//     element passes run's relative-error test.
//   - An element whose e is 0 (every element of a copy) passes every test
//     of run whatever the part holds, and so does a chunk of them.
//
// The sums are taken unscaled and scaled at the end (leanChunkSums):
// the chunk's scales are powers of two known only after its pass, and
// on the values of an inline chunk scaling each term or the lane sums
// gives the same bits (leanScalable). Any chunk the lean path cannot
// take (an element outside the run, a limit not reached, an error above
// the floor) is judged again from the start by the per-element path,
// the lean pass's figures dropped: nothing is merged before the whole
// chunk passed. TestComputeLeanMatchesPerElement holds the two paths
// together, TestLeanRunMatchesPortable the assembly to its Go twin.

// leanChunks lets exactChunk take the lean path; the tests turn it off
// to compare with the per-element path.
var leanChunks = true

// leanTaken counts the chunks the lean path judged, for the tests (one
// atomic addition per chunk of sumChunk elements).
var leanTaken atomic.Int64

// leanBlock is how many elements the lean path converts at a time: its
// got values and references (16 KiB) stay in the first level cache
// between the conversion and the pass.
const leanBlock = 1024

// leanVec is what leanRunAVX2 reads (the short form's constants, each in
// four lanes) and gathers (four lanes of each figure, lane j mod 4 for a
// chunk's element j), laid out for it (TestAsmLayouts).
type leanVec struct {
	bias, limit, half, mask, min, shift, one [4]uint64  // 0, 32, 64, 96, 128, 160, 192
	guard                                    [4]float64 // 224
	sums                                     laneSums   // 256: unscaled
	maxE, maxR, mare                         [4]float64 // 416, 448, 480: the largest e, |r| and e/(|r| + guard)
	zeros                                    [4]int64   // 512: elements with e = 0
}

// set loads the constants of sf into v and clears its figures; with
// flush (tensor.SubnormalFlush) only zeros are inline below the short
// form, a subnormal's rounding being a zero, not itself.
func (v *leanVec) set(sf *bound.ShortForm, flush bool) {
	min, span, shift, half, mask, _ := sf.Bits()
	below := min
	if flush {
		below = 1
	}
	*v = leanVec{}
	for k := range 4 {
		// Takes: |r|bits − min < span unsigned, that is |r|bits + (2^63 −
		// min) < 2^63 + span as signed integers (one addition and one
		// signed comparison, which AVX2 has, where an unsigned one is not).
		v.bias[k], v.limit[k] = 1<<63-min, 1<<63+span
		v.half[k], v.mask[k], v.min[k], v.shift[k], v.one[k] = half, mask, below, shift, 1
		v.guard[k] = mereGuard
	}
}

// leanRun gathers elements 0, 1, … of gv (got) and rv (exact values),
// lane j mod 4 of v for element j (gv starts at a multiple of 4 in its
// chunk), while each is inline: in the short form with got bit for bit
// its Rounded, or below v's min (the short form's Min, taking a zero or a
// subnormal of d; 1 under flush, a zero only) with got bit for bit r,
// whose rounding is then itself. It reports whether all were.
func leanRun(v *leanVec, gv, rv []float64) bool {
	rv = rv[:len(gv)]
	n := len(gv) &^ 3
	if useAVX2 && n > 0 {
		if leanRunAVX2(v, &gv[0], &rv[0], n) != n {
			return false
		}
		return leanRunGo(v, gv[n:], rv[n:], n)
	}
	return leanRunGo(v, gv, rv, 0)
}

// leanRunGo is leanRun one element at a time, element j of gv in lane
// (j0 + j) mod 4: the portable form of leanRunAVX2, with the same
// integer and IEEE operations per element, each product rounded before
// it is added (the conversions keep the compiler from fusing them).
func leanRunGo(v *leanVec, gv, rv []float64, j0 int) bool {
	rv = rv[:len(gv)]
	bias, limit, below, shift, half, mask := v.bias[0], int64(v.limit[0]), v.min[0], v.shift[0], v.half[0], v.mask[0]
	for j, g := range gv {
		r := rv[j]
		rb, gb := math.Float64bits(r), math.Float64bits(g)
		ab := rb &^ (1 << 63)
		inShort := int64(ab+bias) < limit && gb == (rb+half+rb>>shift&1)&^mask
		if !inShort && !(ab < below && gb == rb) {
			return false
		}
		e := math.Abs(g - r)
		ar := math.Float64frombits(ab)
		m := e / (ar + mereGuard)
		k := (j0 + j) & 3
		v.maxE[k] = maxNonNeg(v.maxE[k], e)
		v.zeros[k] += int64(b2i(e == 0))
		v.maxR[k] = maxNonNeg(v.maxR[k], ar)
		v.mare[k] = maxNonNeg(v.mare[k], m)
		v.sums.mere[k] += m
		v.sums.sq[k] += float64(e * e)
		v.sums.gr[k] += float64(g * r)
		v.sums.gg[k] += float64(g * g)
		v.sums.rr[k] += float64(r * r)
	}
	return true
}

// leanRelStar returns the largest relative error e/|r| (rounded) of an
// inline element of format f: u/(1 + u), u = 2^-p, at r = 1 + u, a tie
// that rounds to even, down to 1, as run would compute it.
func leanRelStar(f tensor.Format) float64 {
	u := math.Ldexp(1, -f.P)
	r := 1 + u
	return math.Abs(1-r) / r
}

// leanScalable reports whether the lean path's unscaled sums, scaled at
// the end, are bit for bit termSums' sums of scaled terms for format f.
// Every value of an inline element (g, r, and e when not 0) is a
// multiple of 2^(Emin−52) and at least that, and below 2^(Emax+1); so
// each term (a square or a product of two of them, all positive: g has
// r's sign) lies in [2^lo, 2^hi], lo = 2(Emin − 53), hi = 2(Emax + 1),
// and a chunk's scale 2^x (2^x ≤ its largest value) in the same range.
// Multiplying by a power of two commutes with each rounding (of a product
// or of a sum of positive terms) as long as neither side leaves the
// normal range: the scaled terms are at least 2^(lo−hi) and the unscaled
// lane sums of sumChunk/4 terms at most 2^(hi+11).
func leanScalable(f tensor.Format) bool {
	lo, hi := 2*(f.Emin-53), 2*(f.Emax+1)
	return lo-hi >= -1021 && hi+11 <= 1022
}

// leanChunk judges the k elements of the chunk from a of s's output
// against want (a compact Expected of the output's floating dtype) in
// one pass, with buf (from termBufs) as scratch, and reports whether it
// did: if not, nothing was gathered and the caller judges the chunk
// element by element.
func (s *Stream) leanChunk(p *metricsPart, want *bound.Expected, buf []float64, a, k int) bool {
	src, _, num, _ := want.ExactSource()
	d := s.got.DType
	f, _ := d.FloatFormat()
	sf, short := bound.NewShortForm(d)
	// A format too wide for the unscaled sums never reaches here (fp64
	// has no short form).
	if !short || !leanScalable(f) {
		return false
	}
	// The part's figures that let the chunk's elements skip their own
	// tests (see the top of this file); without them only a chunk of
	// exact copies (e = 0 throughout) passes, and only a part that has
	// seen nothing else tries one.
	floor, floor2 := p.worstFloor()
	limits := p.tightness >= 1 && math.Min(p.maxRel, 1e-3) >= leanRelStar(f) && floor >= math.Float64bits(1)
	if !limits && (p.maxAbs != 0 || !leanCopyLikely(s.got, src, buf, a, k)) {
		return false
	}
	var v leanVec
	v.set(&sf, num.Subnormals == tensor.SubnormalFlush)
	if !leanPass(&v, s.got, want, src, buf, a, k) {
		return false
	}
	var maxE, maxR, mare float64
	zeros := 0
	for l := range 4 {
		maxE, maxR, mare = maxNonNeg(maxE, v.maxE[l]), maxNonNeg(maxR, v.maxR[l]), maxNonNeg(mare, v.mare[l])
		zeros += int(v.zeros[l])
	}
	// An element with e > 0 could enter the worst list when its e/b = 1
	// equals the floor and its e is above the floor's.
	if eb := math.Float64bits(maxE); eb != 0 && !(limits && (floor > math.Float64bits(1) || eb <= floor2)) {
		return false
	}
	p.compared += k
	p.hist[0] += zeros
	p.hist[1] += k - zeros
	p.maxAbs = maxNonNeg(p.maxAbs, maxE)
	// Tightness: every e/b ≤ 1 ≤ p.tightness when limits, else e = 0.
	// The largest |g| is the rounding of the largest |r| (leanMaxV).
	s.chunks[a/sumChunk] = leanChunkSums(&v.sums, mare, maxE, leanMaxV(&sf, maxR))
	leanTaken.Add(1)
	return true
}

// leanCopyProbe is how many elements leanCopyLikely looks at.
const leanCopyProbe = 64

// leanCopyLikely reports whether the first elements of the chunk of k
// from a of got (exact values from src, converted into buf) are copies,
// got bit for bit the exact value: without the part's limits the lean
// pass can only take a chunk of copies, and it finds out at the end of
// the chunk, so a chunk of computed values (whose first elements almost
// surely hold an error) is not worth the pass. A fuzzer's outputs, one
// chunk each, are judged once per output.
func leanCopyLikely(got *tensor.Tensor, src bound.ExactSource, buf []float64, a, k int) bool {
	n := min(k, leanCopyProbe)
	gv, rv := buf[:n], buf[n:2*n]
	got.Float64sFrom(a, gv)
	src(a, rv)
	for j, g := range gv {
		if math.Float64bits(g) != math.Float64bits(rv[j]) {
			return false
		}
	}
	return true
}

// leanPass gathers the k elements from a of got (compact Expected want,
// whose source is src) into v by leanRun or its forms that widen fp16
// values themselves, and reports whether all were inline. buf (from
// termBufs) holds the values it converts, a block at a time.
func leanPass(v *leanVec, got *tensor.Tensor, want *bound.Expected, src bound.ExactSource, buf []float64, a, k int) bool {
	gh := got.F16()
	if !useF16C || gh == nil {
		gb, rb := buf[:leanBlock], buf[leanBlock:2*leanBlock]
		for b0 := a; b0 < a+k; b0 += leanBlock {
			n := min(leanBlock, a+k-b0)
			gv, rv := gb[:n], rb[:n]
			got.Float64sFrom(b0, gv)
			src(b0, rv)
			if !leanRun(v, gv, rv) {
				return false
			}
		}
		return true
	}
	gh = gh[a : a+k]
	if x, y, ok := want.ExactSum(); ok && len(x.F16()) >= a+k && len(y.F16()) >= a+k {
		// vector_add's: nothing converted into a buffer.
		xh, yh := x.F16()[a:a+k], y.F16()[a:a+k]
		n := k &^ 3
		if n > 0 && leanRunH16SumAVX2(v, f16Ptr(gh), f16Ptr(xh), f16Ptr(yh), n) != n {
			return false
		}
		var gt, rt [4]float64
		for j := n; j < k; j++ {
			gt[j-n] = float64(gh[j].Float32())
			rt[j-n] = float64(xh[j].Float32()) + float64(yh[j].Float32())
		}
		return leanRunGo(v, gt[:k-n], rt[:k-n], n)
	}
	rb := buf[:leanBlock]
	for j0 := 0; j0 < k; j0 += leanBlock {
		m := min(leanBlock, k-j0)
		rv := rb[:m]
		src(a+j0, rv)
		n := m &^ 3
		if n > 0 && leanRunH16AVX2(v, f16Ptr(gh[j0:]), &rv[0], n) != n {
			return false
		}
		var gt [4]float64
		for j := n; j < m; j++ {
			gt[j-n] = float64(gh[j0+j].Float32())
		}
		if !leanRunGo(v, gt[:m-n], rv[n:], n) {
			return false
		}
	}
	return true
}

// f16Ptr is the address of s's first value as the assembly reads it
// (float16.Float16 is a uint16).
func f16Ptr(s []float16.Float16) *uint16 { return (*uint16)(unsafe.Pointer(&s[0])) }

// leanMaxV returns the largest |g| and |r| of an inline chunk whose
// largest |r| is maxR: Rounded is nondecreasing in |r| (its bits are
// those of |r| plus a rounding increment that a larger |r| never makes
// smaller, then truncated) and keeps r's sign, so the largest |g| of the
// short-form elements is Rounded(largest |r| of them); below the short
// form, g = r, whose rounding is itself (a zero, or a subnormal of the
// format, fewer than p significant bits).
func leanMaxV(sf *bound.ShortForm, maxR float64) float64 {
	return maxNonNeg(maxR, sf.Rounded(maxR))
}

// leanChunkSums returns the chunk's sums from its unscaled lane sums l
// (leanRunGo's), its largest relative error mare, its largest error maxE
// and its largest |g| and |r| maxV: chunkWith's, bit for bit
// (leanScalable), each lane sum multiplied by the square of the scale's
// reciprocal, a power of two in the normal range.
func leanChunkSums(l *laneSums, mare, maxE, maxV float64) chunkSums {
	_, xe := pow2Below(maxE)
	_, xv := pow2Below(maxV)
	se := math.Ldexp(1, -2*xe)
	sv := math.Ldexp(1, -2*xv)
	var sq, gr, gg, rr [4]float64
	for k := range 4 {
		sq[k], gr[k], gg[k], rr[k] = l.sq[k]*se, l.gr[k]*sv, l.gg[k]*sv, l.rr[k]*sv
	}
	return chunkSums{mere: fold(l.mere), sq: fold(sq), gr: fold(gr), gg: fold(gg), rr: fold(rr),
		mare: mare, xe: xe, xv: xv, hasE: maxE > 0, hasV: maxV > 0}
}
