package verify

import (
	"math"
	"runtime"
	"sync"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// The floating sums of Compute (MERE, RMSE, cosine) are added in index
// order, so that their rounding is that of a single loop however the
// work is split. What is added at each element is a function of that
// element and the scales alone, so the terms are computed over all cores
// a chunk at a time, and one goroutine adds the chunks' terms in order,
// each chunk as soon as it is ready: the divisions run in parallel, only
// the additions in sequence.

// sumChunk is how many elements' terms are computed at a time.
const sumChunk = 8192

// sumTerms are the terms of one chunk, one entry per element: the
// relative error e/(|r| + 1e-7), e/scaleE and g/scaleV, r/scaleV. An
// element that is not compared (g or r non-finite), or a sum whose scale
// is 0, has +0 terms: every sum starts at +0 and none ever holds −0 (its
// terms are ≥ 0, or for Σgr, a sum is −0 only when both addends are), so
// adding +0 leaves it unchanged, bit for bit, as not adding at all.
type sumTerms struct {
	mere, es, gs, rs []float64
	mare             float64 // the largest relative error of the chunk
}

// sums are the running sums of Compute.
type sums struct {
	mere, sq, gr, gg, rr float64
	mare                 float64
}

// add adds the terms of one chunk, in index order.
func (s *sums) add(t *sumTerms) {
	mere, sq, gr, gg, rr := s.mere, s.sq, s.gr, s.gg, s.rr
	es, gs, rs := t.es[:len(t.mere)], t.gs[:len(t.mere)], t.rs[:len(t.mere)]
	for j, m := range t.mere {
		mere += m
		// Each square or product is rounded before it is added (the
		// conversions keep the compiler from fusing them into one
		// multiply-add), so the sums' bits are the same on every
		// architecture and GOAMD64 level.
		sq += float64(es[j] * es[j])
		gr += float64(gs[j] * rs[j])
		gg += float64(gs[j] * gs[j])
		rr += float64(rs[j] * rs[j])
	}
	s.mere, s.sq, s.gr, s.gg, s.rr = mere, sq, gr, gg, rr
	s.mare = maxNonNeg(s.mare, t.mare)
}

// fillTerms computes the terms of elements [lo, hi) into t. A zero
// scale is replaced by 1: a scale is 0 only when every compared element
// has e = 0 (scaleE) or g = r = ±0 (scaleV), whose quotients by 1 are
// then ±0, and adding ±0 leaves the sums +0 as not adding does.
func fillTerms(got *tensor.Tensor, want *bound.Expected, lo, hi int, scaleE, scaleV float64, t *sumTerms, gb, rb []float64) {
	k := hi - lo
	gv := gb[:k]
	got.Float64sFrom(lo, gv)
	rv := want.Refs(lo, rb[:k])[:k]
	termsOf(gv, rv, scaleE, scaleV, t)
}

// termsOf computes the terms of the elements with got values gv and
// references rv (want.Refs) into t: fillTerms once the values are in.
func termsOf(gv, rv []float64, scaleE, scaleV float64, t *sumTerms) {
	k := len(gv)
	mere, es, gs, rs := t.mere[:k], t.es[:k], t.gs[:k], t.rs[:k]
	if scaleE == 0 {
		scaleE = 1
	}
	if scaleV == 0 {
		scaleV = 1
	}
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

// serialTermBufs holds the single-worker path's buffers (terms, got and
// reference values of one chunk: 6·sumChunk float64s, 384 KiB).
var serialTermBufs termBufList

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

// newSumTerms allocates the term buffers of one chunk.
func newSumTerms(k int) *sumTerms {
	buf := make([]float64, 4*k)
	return &sumTerms{mere: buf[:k:k], es: buf[k : 2*k : 2*k], gs: buf[2*k : 3*k : 3*k], rs: buf[3*k:]}
}

// fuseSums lets Compute keep the values of its metrics pass for the sums
// (fusedSums); the tests turn it off to compare with the two passes.
var fuseSums = true

// fusedSums is orderedSums of the n ≤ sumChunk elements of a compact
// Expected whose got values and references (bound.Expected.Refs)
// computeExact kept in buf[4n:5n] and buf[5n:6n] (buf from
// serialTermBufs, 6·sumChunk long): the one chunk's terms are those
// fillTerms would compute from the same values.
func fusedSums(buf []float64, n int, scaleE, scaleV float64) sums {
	gv, rv := buf[4*n:5*n:5*n], buf[5*n:6*n:6*n]
	t := &sumTerms{mere: buf[:n:n], es: buf[n : 2*n : 2*n], gs: buf[2*n : 3*n : 3*n], rs: buf[3*n : 4*n : 4*n]}
	termsOf(gv, rv, scaleE, scaleV, t)
	var s sums
	s.add(t)
	return s
}

// orderedSums returns the sums of elements [0, n) of got against want:
// chunks' terms computed by one worker per core (worker w takes chunks
// w, w+P, w+2P, … in order, into two buffers of its own), added by the
// calling goroutine in chunk order.
func orderedSums(got *tensor.Tensor, want *bound.Expected, n int, scaleE, scaleV float64) sums {
	var s sums
	chunks := (n + sumChunk - 1) / sumChunk
	workers := min(runtime.GOMAXPROCS(0), chunks)
	if workers <= 1 {
		// One chunk's buffers from a pool: small outputs (a fuzzer's) are
		// judged millions of times, and 48 bytes an element of fresh
		// buffers each time was most of what a judgement allocated.
		bp := serialTermBufs.Get()
		defer serialTermBufs.Put(bp)
		k := min(sumChunk, n)
		buf := (*bp)[:6*k]
		t := &sumTerms{mere: buf[:k:k], es: buf[k : 2*k : 2*k], gs: buf[2*k : 3*k : 3*k], rs: buf[3*k : 4*k : 4*k]}
		gb, rb := buf[4*k:5*k:5*k], buf[5*k:]
		for lo := 0; lo < n; lo += sumChunk {
			fillTerms(got, want, lo, min(lo+sumChunk, n), scaleE, scaleV, t, gb, rb)
			s.add(t)
		}
		return s
	}
	type slot struct {
		t           *sumTerms
		free, ready chan struct{}
	}
	slots := make([][2]slot, workers)
	for w := range slots {
		for b := range slots[w] {
			slots[w][b] = slot{t: newSumTerms(sumChunk), free: make(chan struct{}, 1), ready: make(chan struct{}, 1)}
			slots[w][b].free <- struct{}{}
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			gb, rb := make([]float64, sumChunk), make([]float64, sumChunk)
			for c := w; c < chunks; c += workers {
				sl := &slots[w][(c/workers)%2]
				<-sl.free
				lo := c * sumChunk
				fillTerms(got, want, lo, min(lo+sumChunk, n), scaleE, scaleV, sl.t, gb, rb)
				sl.ready <- struct{}{}
			}
		})
	}
	for c := range chunks {
		sl := &slots[c%workers][(c/workers)%2]
		<-sl.ready
		s.add(sl.t)
		sl.free <- struct{}{}
	}
	wg.Wait()
	return s
}
