package npu

import (
	"fmt"
	"unsafe"
)

// Pipes and events. Every primitive a kernel calls is one instruction on
// one of its core's pipes, with the duration the cost model gives the
// primitive (dma.go, vector.go, cube.go). A pipe runs its instructions in
// program order, one at a time; different pipes run concurrently. A
// core's cycles are the end of its schedule: the latest end over its
// pipes. The kernels still compute in program order, on the host, so the
// schedule prices the work and never changes a result.
//
// What orders instructions of different pipes depends on the core's sync
// mode (SetSyncMode):
//
//   - SyncImplicit (the default): each instruction waits for the
//     instructions that produced what it reads and for those still reading
//     or writing what it writes (per local buffer; per GM tensor for
//     DMA), the synchronisation a correct kernel would write. An
//     instruction the emulator only charges (ChargeVector, VectorWork,
//     ChargeCube) takes as operands the buffers the kernel viewed since
//     the previous instruction (Buffer.F16 and the other views), or, with
//     none, those of the previous such instruction; with neither it waits
//     for everything issued before it and everything after waits for it.
//     An Mmad reads the L0A and L0B buffers loaded since the previous
//     Mmad (else those the previous one read).
//   - SyncExplicit: only the kernel's own synchronisation orders pipes:
//     SetFlag/WaitFlag, PipeBarrier and the queue hand-off (TQue). The
//     sanitizer (sanitizer.go) then checks every access against it.

// Pipe is one of a core's instruction pipes.
type Pipe uint8

// The pipes of a core, as Ascend C names them.
const (
	PipeMTE2 Pipe = iota // DMA GM → L1/UB
	PipeMTE1             // L1 → L0A/L0B
	PipeM                // cube
	PipeV                // vector
	PipeMTE3             // DMA UB → GM
	PipeFIX              // L0C → UB (fixpipe)
	numPipes
)

// PipeS names the scalar unit, which issues every instruction of the
// core to its pipe in program order and reads local memory itself
// (Ascend C's LocalTensor::GetValue, Core.ScalarRead). It is not a pipe
// with a schedule of its own: an event to it, SetFlag(src, PipeS, id)
// then WaitFlag(src, PipeS, id) (Ascend C's HardEvent::V_S, MTE2_S, ...),
// stalls the issue, so every instruction the core issues after the wait,
// on any pipe, starts no earlier than the event fires, and the scalar's
// reads after it see what src had written by then.
const PipeS Pipe = numPipes

// PipeAll names every pipe at once (PipeBarrier(PipeAll)).
const PipeAll Pipe = 0xFF

var pipeNames = [...]string{PipeMTE2: "MTE2", PipeMTE1: "MTE1", PipeM: "M", PipeV: "V", PipeMTE3: "MTE3", PipeFIX: "FIX", PipeS: "S"}

// String returns the pipe's Ascend C name ("MTE2", "V", ..., "S" for the
// scalar unit).
func (p Pipe) String() string {
	if p <= PipeS {
		return pipeNames[p]
	}
	if p == PipeAll {
		return "ALL"
	}
	return fmt.Sprintf("pipe(%d)", uint8(p))
}

// SyncMode says what orders a core's pipes (see the package's pipe notes
// in pipe.go).
type SyncMode uint8

// Sync modes.
const (
	// SyncImplicit orders every instruction after the producers of what
	// it reads: a kernel that writes no synchronisation gets the perfect
	// one. The sanitizer does not check it.
	SyncImplicit SyncMode = iota
	// SyncExplicit orders pipes only by the kernel's events, barriers and
	// queue hand-offs, which the sanitizer holds it to.
	SyncExplicit
)

// operand is one local-memory access of an instruction: bytes [lo, lo+n)
// of b, read and/or written.
type operand struct {
	b           *Buffer
	lo, n       int
	read, write bool
	anon        bool // an operand the instruction was only attributed (a view): no initcheck
	// rows > 1: the operand is rows ranges of n bytes, each stride bytes
	// after the one before (a block of a row-major tile).
	rows, stride int
}

func rd(b *Buffer, lo, n int) operand { return operand{b: b, lo: lo, n: n, read: true} }
func wr(b *Buffer, lo, n int) operand { return operand{b: b, lo: lo, n: n, write: true} }

// gmAccess is an instruction's GM access: bytes [lo, hi) of the tensor
// whose data starts at key, and for a 2-D copy rows more such ranges,
// each stride bytes after the one before; key 0 means none.
type gmAccess struct {
	key          uintptr
	lo, hi       int
	write        bool
	rows, stride int
}

// gmKey identifies a GM tensor's data (after copy-on-write resolution).
func gmKey(gm []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(gm))) }

// gmTensorEnd is the implicit schedule's record of one GM tensor: when
// this core's last write to it and its last read of it end.
type gmTensorEnd struct {
	key        uintptr
	wEnd, rEnd int64
}

// event is one SetFlag (or a queue hand-off) not yet waited for: when
// its source pipe reaches it and what that pipe had done by then.
type event struct {
	src, dst Pipe
	id       int
	t        int64
	vc       [numPipes]int32
	inst     int32 // the SetFlag's instruction index (trace flows)
}

// sched is a core's schedule of the current block.
type sched struct {
	mode  SyncMode
	san   bool // sanitize (explicit mode only)
	free  [numPipes]int64
	busy  [numPipes]int64
	spans [numPipes][]int64 // per pipe, coalesced [start, end) pairs in order
	fence int64             // implicit: no instruction starts before this
	// issued counts the block's instructions (SetSyncMode must come first).
	issued int
	gm     []gmTensorEnd
	// viewed are the buffers viewed since the last instruction; anon the
	// operands of the last charge-only instruction.
	viewed, anon []*Buffer
	hasAnon      bool
	// L0 attribution of an implicit Mmad: loaded since the last Mmad, and
	// what the last Mmad read.
	l0Fresh, l0Last []*Buffer
	// Explicit mode: per-pipe instruction counts, vector clocks, pending
	// events, the instruction log (named in findings) and the findings.
	seq [numPipes]int32
	vc  [numPipes][numPipes]int32
	// The scalar unit's side (PipeS): what its waits and PipeAll barriers
	// ordered before its reads (a vector clock like a pipe's), and how
	// many reads it made (ScalarRead, named in findings).
	sVC      [numPipes]int32
	sSeq     int32
	events   []event
	insts    []instInfo
	findings []Finding
	trace    *coreTrace
	// x is the block's side of the cross-core race check (xcore.go).
	x xcoreState
}

// instInfo names one instruction of an explicit core: its op, pipe and
// sequence number on the pipe.
type instInfo struct {
	op  string
	p   Pipe
	seq int32
}

func (i instInfo) String() string { return fmt.Sprintf("%s %s#%d", i.p, i.op, i.seq) }

// reset starts a block's schedule; the slices keep their storage.
func (s *sched) reset(san bool, tr *coreTrace) {
	spans, viewed, anon, l0f, l0l := s.spans, s.viewed[:0], s.anon[:0], s.l0Fresh[:0], s.l0Last[:0]
	events, insts, gm := s.events[:0], s.insts[:0], s.gm[:0]
	for p := range spans {
		spans[p] = spans[p][:0]
	}
	x := s.x
	*s = sched{san: san, spans: spans, viewed: viewed, anon: anon, l0Fresh: l0f, l0Last: l0l,
		events: events, insts: insts, gm: gm, trace: tr, x: x}
	s.x.reset(san)
}

// SetSyncMode declares how the block orders its pipes (SyncImplicit by
// default). It must come before the block's first instruction, as a
// kernel's synchronisation is part of its code, not switched midway.
func (c *Core) SetSyncMode(m SyncMode) error {
	if m != SyncImplicit && m != SyncExplicit {
		return fmt.Errorf("SetSyncMode(%d): unknown mode", m)
	}
	if c.sch.issued > 0 {
		return fmt.Errorf("SetSyncMode: called after %d instructions", c.sch.issued)
	}
	c.sch.mode = m
	if m == SyncExplicit && c.sch.san {
		for s := range c.mem {
			for _, b := range c.mem[s].bufs {
				c.shadowReset(b)
			}
		}
	}
	return nil
}

// SyncMode reports the block's sync mode.
func (c *Core) SyncMode() SyncMode { return c.sch.mode }

// noteView records that the kernel viewed b (its bytes may be read or
// written on the host until the next instruction).
func (c *Core) noteView(b *Buffer) {
	v := c.sch.viewed
	if n := len(v); n > 0 && v[n-1] == b {
		return
	}
	for _, x := range v {
		if x == b {
			return
		}
	}
	c.sch.viewed = append(v, b)
}

// issue schedules one instruction of cyc cycles on pipe p that accesses
// ops (local memory) and gm, and returns its end.
func (c *Core) issue(p Pipe, op string, cyc int64, gm gmAccess, ops ...operand) int64 {
	s := &c.sch
	s.issued++
	start := s.free[p]
	if s.mode == SyncImplicit {
		start = max(start, s.fence)
		for _, o := range ops {
			if o.read {
				start = max(start, o.b.wEnd)
			}
			if o.write {
				start = max(start, o.b.wEnd, o.b.rEnd)
			}
		}
		if gm.key != 0 {
			g := s.gmEntry(gm.key)
			start = max(start, g.wEnd)
			if gm.write {
				start = max(start, g.rEnd)
			}
		}
	}
	end := start + cyc
	s.free[p] = end
	s.busy[p] += cyc
	if sp := s.spans[p]; len(sp) > 0 && sp[len(sp)-1] == start {
		sp[len(sp)-1] = end
	} else if cyc > 0 {
		s.spans[p] = append(sp, start, end)
	}
	s.seq[p]++
	if s.x.tracked && gm.key != 0 {
		s.x.note(gm, instInfo{op: op, p: p, seq: s.seq[p]})
	}
	if s.mode == SyncImplicit {
		if s.san {
			c.accViews()
		}
		for _, o := range ops {
			if o.write {
				o.b.wEnd = end
			}
			if o.read {
				o.b.rEnd = max(o.b.rEnd, end)
			}
		}
		if gm.key != 0 {
			g := s.gmEntry(gm.key)
			if gm.write {
				g.wEnd = end
			} else {
				g.rEnd = max(g.rEnd, end)
			}
		}
	} else {
		s.vc[p][p] = s.seq[p]
		idx := int32(len(s.insts))
		s.insts = append(s.insts, instInfo{op: op, p: p, seq: s.seq[p]})
		if s.san {
			c.scalarWrites()
			for _, o := range ops {
				c.shadowAccess(idx, o)
			}
		}
	}
	s.viewed = s.viewed[:0]
	if s.trace != nil {
		s.trace.span(p, op, start, end)
	}
	return end
}

// gmEntry returns the implicit schedule's record of the GM tensor key.
func (s *sched) gmEntry(key uintptr) *gmTensorEnd {
	for i := range s.gm {
		if s.gm[i].key == key {
			return &s.gm[i]
		}
	}
	s.gm = append(s.gm, gmTensorEnd{key: key})
	return &s.gm[len(s.gm)-1]
}

// issueAnon schedules a charge-only instruction: its operands are the
// buffers viewed since the last instruction, else the previous charge-only
// instruction's; with neither it is a fence. extra are operands known
// otherwise (an Mmad's L0 tiles).
func (c *Core) issueAnon(p Pipe, op string, cyc int64, extra ...*Buffer) int64 {
	s := &c.sch
	if len(s.viewed) > 0 {
		s.anon = append(s.anon[:0], s.viewed...)
		s.hasAnon = true
	}
	if !s.hasAnon && len(extra) == 0 {
		if s.mode == SyncImplicit {
			for _, f := range s.free {
				s.fence = max(s.fence, f)
			}
		}
		end := c.issue(p, op, cyc, gmAccess{})
		if s.mode == SyncImplicit {
			s.fence = end
		}
		return end
	}
	var buf [16]operand
	ops := buf[:0]
	if s.hasAnon {
		for _, b := range s.anon {
			if b.live {
				ops = append(ops, operand{b: b, n: len(b.data), read: true, write: true, anon: true})
			}
		}
	}
	for _, b := range extra {
		if b.live {
			ops = append(ops, operand{b: b, n: len(b.data), read: true, anon: true})
		}
	}
	return c.issue(p, op, cyc, gmAccess{}, ops...)
}

// cubeOperands returns the L0A/L0B buffers an Mmad reads, by
// attribution: those loaded since the last Mmad, else those the last one
// read.
func (c *Core) cubeOperands() []*Buffer {
	s := &c.sch
	if len(s.l0Fresh) > 0 {
		s.l0Last = append(s.l0Last[:0], s.l0Fresh...)
		s.l0Fresh = s.l0Fresh[:0]
	}
	return s.l0Last
}

// noteL0Load records that an L0A/L0B buffer was loaded (cubeOperands).
func (c *Core) noteL0Load(b *Buffer) {
	for _, x := range c.sch.l0Fresh {
		if x == b {
			return
		}
	}
	c.sch.l0Fresh = append(c.sch.l0Fresh, b)
}

// SetFlag signals event id from pipe src to pipe dst: it fires when src
// has finished every instruction issued to it before (Ascend C's
// SetFlag<src, dst>(id)). dst may be PipeS, the scalar unit (V_S,
// MTE2_S, ...: see PipeS); an event from PipeS fires as it is issued.
func (c *Core) SetFlag(src, dst Pipe, id int) {
	if src > PipeS || dst > PipeS {
		c.finding(Finding{Kind: KindFlag, Core: c.BlockIdx, Pipe: dst, Message: fmt.Sprintf("SetFlag(%s, %s, %d): not a pipe", src, dst, id)})
		return
	}
	s := &c.sch
	s.events = append(s.events, c.eventOf(src, dst, id))
}

// eventOf is the event src would signal now.
func (c *Core) eventOf(src, dst Pipe, id int) event {
	s := &c.sch
	if src == PipeS {
		// The scalar's event fires as it is issued: whatever the scalar
		// did before (its reads) is done, and every pipe's later
		// instructions are issued after it anyway.
		return event{src: src, dst: dst, id: id, vc: s.sVC, inst: -1}
	}
	e := event{src: src, dst: dst, id: id, t: s.free[src], vc: s.vc[src], inst: -1}
	if s.trace != nil {
		e.inst = s.trace.mark(src, "SetFlag", s.free[src])
	}
	return e
}

// WaitFlag makes pipe dst wait for the oldest unwaited SetFlag(src, dst,
// id) (Ascend C's WaitFlag<src, dst>(id)). A wait with no such set issued
// before it would hang the device: it is a deadlock finding, and the
// pipe goes on.
func (c *Core) WaitFlag(src, dst Pipe, id int) {
	s := &c.sch
	for i, e := range s.events {
		if e.src == src && e.dst == dst && e.id == id {
			s.events = append(s.events[:i], s.events[i+1:]...)
			c.wait(e)
			return
		}
	}
	c.finding(Finding{Kind: KindDeadlock, Core: c.BlockIdx, Pipe: dst,
		Message: fmt.Sprintf("core %d pipe %s waits forever in WaitFlag(%s, %s, %d): no SetFlag(%s, %s, %d) is pending", c.BlockIdx, dst, src, dst, id, src, dst, id)})
}

// wait applies event e to its destination pipe: it starts nothing before
// e fires and knows everything e's source had done. A wait of the scalar
// (PipeS) stalls the issue: every pipe starts nothing before e fires, and
// knows, as the scalar does, what e's source had done.
func (c *Core) wait(e event) {
	s := &c.sch
	if e.dst == PipeS {
		for q := range s.sVC {
			s.sVC[q] = max(s.sVC[q], e.vc[q])
		}
		for p := range numPipes {
			s.free[p] = max(s.free[p], e.t)
			for q := range s.vc[p] {
				s.vc[p][q] = max(s.vc[p][q], e.vc[q])
			}
		}
		if s.mode == SyncImplicit {
			s.fence = max(s.fence, e.t)
		}
		if s.trace != nil && e.inst >= 0 {
			s.trace.flow(e.inst, PipeS, e.t)
		}
		return
	}
	s.free[e.dst] = max(s.free[e.dst], e.t)
	for q := range s.vc[e.dst] {
		s.vc[e.dst][q] = max(s.vc[e.dst][q], e.vc[q])
	}
	if s.trace != nil && e.inst >= 0 {
		s.trace.flow(e.inst, e.dst, s.free[e.dst])
	}
}

// PipeBarrier waits on pipe p until p's earlier instructions are done;
// PipeBarrier(PipeAll) makes every pipe, and the scalar, wait for every
// other (Ascend C's PipeBarrier<PIPE_ALL>). A single pipe already runs in
// order in the model, so only PipeAll changes the schedule.
func (c *Core) PipeBarrier(p Pipe) {
	if p != PipeAll {
		return
	}
	s := &c.sch
	var t int64
	var vc [numPipes]int32
	for q := range numPipes {
		t = max(t, s.free[q])
		for r := range numPipes {
			vc[r] = max(vc[r], s.vc[q][r])
		}
	}
	for q := range numPipes {
		s.free[q] = t
		s.vc[q] = vc
	}
	s.sVC = vc
	if s.mode == SyncImplicit {
		s.fence = max(s.fence, t)
	}
}

// finishSched ends the block's schedule: pending sets are flag mismatches
// (explicit mode), and the core's cycles and overlap are read off it.
func (c *Core) finishSched() {
	s := &c.sch
	if s.mode == SyncExplicit {
		for _, e := range s.events {
			c.finding(Finding{Kind: KindFlag, Core: c.BlockIdx, Pipe: e.src,
				Message: fmt.Sprintf("core %d: SetFlag(%s, %s, %d) is never waited for (an event left set when the kernel ends)", c.BlockIdx, e.src, e.dst, e.id)})
		}
	}
	var end int64
	for _, f := range s.free {
		end = max(end, f)
	}
	c.cost.Cycles = end
	dma := unionSpans(c.scratch[0][:0], s.spans[PipeMTE2], s.spans[PipeMTE3])
	comp := unionSpans(c.scratch[1][:0], s.spans[PipeV], s.spans[PipeM])
	c.cost.DMABusyCycles = spanLen(dma)
	c.cost.ComputeBusyCycles = spanLen(comp)
	c.cost.OverlapCycles = intersectLen(dma, comp)
	c.cost.MTE1BusyCycles = spanLen(s.spans[PipeMTE1])
	c.cost.CubeBusyCycles = spanLen(s.spans[PipeM])
	c.cost.CubeLoadOverlapCycles = intersectLen(s.spans[PipeMTE1], s.spans[PipeM])
	c.scratch = [2][]int64{dma, comp}
}

// unionSpans merges two sorted lists of disjoint [start, end) pairs into
// their union, sorted and disjoint, appended to out.
func unionSpans(out, a, b []int64) []int64 {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var s, e int64
		if j >= len(b) || (i < len(a) && a[i] <= b[j]) {
			s, e = a[i], a[i+1]
			i += 2
		} else {
			s, e = b[j], b[j+1]
			j += 2
		}
		if n := len(out); n > 0 && s <= out[n-1] {
			out[n-1] = max(out[n-1], e)
		} else {
			out = append(out, s, e)
		}
	}
	return out
}

func spanLen(a []int64) int64 {
	var n int64
	for i := 0; i < len(a); i += 2 {
		n += a[i+1] - a[i]
	}
	return n
}

// intersectLen is the length of the intersection of two sorted disjoint
// span lists.
func intersectLen(a, b []int64) int64 {
	var n int64
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		lo, hi := max(a[i], b[j]), min(a[i+1], b[j+1])
		if hi > lo {
			n += hi - lo
		}
		if a[i+1] < b[j+1] {
			i += 2
		} else {
			j += 2
		}
	}
	return n
}

// gmDMA is the gmAccess of a DMA over bytes [lo, hi) of tensor data gm.
func gmDMA(gm []byte, lo, hi int, write bool) gmAccess {
	return gmAccess{key: gmKey(gm), lo: lo, hi: hi, write: write}
}
