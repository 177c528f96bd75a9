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
//     offsets (0, sumChunk, 2·sumChunk, …);
//   - a chunk's sums are taken in four lanes: lane l adds the terms of
//     the chunk's elements j ≡ l (mod 4) in index order, from +0, and
//     the chunk's sum is (lane 0 + lane 1) + (lane 2 + lane 3);
//   - the chunks' sums are added in chunk order.
//
// The lanes are the vector unit's (termSumsAVX2 adds four elements a
// step, one to each lane): a single chain added in index order waits
// out an addition's latency per element, which held a quarter of a
// vector_add check's time before the lanes.
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

// laneSums are a chunk's sums while they are taken, lane l of each
// holding the terms of the elements j ≡ l (mod 4) added in index order
// (the layout termSumsAVX2 reads and writes: five [4]float64 in a row).
// An element that is not compared (g or r non-finite) adds nothing:
// every lane starts at +0 and none ever holds −0 (its terms are ≥ 0, or
// for Σgr, a sum is −0 only when both addends are), so a +0 term would
// leave it unchanged, bit for bit, as not adding at all.
type laneSums struct {
	mere, sq, gr, gg, rr [4]float64
}

// fold is a lane sum's total: (lane 0 + lane 1) + (lane 2 + lane 3).
func fold(l [4]float64) float64 { return (l[0] + l[1]) + (l[2] + l[3]) }

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
// references are rv (bound.Expected.Refs).
func chunkOf(gv, rv []float64) chunkSums {
	rv = rv[:len(gv)]
	maxE, maxV := chunkMax(gv, rv)
	return chunkWith(gv, rv, maxE, maxV, false)
}

// chunkWith is chunkOf given chunkMax(gv, rv) (the metrics pass finds
// them on the way: valueMax), and finite when every g and r is known to
// be finite.
func chunkWith(gv, rv []float64, maxE, maxV float64, finite bool) chunkSums {
	scaleE, xe := pow2Below(maxE)
	scaleV, xv := pow2Below(maxV)
	var l laneSums
	mare := termSums(gv, rv, scaleE, scaleV, finite, &l)
	return chunkSums{mere: fold(l.mere), sq: fold(l.sq), gr: fold(l.gr), gg: fold(l.gg), rr: fold(l.rr),
		mare: mare, xe: xe, xv: xv, hasE: maxE > 0, hasV: maxV > 0}
}

// valueMax are a chunk's chunkMax figures gathered by its metrics pass
// (computeExact): the largest |g − r| and the largest |g| and |r| over
// its elements with g and r both finite, when ok; nonFinite is whether
// one of its elements has a non-finite g or r.
type valueMax struct {
	e, v          float64
	ok, nonFinite bool
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

// termSumsGo adds the terms of the elements with got g[j] and reference
// r[j] to lane j mod 4 of l (g a whole chunk, or its part from a
// multiple of 4 on): the relative error e/(|r| + 1e-7), (e/scaleE)²,
// (g/scaleV)·(r/scaleV), (g/scaleV)² and (r/scaleV)², e = |g − r|, each
// square or product rounded before it is added (the conversions keep the
// compiler from fusing them into one multiply-add, so the bits are the
// same on every architecture and GOAMD64 level). Elements where g or r
// is not finite add nothing. It returns the largest relative error. It
// is the portable form of termSums, which termSumsAVX2 computes four
// elements at a time (TestTermSumsMatchPortable).
func termSumsGo(g, r []float64, scaleE, scaleV float64, l *laneSums) (mare float64) {
	r = r[:len(g)]
	for j, gj := range g {
		rj := r[j]
		if !isFinite(gj) || !isFinite(rj) {
			continue
		}
		e := math.Abs(gj - rj)
		m := e / (math.Abs(rj) + mereGuard)
		mare = maxNonNeg(mare, m)
		es, gs, rs := e/scaleE, gj/scaleV, rj/scaleV
		k := j & 3
		l.mere[k] += m
		l.sq[k] += float64(es * es)
		l.gr[k] += float64(gs * rs)
		l.gg[k] += float64(gs * gs)
		l.rr[k] += float64(rs * rs)
	}
	return mare
}

// termBufs holds the buffers of one chunk's got values and references,
// or of four copied chunks' references (4·sumChunk float64s, 256 KiB).
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

// Get returns a buffer of 4·sumChunk float64s.
func (l *termBufList) Get() *[]float64 {
	l.mu.Lock()
	if n := len(l.free); n > 0 {
		b := l.free[n-1]
		l.free = l.free[:n-1]
		l.mu.Unlock()
		return b
	}
	l.mu.Unlock()
	b := make([]float64, 4*sumChunk)
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

// valuesIn returns the got and reference buffers of k elements in buf
// (from termBufs).
func valuesIn(buf []float64, k int) (gb, rb []float64) {
	return buf[:k:k], buf[k : 2*k : 2*k]
}

// fuseSums lets Stream keep the values of the metrics pass over a compact
// output for its sums (addExact, fusedSums); the tests turn it off to
// compare with the two passes.
var fuseSums = true

// fusedSums is the chunk of n ≤ sumChunk elements whose got values and
// references (bound.Expected.Refs) computeExact kept in buf[:n] and
// buf[n:2n] (buf from termBufs), with vm what it gathered of them: the
// same chunk chunkAt would compute from the same values.
func fusedSums(buf []float64, n int, vm valueMax) chunkSums {
	gv, rv := valuesIn(buf, n)
	if !vm.ok {
		return chunkOf(gv, rv)
	}
	return chunkWith(gv, rv, vm.e, vm.v, !vm.nonFinite)
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
	if leanChunks && s.leanChunk(p, want, buf, a, k) {
		return
	}
	gb, rb := valuesIn(buf, k)
	var vm valueMax
	computeExact(p, s.got, want, a, a+k, gb, rb, true, &vm)
	s.chunks[c] = fusedSums(buf, k, vm)
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
	gb, rb := valuesIn(*bp, k)
	got.Float64sFrom(a, gb)
	return chunkOf(gb, refs(rb))
}
