package npu

import (
	"math"
	"slices"
)

// The sanitizer's shadow of one local memory, kept as runs of granules
// that share a history rather than one cell per granule. A kernel writes
// and reads its buffers in large pieces (a copy in fills a tile, a vector
// instruction reads and writes whole rows), so a UB of 6,144 granules
// holds a few dozen distinct histories at a time: an access then costs a
// binary search and a pass over the runs it overlaps, not a step per
// granule it touches (profiles put half the kernel CPU of an explicit
// vector_add in that walk). A strided operand's rows are one pass too
// (updateSpans): one splice per row would move the runs after it each
// time, and an L1 panel read block by block holds a run per row and
// block. The checks in sanitizer.go, scalar.go and sanitizer_acc.go see
// the same histories either way: a granule's is its run's cell.

// cell is the shadow of one granule of local memory: the instruction
// (index + 1 into the block's log) that last wrote it, 0 for never,
// hostWrite for the kernel's host code; and per pipe the last reader.
type cell struct {
	w int32
	r [numPipes]int32
}

// hostWrite marks a granule the kernel wrote on the host through a view:
// ordered with every pipe (the scalar unit issues in program order).
const hostWrite = -1

// run is the granules from lo up to the next run's lo (the last run:
// every granule from lo on) and their history.
type run struct {
	lo int32
	c  cell
}

// shadowMem is the shadow of one space: runs sorted by lo, the first at
// granule 0, no two adjacent ones with the same cell (they are merged,
// so the count stays that of the distinct histories). The zero value is
// a space never written.
type shadowMem struct {
	runs []run
	out  []run // updateSpans' scratch, reused
}

// find returns the index of the run holding granule k.
func (m *shadowMem) find(k int) int {
	lo, hi := 0, len(m.runs) // runs[lo].lo <= k < runs[hi].lo
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if int(m.runs[mid].lo) <= k {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// each calls yield for the runs over granules [first, last), in order,
// each clipped to [k, e), until it returns false. The runs are merged
// (no two adjacent ones alike), so each range is a maximal one.
func (m *shadowMem) each(first, last int, yield func(k, e int, c cell) bool) {
	if first >= last {
		return
	}
	if len(m.runs) == 0 {
		yield(first, last, cell{})
		return
	}
	for i := m.find(first); i < len(m.runs) && int(m.runs[i].lo) < last; i++ {
		k, e := max(int(m.runs[i].lo), first), last
		if i+1 < len(m.runs) {
			e = min(e, int(m.runs[i+1].lo))
		}
		if !yield(k, e, m.runs[i].c) {
			return
		}
	}
}

// span is granules [lo, hi).
type span struct{ lo, hi int }

// update rewrites granules [first, last) piece by piece (updateSpans).
func (m *shadowMem) update(first, last int, f func(k, e int, c *cell)) {
	if first < last {
		m.updateSpans([]span{{first, last}}, f)
	}
}

// updateSpans rewrites the granules of spans, sorted and disjoint, none
// empty, piece by piece: each maximal range [k, e) of a span's granules
// with one history, in order, is handed to f, which changes the history
// in place (for all of them). The pieces are decided before f runs, so f
// sees the histories as they were, and each span starts a piece even
// inside a run: what a walk over each span's granules in turn would see,
// in one pass over the runs (a strided operand's rows are one update,
// not one each).
func (m *shadowMem) updateSpans(spans []span, f func(k, e int, c *cell)) {
	if len(m.runs) == 0 {
		m.runs = append(m.runs, run{})
	}
	runs := m.runs
	// Rebuild runs from i0, the run before the first span's (the first
	// piece may merge into it), to t, the one holding the granule after
	// the last span; pos is the next granule to place.
	t := m.find(spans[0].lo)
	i0 := max(t-1, 0)
	out := append(m.out[:0], runs[i0:t]...)
	pos := int(runs[t].lo)
	for _, s := range spans {
		if pos < s.lo { // up to the span: the runs as they were
			out = appendRun(out, &runs[t], pos)
			a := t + 1
			for a < len(runs) && int(runs[a].lo) < s.lo {
				a++
			}
			out = append(out, runs[t+1:a]...)
			t, pos = a-1, s.lo
			if a < len(runs) && int(runs[a].lo) == s.lo {
				t = a
			}
		}
		for pos < s.hi {
			k, first := pos, t
			for m.end(t) < s.hi && runs[t+1].c == runs[first].c {
				t++
			}
			e := min(m.end(t), s.hi)
			out = append(out, runs[first])
			p := &out[len(out)-1]
			p.lo = int32(k)
			f(k, e, &p.c)
			if n := len(out); n > 1 && out[n-2].c == p.c {
				out = out[:n-1]
			}
			if pos = e; pos == m.end(t) {
				t++
			}
		}
	}
	out = appendRun(out, &runs[t], pos)
	m.out = out
	m.runs = slices.Replace(runs, i0, t+1, out...)
}

// end returns the granule past run t.
func (m *shadowMem) end(t int) int {
	if t+1 < len(m.runs) {
		return int(m.runs[t+1].lo)
	}
	return math.MaxInt
}

// appendRun appends r's history from granule lo on to out, or leaves out
// alone when its last run has that history already (it extends over lo).
func appendRun(out []run, r *run, lo int) []run {
	if n := len(out); n > 0 && out[n-1].c == r.c {
		return out
	}
	out = append(out, *r)
	out[len(out)-1].lo = int32(lo)
	return out
}
