package npu

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// shadowSeeds is how many seeded random access sequences
// TestShadowDifferential runs (seeds 1 … shadowSeeds).
const shadowSeeds = 400

// TestShadowDifferential drives the run-based shadow (shadow.go) and the
// per-granule one it replaced (refShadow) with the same seeded random
// sequences of what a block does to its local memory: instructions on
// every pipe reading and writing ranges, partial granules and strided
// rows (overlapping ones too) of buffers that overlap one another;
// waits that advance the pipes' and the scalar's vector clocks;
// allocations (resets), views written on the host, buffers dying, the
// scalar's reads and writes, and the accumulator initcheck. After every
// step both must have recorded the same findings and hold the same
// history for every granule, and the runs must be sorted and merged.
func TestShadowDifferential(t *testing.T) {
	for seed := uint64(1); seed <= shadowSeeds; seed++ {
		if msg := shadowDiff(seed, 150); msg != "" {
			t.Fatalf("seed %d: %s", seed, msg)
		}
	}
}

// shadowCore returns an explicit-mode core with the sanitizer on and
// small granules, as a launch's would be before its first instruction.
func shadowCore() *Core {
	c := &Core{BlockIdx: 3, san: true}
	for s := range numSpaces {
		c.mem[s] = arena{space: s, align: 32 << (s % 2)} // 32 or 64 B granules
	}
	c.sch.reset(true, nil)
	c.sch.mode = SyncExplicit
	return c
}

// shadowDiff runs the sequence of seed, steps long, on both shadows and
// returns what first differed ("" when nothing did).
func shadowDiff(seed uint64, steps int) string {
	rng := rand.New(rand.NewPCG(seed, 0x5ad0))
	cn, cr := shadowCore(), shadowCore() // the run-based shadow; the reference's core
	var ref refShadow
	both := func(f func(c *Core)) { f(cn); f(cr) }

	// Buffers at random granule-aligned offsets, overlapping one another
	// (a freed buffer's bytes reused by the next), over ~64 granules.
	var bufs []*Buffer
	for range 3 + rng.IntN(6) {
		sp := Space(rng.IntN(int(numSpaces)))
		g := cn.mem[sp].align
		bufs = append(bufs, &Buffer{space: sp, off: g * rng.IntN(48), data: make([]byte, g*(1+rng.IntN(16))), live: true})
	}
	pick := func() *Buffer { return bufs[rng.IntN(len(bufs))] }
	// span returns a random byte range of b, sometimes empty or past
	// its end (clipped, as granules does).
	span := func(b *Buffer) (lo, n int) {
		lo = rng.IntN(len(b.data) + 8)
		return lo, rng.IntN(len(b.data) + 40)
	}
	ops := []string{"DataCopyIn", "Add", "Mmad", "LoadL0", "DataCopyOut", "Cast"}

	for step := range steps {
		var what string
		switch r := rng.IntN(100); {
		case r < 45: // an instruction with one to three operands
			p := Pipe(rng.IntN(int(numPipes)))
			op := ops[rng.IntN(len(ops))]
			var os []operand
			for i := range 1 + rng.IntN(3) {
				b := pick()
				if i > 0 && rng.IntN(2) == 0 { // another operand of the same buffer
					b = os[i-1].b
				}
				o := operand{b: b, read: rng.IntN(3) != 0, anon: rng.IntN(8) == 0}
				o.write = !o.read || rng.IntN(3) == 0
				o.lo, o.n = span(b)
				switch rng.IntN(6) { // strided rows, some overlapping
				case 0:
					o.rows, o.stride = 1+rng.IntN(5), rng.IntN(2*o.n+70)
				case 1: // abutting, or sharing a few bytes (one granule)
					o.rows, o.stride = 2+rng.IntN(4), max(o.n+rng.IntN(17)-8, 0)
				}
				os = append(os, o)
			}
			what = fmt.Sprintf("%s on %s:", op, p)
			for _, o := range os {
				what += fmt.Sprintf(" {%s@%#x lo=%d n=%d read=%v write=%v anon=%v rows=%d stride=%d}", o.b.space, o.b.off, o.lo, o.n, o.read, o.write, o.anon, o.rows, o.stride)
			}
			both(func(c *Core) {
				s := &c.sch
				s.seq[p]++
				s.vc[p][p] = s.seq[p]
				idx := int32(len(s.insts))
				s.insts = append(s.insts, instInfo{op: op, p: p, seq: s.seq[p]})
				if c == cn {
					c.scalarWrites()
				} else {
					ref.scalarWrites(c)
				}
				for _, o := range os {
					if c == cn {
						c.shadowAccess(idx, o)
					} else {
						ref.shadowAccess(c, idx, o)
					}
				}
				s.viewed = s.viewed[:0]
			})
		case r < 60: // a wait: pipe p (or the scalar) now sees q up to some instruction
			p, q := Pipe(rng.IntN(int(numPipes)+1)), Pipe(rng.IntN(int(numPipes)))
			upto := rng.Int32N(cn.sch.seq[q] + 1)
			what = fmt.Sprintf("%s waits for %s#%d", p, q, upto)
			both(func(c *Core) {
				if p == PipeS {
					c.sch.sVC[q] = max(c.sch.sVC[q], upto)
				} else {
					c.sch.vc[p][q] = max(c.sch.vc[p][q], upto)
				}
			})
		case r < 68: // an allocation over b's bytes
			b := pick()
			what = fmt.Sprintf("alloc %s@%#x+%d", b.space, b.off, len(b.data))
			b.live = true
			cn.shadowReset(b)
			ref.shadowReset(cr, b)
		case r < 76: // a view: the host may write b before the next access
			b := pick()
			what = fmt.Sprintf("view %s@%#x", b.space, b.off)
			both(func(c *Core) { c.noteView(b) })
		case r < 80: // b freed (its view no longer marks it written)
			b := pick()
			what = fmt.Sprintf("free %s@%#x", b.space, b.off)
			b.live = false
		case r < 90: // the scalar reads or writes
			b := pick()
			off := rng.IntN(len(b.data))
			n := 1 + rng.IntN(len(b.data)-off)
			write := rng.IntN(2) == 0
			what = fmt.Sprintf("scalar write=%v %s@%#x [%d, %d)", write, b.space, b.off, off, off+n)
			both(func(c *Core) {
				c.sch.sSeq++
				if c == cn {
					c.scalarWrites()
					if write {
						c.scalarWriteCheck(b, off, n)
					} else {
						c.scalarCheck(b, off, n)
					}
				} else {
					ref.scalarWrites(c)
					if write {
						ref.scalarWriteCheck(c, b, off, n)
					} else {
						ref.scalarCheck(c, b, off, n)
					}
				}
				c.sch.viewed = c.sch.viewed[:0]
			})
		default: // an Mmad's accumulator, either sync mode
			b := pick()
			n, init := rng.IntN(len(b.data)+1), rng.IntN(3) == 0
			mode := SyncMode(rng.IntN(2))
			what = fmt.Sprintf("accInit %s@%#x n=%d init=%v mode=%d", b.space, b.off, n, init, mode)
			both(func(c *Core) { c.sch.mode = mode })
			cn.accInit("Mmad", b, n, init)
			ref.accInit(cr, "Mmad", b, n, init)
			both(func(c *Core) { c.sch.mode = SyncExplicit })
		}
		if got, want := cn.sch.findings, cr.sch.findings; !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("step %d (%s): findings differ:\ngot  %v\nwant %v", step, what, got, want)
		}
		both(func(c *Core) { c.sch.findings = c.sch.findings[:0] })
		for sp := range numSpaces {
			if msg := shadowState(&cn.shadow[sp], ref.sh[sp]); msg != "" {
				return fmt.Sprintf("step %d (%s): %s shadow: %s", step, what, sp, msg)
			}
		}
	}
	return ""
}

// shadowState compares m, expanded to one cell per granule, with the
// reference's cells (granules past them never written) and checks that
// its runs are sorted, start at granule 0 and are merged.
func shadowState(m *shadowMem, want []cell) string {
	for i, r := range m.runs {
		switch {
		case i == 0 && r.lo != 0:
			return fmt.Sprintf("first run at granule %d, not 0: %v", r.lo, m.runs)
		case i > 0 && r.lo <= m.runs[i-1].lo:
			return fmt.Sprintf("runs %d and %d out of order: %v", i-1, i, m.runs)
		case i > 0 && r.c == m.runs[i-1].c:
			return fmt.Sprintf("runs %d and %d not merged: %v", i-1, i, m.runs)
		}
	}
	n := len(want) + 2
	if k := len(m.runs); k > 0 {
		n = max(n, int(m.runs[k-1].lo)+2)
	}
	got := make([]cell, 0, n)
	m.each(0, n, func(k, e int, c cell) bool {
		for range e - k {
			got = append(got, c)
		}
		return true
	})
	for k := range n {
		var w cell
		if k < len(want) {
			w = want[k]
		}
		if got[k] != w {
			return fmt.Sprintf("granule %d: got %+v want %+v", k, got[k], w)
		}
	}
	return ""
}
