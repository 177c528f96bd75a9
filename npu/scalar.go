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
	check, err := c.scalarAccess("ScalarRead", b, off, n, false)
	if check {
		c.scalarCheck(b, off, n)
	}
	return err
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
	check, err := c.scalarAccess("ScalarWrite", b, off, n, true)
	if check {
		c.scalarWriteCheck(b, off, n)
	}
	return err
}

// scalarAccess is what ScalarRead and ScalarWrite (op) share: it checks
// b and the range, and counts the access. In SyncImplicit mode it orders
// every later instruction after the buffer's producer (and, for a write,
// its last reader); in SyncExplicit mode it numbers the
// scalar's access and reports whether the sanitizer must check its bytes.
func (c *Core) scalarAccess(op string, b *Buffer, off, n int, write bool) (check bool, err error) {
	if b == nil || !b.live || b.core != c {
		return false, fmt.Errorf("%s: not a live buffer of core %d", op, c.BlockIdx)
	}
	if off < 0 || n < 0 || off+n > len(b.data) {
		return false, fmt.Errorf("%s: bytes [%d, %d) outside the %d-byte %s buffer at %#x", op, off, off+n, len(b.data), b.space, b.off)
	}
	s := &c.sch
	b.touch(off + n)
	if s.mode == SyncImplicit {
		s.fence = max(s.fence, b.wEnd)
		if write {
			s.fence = max(s.fence, b.rEnd)
		}
		return false, nil
	}
	s.sSeq++
	if !s.san || n == 0 {
		return false, nil
	}
	c.scalarWrites()
	return true, nil
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
	var war, waw hazard
	// A range [k, e) of granules with one history has the hazards of its
	// first granule, over all of it.
	c.shadow[b.space].update(first, last, func(k, e int, cl *cell) {
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
		waw.extendRun(k, e-1)
		war.extendRun(k, e-1)
		*cl = cell{w: hostWrite}
	})
	c.hazardFindings(b, off, off+n, instInfo{op: "ScalarWrite", p: PipeS, seq: s.sSeq}, []kindHazard{
		{KindWAR, war, "overwrites while another pipe still reads:"},
		{KindWAW, waw, "overwrites an unsynchronised write of"},
	})
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
	var raw, uninit hazard
	// A range [k, e) of granules with one history has the hazards of its
	// first granule, over all of it.
	c.shadow[b.space].each(first, last, func(k, e int, cl cell) bool {
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
		uninit.extendRun(k, e-1)
		raw.extendRun(k, e-1)
		return true
	})
	c.hazardFindings(b, off, off+n, instInfo{op: "ScalarRead", p: PipeS, seq: s.sSeq}, []kindHazard{
		{KindRAW, raw, "reads before the producer signalled:"},
		{KindUninit, uninit, "reads local memory never written"},
	})
}
