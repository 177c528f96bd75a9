package npu

import "fmt"

// The initcheck of the cube's accumulators. An Mmad without Init adds its
// products onto what L0C holds: on the device that is whatever the tile
// held before, so a kernel whose first Mmad of a tile does not start from
// zero (cmatrixInitVal left false) is right only where L0C happens to
// hold zeros, as in a simulator that zero-fills its memories. The check
// holds every accumulating Mmad to an accumulator some instruction (an
// earlier Mmad) or the kernel's own code (a view) wrote since the
// allocation. It runs in both sync modes: an implicit-mode core (the gemm
// kernels) keeps the shadow of its L0C only, marked by its Mmads and by
// the views of its L0C buffers, where an explicit core keeps all of its
// local memory's.

// markWritten marks bytes [lo, lo+n) of b as written by the kernel where
// nothing wrote them yet.
func (c *Core) markWritten(b *Buffer, lo, n int) {
	first, last := c.granules(b, lo, n)
	c.shadow[b.space].update(first, last, func(_, _ int, cl *cell) {
		if cl.w == 0 {
			cl.w = hostWrite
		}
	})
}

// accViews marks, on an implicit-mode core, the L0C buffers the kernel
// viewed since the last instruction as written: it may have set them
// through the view.
func (c *Core) accViews() {
	for _, b := range c.sch.viewed {
		if b.live && b.space == L0C {
			c.markWritten(b, 0, len(b.data))
		}
	}
}

// accInit checks the accumulator of the cube instruction op about to
// issue: the first n bytes of the L0C buffer dst, read unless init (the
// instruction starts from +0). A read of bytes never written is an uninit
// finding naming the instruction; afterwards the bytes count as written
// (the instruction writes them).
func (c *Core) accInit(op string, dst *Buffer, n int, init bool) {
	s := &c.sch
	if !s.san || n <= 0 || dst == nil || !dst.live {
		return
	}
	if !init && !containsBuf(s.viewed, dst) {
		// [k, e): the first granules never written, if any.
		k, e := -1, -1
		first, last := c.granules(dst, 0, n)
		c.shadow[dst.space].each(first, last, func(rk, re int, cl cell) bool {
			if cl.w != 0 {
				return k < 0 // on to the first never written; done after it
			}
			if k < 0 {
				k = rk
			}
			e = re
			return true
		})
		if k >= 0 {
			g := c.mem[dst.space].align
			lo, hi := k*g-dst.off, min(e*g-dst.off, n)
			in := instInfo{op: op, p: PipeM, seq: s.seq[PipeM] + 1}
			c.finding(Finding{Kind: KindUninit, Core: c.BlockIdx, Pipe: PipeM, Buffer: fmt.Sprintf("%s@%#x", dst.space, dst.off), Lo: lo, Hi: hi, Inst: in.String(),
				Message: fmt.Sprintf("%s: core %d pipe M: %s accumulates onto an accumulator never written (%s buffer at %#x, bytes [%d, %d)): its first Mmad does not start from zero",
					KindUninit, c.BlockIdx, in, dst.space, dst.off, lo, hi)})
		}
	}
	if s.mode == SyncImplicit || !init {
		c.markWritten(dst, 0, n)
	}
}

func containsBuf(bs []*Buffer, b *Buffer) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// HoldsZeros sets b's bytes to zero without the kernel writing them: the
// state a zero-filling simulator (or a memory fresh from reset) leaves a
// buffer in, where the emulator otherwise leaves Poison. The sanitizer
// still counts the bytes as never written, so a read of them is an
// uninit finding. It exists for fault variants that model kernels right
// only on such memory (an accumulator never initialised), so that their
// numbers stay right and only the sanitizer catches them. A nil buffer,
// a dead one or another core's is left alone, as a view of it would be.
func (c *Core) HoldsZeros(b *Buffer) {
	if b == nil || b.core != c || !b.live {
		return
	}
	clear(b.data)
	b.poisoned = int32(len(b.data))
}
