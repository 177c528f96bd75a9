package npu

import "fmt"

// refShadow is the sanitizer's shadow as it was before the runs of
// shadow.go: one cell per granule, every access walking every granule it
// touches. The code is that implementation's, unchanged but for where
// the cells live, so that TestShadowDifferential can hold the run-based
// shadow to it: the same findings and the same history of every granule
// for every access sequence.
type refShadow struct {
	sh [numSpaces][]cell
}

func (m *refShadow) shadowOf(sp Space, n int) []cell {
	sh := m.sh[sp]
	if len(sh) < n {
		sh = append(sh, make([]cell, n-len(sh))...)
		m.sh[sp] = sh
	}
	return sh
}

func (m *refShadow) shadowReset(c *Core, b *Buffer) {
	first, last := c.granules(b, 0, len(b.data))
	clear(m.shadowOf(b.space, last)[first:last])
}

func (m *refShadow) scalarWrites(c *Core) {
	for _, b := range c.sch.viewed {
		if !b.live {
			continue
		}
		first, last := c.granules(b, 0, len(b.data))
		sh := m.shadowOf(b.space, last)
		for k := first; k < last; k++ {
			if sh[k].w == 0 {
				sh[k].w = hostWrite
			}
		}
	}
}

func (m *refShadow) shadowAccess(c *Core, idx int32, o operand) {
	s := &c.sch
	b := o.b
	rows := max(o.rows, 1)
	first, last := c.granules(b, o.lo+(rows-1)*o.stride, o.n)
	if first == last {
		return
	}
	sh := m.shadowOf(b.space, last)
	in := s.insts[idx]
	p := in.p
	vc := &s.vc[p]
	var raw, waw, war, uninit hazard
	for r := range rows {
		first, last := c.granules(b, o.lo+r*o.stride, o.n)
		m.shadowRange(c, sh[:last], first, idx, o, p, vc, &raw, &waw, &war, &uninit)
	}
	c.reportHazards(b, o, in, raw, waw, war, uninit)
}

func (m *refShadow) shadowRange(c *Core, sh []cell, first int, idx int32, o operand, p Pipe, vc *[numPipes]int32, raw, waw, war, uninit *hazard) {
	s := &c.sch
	last := len(sh)
	for k := first; k < last; {
		cl := &sh[k]
		prev := *cl
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
		upd := *cl
		e := k + 1
		for e < last && sh[e] == prev {
			sh[e] = upd
			e++
		}
		if e > k+1 {
			raw.extendRun(k, e-1)
			waw.extendRun(k, e-1)
			war.extendRun(k, e-1)
			uninit.extendRun(k, e-1)
		}
		k = e
	}
}

func (m *refShadow) markWritten(c *Core, b *Buffer, lo, n int) {
	first, last := c.granules(b, lo, n)
	sh := m.shadowOf(b.space, last)
	for k := first; k < last; k++ {
		if sh[k].w == 0 {
			sh[k].w = hostWrite
		}
	}
}

func (m *refShadow) accInit(c *Core, op string, dst *Buffer, n int, init bool) {
	s := &c.sch
	if !s.san || n <= 0 || dst == nil || !dst.live {
		return
	}
	if !init && !containsBuf(s.viewed, dst) {
		first, last := c.granules(dst, 0, n)
		sh := m.shadowOf(dst.space, last)
		k := first
		for k < last && sh[k].w != 0 {
			k++
		}
		if k < last {
			e := k + 1
			for e < last && sh[e].w == 0 {
				e++
			}
			g := c.mem[dst.space].align
			lo, hi := k*g-dst.off, min(e*g-dst.off, n)
			in := instInfo{op: op, p: PipeM, seq: s.seq[PipeM] + 1}
			c.finding(Finding{Kind: KindUninit, Core: c.BlockIdx, Pipe: PipeM, Buffer: fmt.Sprintf("%s@%#x", dst.space, dst.off), Lo: lo, Hi: hi, Inst: in.String(),
				Message: fmt.Sprintf("%s: core %d pipe M: %s accumulates onto an accumulator never written (%s buffer at %#x, bytes [%d, %d)): its first Mmad does not start from zero",
					KindUninit, c.BlockIdx, in, dst.space, dst.off, lo, hi)})
		}
	}
	if s.mode == SyncImplicit || !init {
		m.markWritten(c, dst, 0, n)
	}
}

func (m *refShadow) scalarWriteCheck(c *Core, b *Buffer, off, n int) {
	s := &c.sch
	first, last := c.granules(b, off, n)
	if first == last {
		return
	}
	sh := m.shadowOf(b.space, last)
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
	c.hazardFindings(b, off, off+n, instInfo{op: "ScalarWrite", p: PipeS, seq: s.sSeq}, []kindHazard{
		{KindWAR, war, "overwrites while another pipe still reads:"},
		{KindWAW, waw, "overwrites an unsynchronised write of"},
	})
}

func (m *refShadow) scalarCheck(c *Core, b *Buffer, off, n int) {
	s := &c.sch
	first, last := c.granules(b, off, n)
	if first == last {
		return
	}
	sh := m.shadowOf(b.space, last)
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
	c.hazardFindings(b, off, off+n, instInfo{op: "ScalarRead", p: PipeS, seq: s.sSeq}, []kindHazard{
		{KindRAW, raw, "reads before the producer signalled:"},
		{KindUninit, uninit, "reads local memory never written"},
	})
}
