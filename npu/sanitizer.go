package npu

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// The sanitizer holds a kernel in SyncExplicit mode to its own
// synchronisation, as CANN's msSanitizer and NVIDIA's compute-sanitizer
// (racecheck, initcheck, synccheck) do on hardware. A sequential emulator
// computes the right numbers whatever the synchronisation, so these bugs
// (a missing wait after a copy in, a ping-pong buffer overwritten while
// its store drains) are otherwise invisible until they fail
// intermittently on the device.
//
// Happens-before between pipes is tracked with vector clocks: every pipe
// knows, per other pipe, how many of its instructions are ordered before
// its own next one (through SetFlag/WaitFlag, the queue hand-off and
// PipeBarrier). Every local-memory granule (the space's alignment: 32 B
// in UB and L1) remembers its last writer and, per pipe, its last reader.
// An access is then checked:
//
//   - RAW: a read of bytes whose writer on another pipe is not ordered
//     before it (read before the producing pipe signalled); the scalar
//     unit's reads (Core.ScalarRead, pipe S) likewise, ordered only by
//     its waits (WaitFlag(p, PipeS, id)), PipeBarrier(PipeAll) and
//     SyncAll (scalar.go);
//   - WAR / WAW: a write over bytes another pipe still reads or writes;
//     the scalar unit's writes (Core.ScalarWrite) likewise, over bytes a
//     pipe it has not waited for still reads or writes;
//   - uninit: a read of bytes no instruction (nor the kernel on the host,
//     through a view) wrote since the allocation;
//   - gm-overlap: two cores of one launch writing the same GM bytes, with
//     no SyncAll or cross-core flag ordering the two (xcore.go);
//   - xcore-race: a read of GM bytes another core of the launch writes,
//     with no SyncAll or cross-core flag ordering the two (xcore.go);
//   - deadlock / flag: a WaitFlag, DeQue or AllocTensor that would wait
//     forever, an event set and never waited for; across cores a barrier
//     skipped or a cross-core flag never set (syncall.go, crossflag.go).
//
// Each finding names the core, the pipe, the buffer and byte range and
// the two instructions. A launch returns its findings on its Cost
// (Cost.Findings); the emulator backend reports them as failures of the
// check "sanitizer", as it does guard-band hits. Implicit-mode cores'
// pipes are not checked: their order is derived from their data flow. The
// cross-core check and the accumulator initcheck (sanitizer_acc.go) hold
// both modes: no derived order makes those right.

// Finding kinds.
const (
	KindRAW       = "RAW"
	KindWAR       = "WAR"
	KindWAW       = "WAW"
	KindUninit    = "uninit"
	KindGMOverlap = "gm-overlap"
	KindDeadlock  = "deadlock"
	KindFlag      = "flag-mismatch"
)

// Finding is one sanitizer finding.
type Finding struct {
	Kind string `json:"kind"`
	Core int    `json:"core"`
	Pipe Pipe   `json:"-"`
	// Buffer is the local buffer (space and offset) or GM tensor, Lo and
	// Hi the byte range within it.
	Buffer string `json:"buffer,omitempty"`
	Lo     int    `json:"lo"`
	Hi     int    `json:"hi"`
	// Inst is the instruction that made the access, Other the one it
	// conflicts with (empty for uninit and deadlock findings).
	Inst    string `json:"inst,omitempty"`
	Other   string `json:"other,omitempty"`
	Message string `json:"message"`
}

// String returns the finding's message.
func (f Finding) String() string { return f.Message }

// maxFindings caps the findings of one block: a missing wait in a tile
// loop would otherwise report every tile.
const maxFindings = 16

// finding records f unless one of its kind on the same pipe, buffer and
// instruction pair was recorded already.
func (c *Core) finding(f Finding) {
	s := &c.sch
	if len(s.findings) >= maxFindings {
		return
	}
	for _, g := range s.findings {
		if g.Kind == f.Kind && g.Pipe == f.Pipe && g.Buffer == f.Buffer && opName(g.Inst) == opName(f.Inst) && opName(g.Other) == opName(f.Other) && (f.Inst != "" || g.Message == f.Message) {
			return
		}
	}
	s.findings = append(s.findings, f)
}

// opName strips the sequence number from an instruction's name.
func opName(inst string) string {
	if i := strings.LastIndexByte(inst, '#'); i >= 0 {
		return inst[:i]
	}
	return inst
}

type sanitizerKey struct{}

// WithSanitizer returns a context under which launches check explicit-mode
// kernels (on, the default) or skip the checks (off: a benchmark that
// wants only the cycles).
func WithSanitizer(ctx context.Context, on bool) context.Context {
	return context.WithValue(ctx, sanitizerKey{}, on)
}

func sanitizerOn(ctx context.Context) bool {
	on, ok := ctx.Value(sanitizerKey{}).(bool)
	return !ok || on
}

// granules returns b's bytes [lo, lo+n) as a granule range of its space.
func (c *Core) granules(b *Buffer, lo, n int) (first, last int) {
	g := c.mem[b.space].align
	n = min(n, len(b.data)-lo)
	if n <= 0 {
		return 0, 0
	}
	return (b.off + lo) / g, (b.off + lo + n + g - 1) / g
}

// shadowReset marks b never written (at allocation).
func (c *Core) shadowReset(b *Buffer) {
	first, last := c.granules(b, 0, len(b.data))
	c.shadow[b.space].update(first, last, func(_, _ int, cl *cell) { *cl = cell{} })
}

// scalarWrites marks the buffers the kernel viewed since the last
// instruction as written by the host code where nothing wrote them yet:
// the bytes a kernel sets through a view count as initialised.
func (c *Core) scalarWrites() {
	for _, b := range c.sch.viewed {
		if b.live {
			c.markWritten(b, 0, len(b.data))
		}
	}
}

// hazard accumulates one kind of conflict over an access's granules.
type hazard struct {
	on          bool
	first, last int
	other       int32
}

// extendRun continues the hazard over granules k+1 … e when granule k,
// the first of a run of equal granules, had it.
func (h *hazard) extendRun(k, e int) {
	if h.on && h.last == k {
		h.last = e
	}
}

func (h *hazard) add(k int, other int32) {
	if !h.on {
		*h = hazard{on: true, first: k, last: k, other: other}
		return
	}
	h.last = k
}

// shadowAccess checks access o of instruction idx against the shadow and
// records it.
func (c *Core) shadowAccess(idx int32, o operand) {
	b := o.b
	rows := max(o.rows, 1)
	if first, last := c.granules(b, o.lo+(rows-1)*o.stride, o.n); first == last {
		return
	}
	// The rows' granules, in order. Rows that share no granule (whole
	// granules, or a stride past the next granule) are one update; rows
	// that share one are checked one after the other, as each sees the
	// history the row before left there.
	spans, disjoint := c.shadowRows[:0], true
	for r := range rows {
		if first, last := c.granules(b, o.lo+r*o.stride, o.n); first < last {
			disjoint = disjoint && (len(spans) == 0 || first >= spans[len(spans)-1].hi)
			spans = append(spans, span{first, last})
		}
	}
	c.shadowRows = spans
	in := c.sch.insts[idx]
	var raw, waw, war, uninit hazard
	if disjoint {
		c.shadowRange(spans, idx, o, in.p, &raw, &waw, &war, &uninit)
	} else {
		for i := range spans {
			c.shadowRange(spans[i:i+1], idx, o, in.p, &raw, &waw, &war, &uninit)
		}
	}
	c.reportHazards(b, o, in, raw, waw, war, uninit)
}

// shadowRange checks and records access o of instruction idx (on pipe p)
// over the granules of spans (sorted, disjoint) of o's space.
func (c *Core) shadowRange(spans []span, idx int32, o operand, p Pipe, raw, waw, war, uninit *hazard) {
	s := &c.sch
	vc := &s.vc[p]
	// A range of granules with one history (a buffer written whole by one
	// copy) is checked once: its first granule decides for all, and the
	// hazards it has extend over the rest.
	c.shadow[o.b.space].updateSpans(spans, func(k, e int, cl *cell) {
		if o.read {
			switch {
			case cl.w == 0 && !o.anon:
				uninit.add(k, -1)
			case cl.w > 0:
				if w := s.insts[cl.w-1]; w.p != p && vc[w.p] < w.seq {
					raw.add(k, cl.w-1)
				}
			}
		}
		if o.write {
			if cl.w > 0 {
				if w := s.insts[cl.w-1]; w.p != p && vc[w.p] < w.seq {
					waw.add(k, cl.w-1)
				}
			}
			for q, r := range cl.r {
				if r > 0 && Pipe(q) != p && vc[q] < s.insts[r-1].seq {
					war.add(k, r-1)
				}
			}
			cl.w = idx + 1
			cl.r = [numPipes]int32{}
		}
		if o.read {
			cl.r[p] = idx + 1
		}
		if e > k+1 {
			raw.extendRun(k, e-1)
			waw.extendRun(k, e-1)
			war.extendRun(k, e-1)
			uninit.extendRun(k, e-1)
		}
	})
}

// reportHazards turns the hazards of access o of instruction in into
// findings.
func (c *Core) reportHazards(b *Buffer, o operand, in instInfo, raw, waw, war, uninit hazard) {
	end := o.lo + (max(o.rows, 1)-1)*o.stride + o.n // past the last row
	c.hazardFindings(b, o.lo, end, in, []kindHazard{
		{KindRAW, raw, "reads before the producer signalled:"}, {KindWAR, war, "overwrites while another pipe still reads:"},
		{KindWAW, waw, "overwrites an unsynchronised write of"}, {KindUninit, uninit, "reads local memory never written"}})
}

// kindHazard is one kind of conflict of an access and the verb its
// finding's message uses.
type kindHazard struct {
	kind string
	h    hazard
	verb string
}

// hazardFindings records the hazards hs of instruction in's access to
// bytes [lo, end) of b, each clipped to those bytes: the one failure
// message of the sanitizer's conflicts. A scalar access's (pipe S)
// message also names the wait the scalar needs.
func (c *Core) hazardFindings(b *Buffer, lo, end int, in instInfo, hs []kindHazard) {
	s := &c.sch
	g := c.mem[b.space].align
	var inst string // named at the first finding: most accesses have none
	for _, h := range hs {
		if !h.h.on {
			continue
		}
		if inst == "" {
			inst = in.String()
		}
		flo, fhi := max(h.h.first*g-b.off, lo), min((h.h.last+1)*g-b.off, end, len(b.data))
		f := Finding{Kind: h.kind, Core: c.BlockIdx, Pipe: in.p, Buffer: fmt.Sprintf("%s@%#x", b.space, b.off), Lo: flo, Hi: fhi, Inst: inst}
		where := fmt.Sprintf("(%s buffer at %#x, bytes [%d, %d))", b.space, b.off, flo, fhi)
		switch {
		case h.h.other < 0:
			f.Message = fmt.Sprintf("%s: core %d pipe %s: %s %s %s", h.kind, c.BlockIdx, in.p, inst, h.verb, where)
		default:
			o := s.insts[h.h.other]
			f.Other = o.String()
			f.Message = fmt.Sprintf("%s: core %d pipe %s: %s %s %s %s", h.kind, c.BlockIdx, in.p, inst, h.verb, f.Other, where)
			if in.p == PipeS {
				after := "the write"
				if h.kind == KindWAR {
					after = "the read"
				}
				f.Message += fmt.Sprintf(": the scalar needs SetFlag/WaitFlag(%s, S) after %s", o.p, after)
			}
		}
		c.finding(f)
	}
}

// mergeFindings keeps the first finding of each kind, pipe and
// instruction pair over a launch's blocks (in block order) and says in
// its message how many more it stands for: one missing wait in a tile
// loop of 48 cores is one bug.
func mergeFindings(fs []Finding) []Finding {
	var out []Finding
	var more []int
	for _, f := range fs {
		i := slices.IndexFunc(out, func(g Finding) bool {
			return g.Kind == f.Kind && g.Pipe == f.Pipe && opName(g.Inst) == opName(f.Inst) && opName(g.Other) == opName(f.Other) &&
				(f.Inst != "" || afterColon(g.Message) == afterColon(f.Message))
		})
		if i >= 0 {
			more[i]++
			continue
		}
		out = append(out, f)
		more = append(more, 0)
	}
	for i, n := range more {
		if n > 0 {
			out[i].Message += fmt.Sprintf(" (and %d more like it)", n)
		}
	}
	return out
}

// afterColon is a message without its leading "core N ...:" part.
func afterColon(s string) string {
	if _, rest, ok := strings.Cut(s, ":"); ok {
		return rest
	}
	return s
}

// blockSan is what a finished block hands the launch's sanitizer: its
// findings and its cross-core records.
type blockSan struct {
	findings []Finding
	x        xcoreBlock
}

// sanResult clones the finished block's sanitizer state (the core goes
// on to the launch's next block).
func (c *Core) sanResult() blockSan {
	s := &c.sch
	return blockSan{findings: slices.Clone(s.findings), x: s.x.result(c.BlockIdx)}
}

// launchFindings are a launch's findings: each block's, and the
// cross-core races and GM bytes two blocks write, merged.
func launchFindings(bs []blockSan) []Finding {
	var fs []Finding
	xs := make([]xcoreBlock, len(bs))
	for i, b := range bs {
		fs = append(fs, b.findings...)
		xs[i] = b.x
	}
	return mergeFindings(slices.Concat(fs, xcoreRaces(xs)))
}
