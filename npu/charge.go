package npu

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
