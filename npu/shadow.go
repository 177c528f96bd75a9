package npu

import "slices"

// The sanitizer's shadow of one local memory, kept as runs of granules
// that share a history rather than one cell per granule. A kernel writes
// and reads its buffers in large pieces (a copy in fills a tile, a vector
// instruction reads and writes whole rows), so a UB of 6,144 granules
// holds a few dozen distinct histories at a time: an access then costs a
// binary search and a pass over the runs it overlaps, not one cell per
// granule it touches (half the CPU time of an explicit-mode vector_add
// was that walk). The checks in sanitizer.go, scalar.go and
// sanitizer_acc.go see the same thing either way: a granule's history is
// its run's cell.

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
	out  []run // update's scratch, reused
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

// update rewrites granules [first, last) piece by piece: each maximal
// range [k, e) of granules with one history, in order, is handed to f,
// which may change the cell (the history of all of them). The pieces are
// decided before f runs, so f sees the histories as they were; a range
// starts a piece at first even inside a run, as a walk over the
// granules from first would.
func (m *shadowMem) update(first, last int, f func(k, e int, c *cell)) {
	if first >= last {
		return
	}
	if len(m.runs) == 0 {
		m.runs = append(m.runs, run{})
	}
	i, j := m.find(first), m.find(last-1)
	// Rebuild runs [i0, j1): those [first, last) overlaps and one
	// neighbour each side, into which the new pieces may merge.
	i0, j1 := max(i-1, 0), min(j+2, len(m.runs))
	out := m.out[:0]
	push := func(lo int, c cell) {
		if n := len(out); n > 0 && out[n-1].c == c {
			return
		}
		out = append(out, run{lo: int32(lo), c: c})
	}
	for t := i0; t < i; t++ {
		push(int(m.runs[t].lo), m.runs[t].c)
	}
	if int(m.runs[i].lo) < first {
		push(int(m.runs[i].lo), m.runs[i].c)
	}
	for t := i; t <= j; {
		k, c := max(int(m.runs[t].lo), first), m.runs[t].c
		u := t + 1
		for u <= j && m.runs[u].c == c {
			u++
		}
		e := last
		if u <= j {
			e = int(m.runs[u].lo)
		}
		f(k, e, &c)
		push(k, c)
		t = u
	}
	if j+1 == len(m.runs) || int(m.runs[j+1].lo) > last {
		push(last, m.runs[j].c)
	}
	for t := j + 1; t < j1; t++ {
		push(int(m.runs[t].lo), m.runs[t].c)
	}
	m.out = out
	m.runs = slices.Replace(m.runs, i0, j1, out...)
}
