package npu

import "math"

// ChargeVector counts one vector instruction over bytes that a kernel
// computes in Go on its UB buffers because the emulator has no dedicated
// primitive for it (exp, reductions, max, small quantisation loops). The
// kernel must only use it where an Ascend C kernel would issue a vector
// instruction over the same bytes, so modeled cycles stay honest. Given
// only a byte count, it counts the bytes as read from UB once (one
// operand stream, a lower bound on what the instruction reads;
// Cost.UBReuse).
func (c *Core) ChargeVector(bytes int) {
	if cyc := c.vectorCycles(bytes); cyc > 0 {
		c.issueAnon(PipeV, "ChargeVector", cyc)
	}
	c.readUB(bytes)
}

// ChargeCube counts a cube matrix multiply of m×k by k×n (padded to the
// fractal of in, which must be the cube's input dtype) that a kernel
// computes in Go on its local buffers (a matrix-vector product too small
// to stage through L1/L0). Cycles follow Mmad's model: one per fractal
// step. The product reads its operands where the kernel keeps them, in
// UB: m·k + k·n elements of the input dtype (2 bytes for fp16, 1 for
// int8) count as UB reads (Cost.UBReuse).
func (c *Core) ChargeCube(m, k, n int, fp16 bool) {
	fr := c.prof.CubeFP16
	if !fp16 {
		fr = c.prof.CubeInt8
	}
	up := func(x, f int) int { return (x + f - 1) / f * f }
	pm, pk, pn := up(m, fr.M), up(k, fr.K), up(n, fr.N)
	steps := int64(pm/fr.M) * int64(pk/fr.K) * int64(pn/fr.N)
	c.countCube(steps, int64(pm)*int64(pk)*int64(pn), int64(m)*int64(k)*int64(n))
	if steps > 0 {
		c.issueAnon(PipeM, "ChargeCube", steps)
	}
	size := 1
	if fp16 {
		size = 2
	}
	c.readUB((m*k + k*n) * size)
}

// dmaBursts is what a transfer costs GM: its contiguous runs (bursts),
// each moving the whole GM blocks (ub_block_bytes) it touches.
type dmaBursts struct {
	n     int64 // bursts
	bytes int64 // the blocks' bytes
	// The runs themselves, for the L2 model (l2.go): rows runs of
	// rowBytes bytes, stride apart, from GM byte start.
	start, rowBytes, stride, rows int
}

// bursts1D is one contiguous run of n bytes from GM byte start.
func (c *Core) bursts1D(start, n int) dmaBursts {
	return c.burstsOf(start, n, n, 1)
}

// burstsOf is rows runs of rowBytes bytes, stride bytes apart, from GM
// byte start: one run when they are contiguous (stride = rowBytes).
func (c *Core) burstsOf(start, rowBytes, stride, rows int) dmaBursts {
	if rows <= 0 || rowBytes <= 0 {
		return dmaBursts{}
	}
	if stride == rowBytes {
		rowBytes, rows = rowBytes*rows, 1
	}
	blk := c.prof.UBBlockBytes
	b := dmaBursts{start: start, rowBytes: rowBytes, stride: stride, rows: rows}
	for r := range rows {
		s := start + r*stride
		b.n++
		b.bytes += int64(((s+rowBytes+blk-1)/blk - s/blk) * blk)
	}
	return b
}

// chargeDMA counts one GM transfer of gmBytes (in: GM→local, on MTE2;
// out: on MTE3) in bursts b, named op, that accesses local operand loc and
// GM range gm, schedules it and returns its cycles: DMALatencyCycles +
// ceil(b.bytes / per-core share). A burst moves whole GM blocks, so a
// strided copy of short rows (an NCHW channel's plane, an ND matrix's
// panel) costs the blocks each row touches, and an aligned contiguous
// copy exactly its bytes.
func (c *Core) chargeDMA(in bool, gmBytes int, b dmaBursts, op string, gm gmAccess, loc operand) int64 {
	if gmBytes == 0 {
		return 0
	}
	cyc := c.dev.dmaLat + ceilCycles(float64(b.bytes)/c.dev.dmaRate[c.kind])
	c.cost.DMACycles += cyc
	c.cost.GMBursts += b.n
	c.logSpan(gm.key, b, !in)
	if in {
		c.cost.GMBurstBytesIn += b.bytes
		c.cost.GMBytesIn += int64(gmBytes)
		c.issue(PipeMTE2, op, cyc, gm, loc)
	} else {
		c.cost.GMBurstBytesOut += b.bytes
		c.cost.GMBytesOut += int64(gmBytes)
		c.issue(PipeMTE3, op, cyc, gm, loc)
	}
	return cyc
}

// ceilCycles rounds a cycle count up, except that a quotient within a
// relative 1e-9 of an integer is taken as that integer: profile values
// such as 1.8 GHz are not exact in binary, and 500 B at 18.5185… B/cycle
// should cost 27 cycles, not 28.
func ceilCycles(q float64) int64 {
	if r := math.Round(q); math.Abs(q-r) <= 1e-9*q {
		return int64(r)
	}
	return int64(math.Ceil(q))
}

// vectorCycles counts one vector instruction over bytes and returns its
// cycles: VectorIssueCycles + ceil(bytes / VectorBytesPerCycle). The
// caller schedules it (issue or issueAnon).
func (c *Core) vectorCycles(bytes int) int64 {
	if bytes == 0 {
		return 0
	}
	vb := c.prof.VectorBytesPerCycle
	cyc := int64(c.prof.VectorIssueCycles) + int64((bytes+vb-1)/vb)
	c.cost.VectorCycles += cyc
	c.cost.VectorBytes += int64(bytes)
	return cyc
}

// readUB counts bytes compute reads out of UB (Cost.UBReuse). It adds no
// cycles: the primitive that reads charges them.
func (c *Core) readUB(bytes int) {
	if bytes > 0 {
		c.cost.UBReadBytes += int64(bytes)
	}
}

// UBReuse is Cost.UBReuse of the given counters: 1 − load/read clamped to
// [0, 1], 0 when read is 0.
func UBReuse(load, read int64) float64 {
	if read <= 0 {
		return 0
	}
	return max(0, 1-float64(load)/float64(read))
}

// chargeCube counts cube work: cycles of the cube unit, MACs issued
// (including fractal padding) and the useful ones, as one instruction on
// pipe M. Its operands are attributed (issueAnon): the accumulators the
// primitive viewed, the L0A/L0B tiles loaded for it. Cube primitives call
// it.
func (c *Core) chargeCube(cycles, macs, usefulMACs int64) {
	c.countCube(cycles, macs, usefulMACs)
	c.issueAnon(PipeM, "Mmad", cycles, c.cubeOperands()...)
}

// countCube adds cube work to the counters.
func (c *Core) countCube(cycles, macs, usefulMACs int64) {
	c.cost.CubeCycles += cycles
	c.cost.CubeMACs += macs
	c.cost.CubeUsefulMACs += usefulMACs
}
