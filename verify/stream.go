package verify

import (
	"fmt"
	"math"
	"sync"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
)

// Stream computes the Metrics of one output from its Expected handed in
// a block of consecutive elements at a time, in index order, so that a
// large output is judged without its whole Expected in memory (a GEMM's
// takes 17 bytes per element, four times its fp32 output). The Metrics
// are Compute's on the whole Expected, bit for bit, however the output
// is cut into blocks (TestStreamMatchesCompute): the order-free figures
// are merged, and the floating sums keep their fixed association
// (sums.go), a chunk that straddles two blocks waiting for the second
// with its first part's references kept.
//
// A Stream belongs to one goroutine.
type Stream struct {
	got    *tensor.Tensor
	n      int // elements judged
	next   int // the first element not added yet
	acc    *metricsPart
	chunks []chunkSums
	// carry holds the references of elements [next − next%sumChunk, next):
	// the part of a chunk added so far, whose sums wait for the rest.
	carry []float64
}

// NewStream returns a Stream that judges got's elements; every one of
// them must be added (Add) before Metrics.
func NewStream(got *tensor.Tensor) *Stream {
	return newStream(got, got.Len())
}

// newStream is NewStream judging got's first n elements.
func newStream(got *tensor.Tensor, n int) *Stream {
	return &Stream{
		got:    got,
		n:      n,
		acc:    newMetricsPart(),
		chunks: make([]chunkSums, (n+sumChunk-1)/sumChunk),
	}
}

// Added is how many elements have been added.
func (s *Stream) Added() int { return s.next }

// Add judges the next want.Span() elements of the output: element j of
// want describes element Added()+j. want is not retained, so a caller
// may fill the same Expected again for the next block. It fails, adding
// nothing, when want is malformed or describes elements past the end.
func (s *Stream) Add(want *bound.Expected) error {
	if err := want.Check(); err != nil {
		return fmt.Errorf("elements from %d: %w", s.next, err)
	}
	k := want.Span()
	if k > s.n-s.next {
		return fmt.Errorf("elements [%d, %d): the output has %d", s.next, s.next+k, s.n)
	}
	s.add(want, k)
	return nil
}

// streamGrain is the fewest elements add gives a core.
const streamGrain = 1 << 14

// add judges elements [next, next+k) against want's first k.
func (s *Stream) add(want *bound.Expected, k int) {
	if k == 0 {
		return
	}
	if s.next == 0 && k == s.n {
		if fuseSums && exactReadable(s.got, want) {
			s.addExact(want)
			s.next = k
			return
		}
		if cc := newCopiedChunks(s.got, want); cc != nil {
			s.addCopied(want, cc)
			s.next = k
			return
		}
	}
	b0, b1 := s.next, s.next+k
	view := s.got
	if b0 > 0 || b1 < s.got.Len() {
		view = s.got.Window(b0, k)
	}
	var mu sync.Mutex
	parallel.For(k, streamGrain, func(lo, hi int) {
		p := computePart(view, want, lo, hi)
		mu.Lock()
		s.acc.merge(p, b0)
		mu.Unlock()
	})
	s.addSums(want, b0, b1)
	s.next = b1
}

// addSums computes the sums of every chunk that elements [b0, b1) (want
// from its index 0) complete, and keeps the references of a chunk they
// leave incomplete.
func (s *Stream) addSums(want *bound.Expected, b0, b1 int) {
	pos := b0
	if r := b0 % sumChunk; r != 0 {
		// The chunk begun by an earlier block.
		c0 := b0 - r
		end := min(c0+sumChunk, s.n)
		if b1 < end {
			s.keep(want, 0, b1-b0)
			return
		}
		s.chunks[c0/sumChunk] = chunkAt(s.got, c0, end-c0, func(rb []float64) []float64 {
			copy(rb, s.carry)
			copy(rb[r:], want.Refs(0, rb[r:]))
			return rb
		})
		s.carry = s.carry[:0]
		pos = end
	}
	end := pos + (b1-pos)/sumChunk*sumChunk
	if b1 == s.n {
		end = b1 // the last chunk ends with the output
	}
	if end > pos {
		chunksOf(s.got, want, b0, pos, end, s.chunks[pos/sumChunk:])
	}
	if end < b1 {
		s.keep(want, end-b0, b1-end)
	}
}

// keep appends the references of want's elements [off, off+k) to carry.
func (s *Stream) keep(want *bound.Expected, off, k int) {
	if s.carry == nil {
		s.carry = make([]float64, 0, sumChunk)
	}
	n := len(s.carry)
	s.carry = s.carry[:n+k]
	copy(s.carry[n:], want.Refs(off, s.carry[n:]))
}

// Metrics returns the metrics of the output; it fails when some element
// has not been added.
func (s *Stream) Metrics() (Metrics, error) {
	if s.next != s.n {
		return Metrics{}, fmt.Errorf("metrics after %d of %d elements", s.next, s.n)
	}
	return s.metrics(), nil
}

// metrics is Metrics once every element is in.
func (s *Stream) metrics() Metrics {
	p := s.acc
	m := Metrics{UlpHist: map[string]int{}, Cosine: 1, N: s.n, FirstBad: p.firstBad}
	m.Ambiguous, m.AmbiguousTaken = p.ambiguous, p.ambiguousTaken
	m.NonFiniteMismatch, m.NotRounded, m.OutOfBound = p.mismatch, p.notRounded, p.outOfBound
	m.Compared = p.compared
	m.MaxAbs, m.MaxRel, m.Tightness = p.maxAbs, p.maxRel, p.tightness
	for i, c := range p.hist {
		if c > 0 {
			m.UlpHist[UlpBuckets[i]] = c
		}
	}
	sm := total(s.chunks)
	m.MARE = sm.mare
	if m.Compared > 0 {
		c := float64(m.Compared)
		m.MERE = sm.mere / c
		m.RMSE = math.Ldexp(math.Sqrt(sm.sq/c), sm.xe)
		m.ErrRatio1e3 = float64(p.over1e3) / c
		m.ErrRatio5e3 = float64(p.over5e3) / c
		switch {
		case sm.gg == 0 && sm.rr == 0:
			m.Cosine = 1
		case sm.gg == 0 || sm.rr == 0:
			m.Cosine = 0
		default:
			m.Cosine = math.Max(-1, math.Min(1, sm.gr/math.Sqrt(sm.gg*sm.rr)))
		}
	}
	m.Worst = p.worst.elements()
	return m
}

// merge adds the figures of part q, whose element indices are shift
// below the output's, to p.
func (p *metricsPart) merge(q *metricsPart, shift int) {
	p.ambiguous += q.ambiguous
	p.ambiguousTaken += q.ambiguousTaken
	p.mismatch += q.mismatch
	p.notRounded += q.notRounded
	p.outOfBound += q.outOfBound
	if q.firstBad >= 0 && (p.firstBad < 0 || q.firstBad+shift < p.firstBad) {
		p.firstBad = q.firstBad + shift
	}
	p.compared += q.compared
	p.over1e3 += q.over1e3
	p.over5e3 += q.over5e3
	p.maxAbs = math.Max(p.maxAbs, q.maxAbs)
	p.maxRel = math.Max(p.maxRel, q.maxRel)
	p.tightness = math.Max(p.tightness, q.tightness)
	for i, c := range q.hist {
		p.hist[i] += c
	}
	for _, it := range q.worst.items {
		e := it.e
		e.Index += shift
		p.worst.add(e, it.key1, it.key2)
	}
}
