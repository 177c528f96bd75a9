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
	in := instInfo{op: "ScalarRead", p: PipeS, seq: s.sSeq}.String()
	g := c.mem[b.space].align
	for _, h := range []struct {
		kind string
		h    hazard
		verb string
	}{{KindRAW, raw, "reads before the producer signalled:"}, {KindUninit, uninit, "reads local memory never written"}} {
		if !h.h.on {
			continue
		}
		lo, hi := max(h.h.first*g-b.off, off), min((h.h.last+1)*g-b.off, off+n, len(b.data))
		f := Finding{Kind: h.kind, Core: c.BlockIdx, Pipe: PipeS, Buffer: fmt.Sprintf("%s@%#x", b.space, b.off), Lo: lo, Hi: hi, Inst: in}
		if h.h.other >= 0 {
			f.Other = s.insts[h.h.other].String()
			f.Message = fmt.Sprintf("%s: core %d pipe %s: %s %s %s (%s buffer at %#x, bytes [%d, %d)): a scalar read needs SetFlag/WaitFlag(%s, S) after the write",
				h.kind, c.BlockIdx, PipeS, f.Inst, h.verb, f.Other, b.space, b.off, lo, hi, s.insts[h.h.other].p)
		} else {
			f.Message = fmt.Sprintf("%s: core %d pipe %s: %s %s (%s buffer at %#x, bytes [%d, %d))", h.kind, c.BlockIdx, PipeS, f.Inst, h.verb, b.space, b.off, lo, hi)
		}
		c.finding(f)
	}
}
