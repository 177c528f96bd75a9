package npu

import "fmt"

// ScalarRead declares that the core's scalar unit (PipeS) reads bytes
// [off, off+n) of local buffer b itself (Ascend C's
// LocalTensor::GetValue): a value that decides what the kernel issues
// next, an address, a count or a branch. The kernel reads the bytes
// through a view after the call; the call says when, in the core's
// program order, the read happens.
//
// The rule, as on the device: the scalar sees what a pipe wrote only
// after it waited for that pipe, SetFlag(p, PipeS, id) then
// WaitFlag(p, PipeS, id) (HardEvent::V_S, MTE2_S, ...), or after a
// PipeBarrier(PipeAll) or SyncAll; the wait also holds back every
// instruction issued after it (pipe.go). In SyncExplicit mode the
// sanitizer reports a read of bytes whose last writer the scalar has not
// waited for as a RAW finding on pipe S, and a read of bytes never
// written as uninit. In SyncImplicit mode the read orders every later
// instruction after the producer of b, the wait a correct kernel would
// write. The read costs no cycles of its own: the wait before it does.
//
// A range outside b, or a buffer that is not a live buffer of this core,
// is an error.
func (c *Core) ScalarRead(b *Buffer, off, n int) error {
	if b == nil || !b.live || b.core != c {
		return fmt.Errorf("ScalarRead: not a live buffer of core %d", c.BlockIdx)
	}
	if off < 0 || n < 0 || off+n > len(b.data) {
		return fmt.Errorf("ScalarRead: bytes [%d, %d) outside the %d-byte %s buffer at %#x", off, off+n, len(b.data), b.space, b.off)
	}
	s := &c.sch
	b.touch(off + n)
	if s.mode == SyncImplicit {
		s.fence = max(s.fence, b.wEnd)
		return nil
	}
	s.sSeq++
	if s.san && n > 0 {
		c.scalarWrites()
		c.scalarCheck(b, off, n)
	}
	return nil
}

// ScalarWrite declares that the core's scalar unit writes bytes [off,
// off+n) of local buffer b itself (Ascend C's LocalTensor::SetValue): a
// flag, a count or a scale the kernel sets before a copy out. The kernel
// writes the bytes through a view after the call.
//
// The rule, as on the device: the scalar may overwrite bytes a pipe
// reads or writes only after it waited for that pipe (SetFlag(p, PipeS,
// id) then WaitFlag(p, PipeS, id), a PipeBarrier(PipeAll) or a SyncAll):
// a copy out issued before may not have read them yet. In SyncExplicit
// mode the sanitizer reports an overwrite of bytes a pipe still reads as
// a WAR on pipe S, of bytes a pipe still writes as a WAW, naming the
// buffer, the bytes and both instructions. The pipes' later reads of
// what the scalar wrote are ordered after it, as every write the kernel
// makes through a view (the scalar issues in program order). In
// SyncImplicit mode the write orders every later instruction after the
// last read and write of b. It costs no cycles of its own.
//
// A range outside b, or a buffer that is not a live buffer of this core,
// is an error.
func (c *Core) ScalarWrite(b *Buffer, off, n int) error {
	if b == nil || !b.live || b.core != c {
		return fmt.Errorf("ScalarWrite: not a live buffer of core %d", c.BlockIdx)
	}
	if off < 0 || n < 0 || off+n > len(b.data) {
		return fmt.Errorf("ScalarWrite: bytes [%d, %d) outside the %d-byte %s buffer at %#x", off, off+n, len(b.data), b.space, b.off)
	}
	s := &c.sch
	b.touch(off + n)
	if s.mode == SyncImplicit {
		s.fence = max(s.fence, b.wEnd, b.rEnd)
		return nil
	}
	s.sSeq++
	if s.san && n > 0 {
		c.scalarWrites()
		c.scalarWriteCheck(b, off, n)
	}
	return nil
}

// scalarWriteCheck checks the scalar's write of bytes [off, off+n) of b
// against the shadow (every reader and the writer ordered before the
// scalar) and records the bytes as written on the host side.
func (c *Core) scalarWriteCheck(b *Buffer, off, n int) {
	s := &c.sch
	first, last := c.granules(b, off, n)
	if first == last {
		return
	}
	sh := c.shadowOf(b.space, last)
	var war, waw hazard
	for k := first; k < last; k++ {
		cl := &sh[k]
		if cl.w > 0 {
			if w := s.insts[cl.w-1]; s.sVC[w.p] < w.seq {
				waw.add(k, cl.w-1)
			}
		}
		for q, r := range cl.r {
			if r > 0 && s.sVC[q] < s.insts[r-1].seq {
				war.add(k, r-1)
			}
		}
		cl.w = hostWrite
		cl.r = [numPipes]int32{}
	}
	c.scalarFindings(b, off, n, "ScalarWrite", []scalarHazard{
		{KindWAR, war, "overwrites while another pipe still reads:"},
		{KindWAW, waw, "overwrites an unsynchronised write of"},
	})
}

// scalarHazard is one kind of conflict of a scalar access.
type scalarHazard struct {
	kind string
	h    hazard
	verb string
}

// scalarCheck checks the scalar's read of bytes [off, off+n) of b
// against the shadow: each granule's last writer must be ordered before
// the scalar (its vector clock, sched.sVC). The scalar is not recorded as
// a reader: every instruction after the read is issued after it, so no
// pipe can overwrite the bytes under it.
func (c *Core) scalarCheck(b *Buffer, off, n int) {
	s := &c.sch
	first, last := c.granules(b, off, n)
	if first == last {
		return
	}
	sh := c.shadowOf(b.space, last)
	var raw, uninit hazard
	for k := first; k < last; k++ {
		cl := &sh[k]
		switch {
		case cl.w == 0:
			uninit.add(k, -1)
		case cl.w > 0:
			if w := s.insts[cl.w-1]; s.sVC[w.p] < w.seq {
				if raw.on && raw.last == k-1 && raw.other == cl.w-1 {
					raw.last = k
				} else if !raw.on {
					raw.add(k, cl.w-1)
				}
			}
		}
	}
	c.scalarFindings(b, off, n, "ScalarRead", []scalarHazard{
		{KindRAW, raw, "reads before the producer signalled:"},
		{KindUninit, uninit, "reads local memory never written"},
	})
}

// scalarFindings records the hazards of the scalar's access op (the
// scalar's instruction number sched.sSeq) to bytes [off, off+n) of b.
func (c *Core) scalarFindings(b *Buffer, off, n int, op string, hs []scalarHazard) {
	s := &c.sch
	in := instInfo{op: op, p: PipeS, seq: s.sSeq}.String()
	g := c.mem[b.space].align
	for _, h := range hs {
		if !h.h.on {
			continue
		}
		lo, hi := max(h.h.first*g-b.off, off), min((h.h.last+1)*g-b.off, off+n, len(b.data))
		f := Finding{Kind: h.kind, Core: c.BlockIdx, Pipe: PipeS, Buffer: fmt.Sprintf("%s@%#x", b.space, b.off), Lo: lo, Hi: hi, Inst: in}
		if h.h.other >= 0 {
			o := s.insts[h.h.other]
			f.Other = o.String()
			after := "the write"
			if h.kind == KindWAR {
				after = "the read"
			}
			f.Message = fmt.Sprintf("%s: core %d pipe %s: %s %s %s (%s buffer at %#x, bytes [%d, %d)): the scalar needs SetFlag/WaitFlag(%s, S) after %s",
				h.kind, c.BlockIdx, PipeS, f.Inst, h.verb, f.Other, b.space, b.off, lo, hi, o.p, after)
		} else {
			f.Message = fmt.Sprintf("%s: core %d pipe %s: %s %s (%s buffer at %#x, bytes [%d, %d))", h.kind, c.BlockIdx, PipeS, f.Inst, h.verb, b.space, b.off, lo, hi)
		}
		c.finding(f)
	}
}
