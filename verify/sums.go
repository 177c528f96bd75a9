package verify

import (
	"math"
	"sync"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
)

// The floating sums of Compute (MERE, RMSE, cosine) are taken in two
// levels with a fixed association, so that their rounding is the same
// however the work is split and whether the output is judged whole or a
// block at a time (Stream):
//
//   - the output is cut into chunks of sumChunk elements at fixed
//     offsets (0, sumChunk, 2·sumChunk, …); a chunk's sums add its
//     elements' terms in index order, from +0;
//   - the chunks' sums are added in chunk order.
//
// Each chunk scales its terms by powers of two of its own, 2^x with
// 2^x ≤ max < 2^(x+1) over its compared elements (e for the squared
// errors, |g| and |r| for the cosine's products), so that a chunk of huge
// fp64 values cannot overflow its sums of squares and a chunk of tiny
// ones does not vanish into underflow; a chunk's sums are brought to the
// output's largest scale by math.Ldexp when they are added. A division
// or multiplication by a power of two is exact unless it overflows or
// underflows, so apart from that a chunk's sums are those of its
// unscaled terms times an exact power of two. Each chunk depends only on
// its own elements: chunks are computed over all cores and added at the
// end.

// sumChunk is how many elements one chunk's sums cover.
const sumChunk = 8192

// sumTerms are the terms of one chunk, one entry per element: the
// relative error e/(|r| + 1e-7), e/scaleE and g/scaleV, r/scaleV. An
// element that is not compared (g or r non-finite) has +0 terms: every
// sum starts at +0 and none ever holds −0 (its terms are ≥ 0, or for Σgr,
// a sum is −0 only when both addends are), so adding +0 leaves it
// unchanged, bit for bit, as not adding at all.
type sumTerms struct {
	mere, es, gs, rs []float64
	mare             float64 // the largest relative error of the chunk
}

// chunkSums are one chunk's sums: sq in units of 2^(2·xe), gr, gg and rr
// of 2^(2·xv); hasE (hasV) is false when every compared error (value) of
// the chunk is 0, and the sums in its unit are then +0.
type chunkSums struct {
	mere, sq, gr, gg, rr float64
	mare                 float64
	xe, xv               int
	hasE, hasV           bool
}

// sums are the totals of Compute: sq scaled by 2^(−2·xe), gr, gg and rr
// by one power of two (the cosine does not depend on which).
type sums struct {
	mere, sq, gr, gg, rr float64
	mare                 float64
	xe                   int
}

// add adds the terms of one chunk in index order to s.
func (s *chunkSums) add(t *sumTerms) {
	mere, sq, gr, gg, rr := s.mere, s.sq, s.gr, s.gg, s.rr
	ms := t.mere
	es, gs, rs := t.es[:len(ms)], t.gs[:len(ms)], t.rs[:len(ms)]
	// Each square or product is rounded before it is added (the
	// conversions keep the compiler from fusing them into one
	// multiply-add), so the sums' bits are the same on every architecture
	// and GOAMD64 level. Four terms a step, still added in index order:
	// under a fuzzer's instrumentation every loop iteration also updates
	// a coverage counter and reports its comparison, which in a loop this
	// short cost as much as the sums.
	j := 0
	for ; j+4 <= len(ms); j += 4 {
		m, e, g, r := ms[j:j+4:j+4], es[j:j+4:j+4], gs[j:j+4:j+4], rs[j:j+4:j+4]
		mere += m[0]
		sq += float64(e[0] * e[0])
		gr += float64(g[0] * r[0])
		gg += float64(g[0] * g[0])
		rr += float64(r[0] * r[0])
		mere += m[1]
		sq += float64(e[1] * e[1])
		gr += float64(g[1] * r[1])
		gg += float64(g[1] * g[1])
		rr += float64(r[1] * r[1])
		mere += m[2]
		sq += float64(e[2] * e[2])
		gr += float64(g[2] * r[2])
		gg += float64(g[2] * g[2])
		rr += float64(r[2] * r[2])
		mere += m[3]
		sq += float64(e[3] * e[3])
		gr += float64(g[3] * r[3])
		gg += float64(g[3] * g[3])
		rr += float64(r[3] * r[3])
	}
	for ; j < len(ms); j++ {
		mere += ms[j]
		sq += float64(es[j] * es[j])
		gr += float64(gs[j] * rs[j])
		gg += float64(gs[j] * gs[j])
		rr += float64(rs[j] * rs[j])
	}
	s.mere, s.sq, s.gr, s.gg, s.rr = mere, sq, gr, gg, rr
	s.mare = maxNonNeg(s.mare, t.mare)
}

// pow2Below returns 2^x and x for the largest x with 2^x ≤ v, or 1 and 0
// for v = 0 (v ≥ 0). For v = +Inf, an error of two finite fp64 values
// that overflows, it is 2^1023: the terms are then +Inf, and so is RMSE.
func pow2Below(v float64) (float64, int) {
	switch {
	case v == 0:
		return 1, 0
	case math.IsInf(v, 1):
		return 0x1p1023, 1023
	}
	_, x := math.Frexp(v) // v = f·2^x, f in [½, 1)
	return math.Ldexp(1, x-1), x - 1
}

// pow2Recip returns 1/s, true when s is a power of two 2^k whose
// reciprocal 2^−k is normal (−1022 ≤ k ≤ 1022): then x·(1/s) and x/s are
// the same real number rounded once, bit for bit the same for every x,
// and a multiplication does for a division. Otherwise it returns 0,
// false.
func pow2Recip(s float64) (float64, bool) {
	b := math.Float64bits(s)
	if b&(1<<52-1) != 0 || b>>52-1 >= 2045 { // not 2^k with biased exponent 1…2045
		return 0, false
	}
	return math.Float64frombits((2046 - b>>52) << 52), true
}

// chunkOf returns the sums of one chunk whose got values are gv and whose
// references are rv (bound.Expected.Refs), its terms computed into t.
func chunkOf(gv, rv []float64, t *sumTerms) chunkSums {
	rv = rv[:len(gv)]
	maxE, maxV := chunkMax(gv, rv)
	scaleE, xe := pow2Below(maxE)
	scaleV, xv := pow2Below(maxV)
	termsOf(gv, rv, scaleE, scaleV, t)
	c := chunkSums{xe: xe, xv: xv, hasE: maxE > 0, hasV: maxV > 0}
	c.add(t)
	return c
}

// chunkMaxGo returns the largest |g − r| and the largest |g| and |r| over
// the elements where g = gv[j] and r = rv[j] are both finite (+0 when
// there is none): the portable form of chunkMax, which chunkMaxAVX2
// computes four elements at a time (TestChunkMaxMatchesPortable).
func chunkMaxGo(gv, rv []float64) (maxE, maxV float64) {
	rv = rv[:len(gv)]
	for j, g := range gv {
		r := rv[j]
		if isFinite(g) && isFinite(r) {
			maxE = maxNonNeg(maxE, math.Abs(g-r))
			maxV = maxNonNeg(maxV, maxNonNeg(math.Abs(g), math.Abs(r)))
		}
	}
	return maxE, maxV
}

// total adds the chunks' sums in chunk order, each brought to the
// largest scale of its kind.
func total(chunks []chunkSums) sums {
	var s sums
	xv, anyE, anyV := 0, false, false
	for _, c := range chunks {
		if c.hasE && (!anyE || c.xe > s.xe) {
			s.xe, anyE = c.xe, true
		}
		if c.hasV && (!anyV || c.xv > xv) {
			xv, anyV = c.xv, true
		}
	}
	for _, c := range chunks {
		s.mere += c.mere
		s.mare = maxNonNeg(s.mare, c.mare)
		if c.hasE {
			s.sq += math.Ldexp(c.sq, 2*(c.xe-s.xe))
		}
		if c.hasV {
			f := 2 * (c.xv - xv)
			s.gr += math.Ldexp(c.gr, f)
			s.gg += math.Ldexp(c.gg, f)
			s.rr += math.Ldexp(c.rr, f)
		}
	}
	return s
}

// termsOf computes the terms of the elements with got values gv and
// references rv (want.Refs) into t, with the scales given (powers of two).
func termsOf(gv, rv []float64, scaleE, scaleV float64, t *sumTerms) {
	k := len(gv)
	mere, es, gs, rs := t.mere[:k], t.es[:k], t.gs[:k], t.rs[:k]
	mare := terms(gv, rv, mere, es, gs, rs, scaleE, scaleV)
	t.mere, t.es, t.gs, t.rs, t.mare = mere, es, gs, rs, mare
}

// termsGo stores the terms of the elements with got g[j] and reference
// r[j] (both finite, else all terms +0) at j of mere, es, gs and rs, and
// returns the largest relative error: the portable form of terms, which
// termsAVX2 computes four elements at a time (TestTermsMatchPortable).
func termsGo(g, r, mere, es, gs, rs []float64, scaleE, scaleV float64) (mare float64) {
	r, mere, es, gs, rs = r[:len(g)], mere[:len(g)], es[:len(g)], gs[:len(g)], rs[:len(g)]
	for j, gj := range g {
		rj := r[j]
		if !isFinite(gj) || !isFinite(rj) {
			mere[j], es[j], gs[j], rs[j] = 0, 0, 0, 0
			continue
		}
		e := math.Abs(gj - rj)
		m := e / (math.Abs(rj) + mereGuard)
		mare = maxNonNeg(mare, m)
		mere[j], es[j], gs[j], rs[j] = m, e/scaleE, gj/scaleV, rj/scaleV
	}
	return mare
}

// termBufs holds the buffers of one chunk's terms, got values and
// references (6·sumChunk float64s, 384 KiB).
var termBufs termBufList

// termBufList is a bounded free list of term buffers. It is not a
// sync.Pool, which every collection empties: a stream of small outputs
// (a fuzzer's) then allocated and cleared a fresh 384 KiB after each
// collection, which itself brought the next one closer.
type termBufList struct {
	mu   sync.Mutex
	free []*[]float64
}

// termBufsKept bounds the list: one buffer per goroutine judging at a
// time, for a few at once.
const termBufsKept = 8

// Get returns a buffer of 6·sumChunk float64s.
func (l *termBufList) Get() *[]float64 {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		b := l.free[n-1]
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return b
	}
	l.mu.Unlock()
	b := make([]float64, 6*sumChunk)
	return &b
}

// Put returns b to the list, or drops it when the list is full.
func (l *termBufList) Put(b *[]float64) {
	l.mu.Lock()
	if len(l.free) < termBufsKept {
		l.free = append(l.free, b)
	}
	l.mu.Unlock()
}

// termsIn returns the term slices of buf (from termBufs) for k elements,
// and the got and reference buffers after them.
func termsIn(buf []float64, k int) (t *sumTerms, gb, rb []float64) {
	t = &sumTerms{mere: buf[:k:k], es: buf[k : 2*k : 2*k], gs: buf[2*k : 3*k : 3*k], rs: buf[3*k : 4*k : 4*k]}
	return t, buf[4*k : 5*k : 5*k], buf[5*k : 6*k : 6*k]
}

// fuseSums lets Stream keep the values of the metrics pass over a compact
// output for its sums (addExact, fusedSums); the tests turn it off to
// compare with the two passes.
var fuseSums = true

// fusedSums is the chunk of n ≤ sumChunk elements whose got values and
// references (bound.Expected.Refs) computeExact kept in buf[4n:5n] and
// buf[5n:6n] (buf from termBufs): the same chunk chunkAt would compute
// from the same values.
func fusedSums(buf []float64, n int) chunkSums {
	t, gv, rv := termsIn(buf, n)
	return chunkOf(gv, rv, t)
}

// addExact judges the whole output (Compute, or a Stream given one
// block) against want, a compact Expected that computeExact reads through
// its exact values (exactReadable), a chunk at a time on each core: the
// chunk's metrics, keeping the got values and references they convert
// and evaluate, then its sums from those (fusedSums), where add would
// convert and evaluate them again for the sums; the same bits
// (TestComputeFusedMatchesTwoPasses). Compute judges an output of one
// chunk the same way, without a Stream on the heap.
func (s *Stream) addExact(want *bound.Expected) {
	s.byChunks(func(p *metricsPart, c0, c1 int) {
		bp := termBufs.Get()
		defer termBufs.Put(bp)
		for c := c0; c < c1; c++ {
			s.exactChunk(p, want, *bp, c)
		}
	})
}

// byChunks is the whole output's one pass of addExact and addCopied: the
// chunks split over all cores in ranges [c0, c1), each range's metrics
// gathered by judge into a part of its own, the parts merged into the
// stream's figures as they finish. judge sets each of its chunks' sums.
func (s *Stream) byChunks(judge func(p *metricsPart, c0, c1 int)) {
	var mu sync.Mutex
	parallel.For(len(s.chunks), streamGrain/sumChunk, func(c0, c1 int) {
		p := newMetricsPart()
		judge(p, c0, c1)
		mu.Lock()
		s.acc.merge(p, 0)
		mu.Unlock()
	})
}

// exactChunk gathers chunk c's metrics into p and sets its sums, with
// buf (from termBufs) as scratch.
func (s *Stream) exactChunk(p *metricsPart, want *bound.Expected, buf []float64, c int) {
	a := c * sumChunk
	k := min(sumChunk, s.n-a)
	computeExact(p, s.got, want, a, a+k, buf[4*k:5*k], buf[5*k:6*k], true)
	s.chunks[c] = fusedSums(buf, k)
}

// chunksOf computes the sums of the chunks that start at lo, lo+sumChunk,
// … below hi (lo a chunk boundary; each chunk ends sumChunk later or at
// hi, which is then the end of the output) into out (out[0] is the chunk
// at lo). The elements' got values are got's, their references want's
// from index lo−off on. The chunks run over all cores.
func chunksOf(got *tensor.Tensor, want *bound.Expected, off, lo, hi int, out []chunkSums) {
	chunks := (hi - lo + sumChunk - 1) / sumChunk
	parallel.For(chunks, 1, func(c0, c1 int) {
		for c := c0; c < c1; c++ {
			a := lo + c*sumChunk
			out[c] = chunkAt(got, a, min(sumChunk, hi-a), func(rb []float64) []float64 { return want.Refs(a-off, rb) })
		}
	})
}

// chunkAt returns the sums of the chunk of k elements from a of got,
// whose references refs returns (in rb, which it may fill, or elsewhere).
func chunkAt(got *tensor.Tensor, a, k int, refs func(rb []float64) []float64) chunkSums {
	bp := termBufs.Get()
	defer termBufs.Put(bp)
	t, gb, rb := termsIn(*bp, k)
	got.Float64sFrom(a, gb)
	return chunkOf(gb, refs(rb), t)
}
