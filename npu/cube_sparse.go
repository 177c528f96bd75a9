package npu

import (
	"fmt"

	"github.com/npuverify/npuverify/tensor"
)

// The cube's 2:4 structured-sparse mode and a cost hook for vector work
// that has no primitive of its own. Added for the sparse operators
// (gemm24, sparse24_prune, sparse_compress): MmadSparse multiplies a
// compressed left operand, whose decoded index picks the right operand's
// row per value, so only the kept half of K is multiplied and charged.

// MmadSparse runs one sparse cube multiply-accumulate C[M×N] (+)= A·B into
// dst (L0C) where A is 2:4 compressed: a (L0A) is [M × K/2] values and idx
// (a UB or L1 buffer of uint8, idxLd per row; so K ≤ 256) gives, for row r and
// compressed position t, the row of b (L0B, [K × N]) that a[r,t]
// multiplies, relative to b's first row. K must be a multiple of twice
// the fractal's k. p.UsefulK counts the compressed positions to
// accumulate (the rest are padding); p.Blocked rounds once per 8
// compressed positions (16 dense k), the blocked16 model. Cost: one cycle
// per fractal step of the compressed [M × K/2 × N] product plus the index
// read at the L0 load bandwidth.
func (c *Core) MmadSparse(dst *Buffer, a *L0Tile, idx *Buffer, idxLd int, b *L0Tile, p MmadParams) error {
	const op = "MmadSparse"
	if a == nil || b == nil || a.Buf == nil || b.Buf == nil || idx == nil {
		return fmt.Errorf("%s: nil operand", op)
	}
	if a.Buf.space != L0A || b.Buf.space != L0B {
		return fmt.Errorf("%s: operands in %s and %s, want L0A and L0B", op, a.Buf.space, b.Buf.space)
	}
	if idx.space != UB && idx.space != L1 {
		return fmt.Errorf("%s: index in %s, want UB or L1", op, idx.space)
	}
	if a.DType != b.DType {
		return fmt.Errorf("%s: operand dtypes %s and %s differ", op, a.DType, b.DType)
	}
	kh := p.K / 2
	if a.Rows != p.M || a.Cols != kh || b.Rows != p.K || b.Cols != p.N {
		return fmt.Errorf("%s: operands %d×%d and %d×%d do not match M=%d K/2=%d K=%d N=%d", op, a.Rows, a.Cols, b.Rows, b.Cols, p.M, kh, p.K, p.N)
	}
	fr := c.prof.CubeFractal(a.DType)
	if p.M%fr.M != 0 || p.K%(2*fr.K) != 0 || p.N%fr.N != 0 {
		return fmt.Errorf("%s: M=%d K=%d N=%d not multiples of the %d×%d×%d fractal (K of twice its k)", op, p.M, p.K, p.N, fr.M, 2*fr.K, fr.N)
	}
	if (a.DType == tensor.Int8) != (p.Acc == tensor.Int32) || (p.Acc != tensor.Int32 && p.Acc != tensor.Float32 && p.Acc != tensor.Float16) {
		return fmt.Errorf("%s: accumulator %s does not fit %s inputs", op, p.Acc, a.DType)
	}
	if err := c.checkBuf(op+": dst", dst, L0C, p.M*p.N*4); err != nil {
		return err
	}
	if p.K > 256 {
		return fmt.Errorf("%s: K=%d exceeds the 256 rows a uint8 index addresses", op, p.K)
	}
	if err := c.checkBuf(op+": idx", idx, idx.space, p.M*idxLd); err != nil {
		return err
	}
	if p.UsefulK < 0 || p.UsefulK > kh || idxLd < kh {
		return fmt.Errorf("%s: UsefulK %d outside [0, K/2=%d] or index stride %d < K/2", op, p.UsefulK, kh, idxLd)
	}
	if c.sch.mode == SyncImplicit { // an explicit core's check is the instruction's own (its dst operand)
		c.accInit(op, dst, p.M*p.N*4, p.Init)
	}
	if p.Init {
		clear(dst.data[:p.M*p.N*4])
	}
	if p.M == 0 || p.N == 0 || kh == 0 {
		return nil
	}
	ix := idx.U8()
	for r := 0; r < p.M; r++ {
		for t := 0; t < p.UsefulK; t++ {
			if k := ix[r*idxLd+t]; int(k) >= p.K {
				return fmt.Errorf("%s: index [%d,%d] = %d outside [0, %d)", op, r, t, k, p.K)
			}
		}
	}
	n := p.N
	switch {
	case c.costOnly:
		// Priced below, not computed (WithCostOnly); viewed, as the
		// computation views them, so that the schedule is the same.
		if p.Acc == tensor.Int32 {
			dst.I32()
		} else {
			dst.F32()
		}
	case p.Acc == tensor.Int32:
		cc := dst.I32()[:p.M*n]
		for r := 0; r < p.M; r++ {
			for t := 0; t < p.UsefulK; t++ {
				x, k := a.i[r*a.ld+t], int(ix[r*idxLd+t])
				for j := 0; j < n; j++ {
					cc[r*n+j] += x * b.i[int(k)*b.ld+j]
				}
			}
		}
	case p.Blocked:
		const blk = blockK / 2
		var xs [blk + 1]float64
		scratch := make([]float64, 0, 2*blk+2)
		cc := dst.F32()[:p.M*n]
		for r := 0; r < p.M; r++ {
			for t0 := 0; t0 < p.UsefulK; t0 += blk {
				t1 := min(t0+blk, p.UsefulK)
				for j := 0; j < n; j++ {
					xs[0] = float64(cc[r*n+j])
					for t := t0; t < t1; t++ {
						xs[t-t0+1] = float64(a.f[r*a.ld+t]) * float64(b.f[int(ix[r*idxLd+t])*b.ld+j])
					}
					cc[r*n+j] = sumRound(p.Acc, xs[:t1-t0+1], &scratch)
				}
			}
		}
	case p.Acc == tensor.Float32 && a.DType == tensor.Float16:
		// fp16 products are exact in fp32, so float32 multiply-then-add is
		// the single rounding of the sequential model, Inf and NaN
		// included. The conversion keeps the compiler from fusing it (a
		// fused multiply-add would give the same value, the product being
		// exact, but the code then says what it computes on every
		// platform).
		cc := dst.F32()[:p.M*n]
		for r := 0; r < p.M; r++ {
			ci := cc[r*n : (r+1)*n]
			for t := 0; t < p.UsefulK; t++ {
				x, k := a.f[r*a.ld+t], int(ix[r*idxLd+t])
				saxpy(ci, x, b.f[k*b.ld:k*b.ld+n])
			}
		}
		if p.UsefulK > 0 {
			canonNaNs(cc) // the host's NaN → the default NaN, as fmaRound (nan.go)
		}
	default:
		cc := dst.F32()[:p.M*n]
		for r := 0; r < p.M; r++ {
			ci := cc[r*n : (r+1)*n]
			for t := 0; t < p.UsefulK; t++ {
				x, k := a.f[r*a.ld+t], int(ix[r*idxLd+t])
				for j, y := range b.f[k*b.ld : k*b.ld+n] {
					ci[j] = fmaRound(p.Acc, ci[j], x, y)
				}
			}
		}
	}
	steps := int64(p.M/fr.M) * int64(kh/fr.K) * int64(p.N/fr.N)
	// One M instruction: the compressed product plus the index read at
	// the L0 load bandwidth; its operands are known here.
	c.countCube(steps, int64(p.M)*int64(kh)*int64(p.N), int64(p.UsefulM)*int64(p.UsefulK)*int64(p.UsefulN))
	cyc := steps + int64((p.M*kh+L0LoadBytesPerCycle-1)/L0LoadBytesPerCycle)
	dstOp := rd(dst, 0, p.M*p.N*4)
	dstOp.read, dstOp.write = !p.Init, true
	c.sch.viewed = c.sch.viewed[:0]
	c.cubeOperands() // these tiles are consumed
	// The cube reads the tiles, not the whole buffers: a short last slice
	// leaves the rest of its L0 buffers unwritten, and never read.
	sz := a.DType.Size()
	c.issue(PipeM, op, cyc, gmAccess{}, rd(a.Buf, 0, p.M*kh*sz), rd(b.Buf, 0, p.K*p.N*sz), rd(idx, 0, min(p.M*idxLd, len(idx.data))), dstOp)
	if idx.space == UB {
		c.readUB(p.M * kh) // the cube's one read of UB (Cost.UBReuse)
	}
	return nil
}

// VectorWork charges one vector instruction sequence over bytes of UB
// data that a kernel emulates in Go because no primitive models it
// (a compare-and-select, a gather, a bit decode): VectorIssueCycles +
// ceil(bytes / VectorBytesPerCycle), like every vector primitive. Like
// ChargeVector it counts bytes as read from UB once (Cost.UBReuse).
func (c *Core) VectorWork(bytes int) {
	if bytes > 0 {
		c.issueAnon(PipeV, "VectorWork", c.vectorCycles(bytes))
		c.readUB(bytes)
	}
}

// saxpy sets c[j] = c[j] + float32(x·y[j]) for every j of c (y as long):
// the product rounded to fp32, then the sum, eight lanes at a time where
// the CPU has AVX (saxpyAVX) and the rest by saxpyGo. Not gonum's Saxpy,
// which the dense Mmad's paths call: as BLAS it returns at once for
// x = 0, where the model's c + 0·Inf is NaN (TestSaxpyMatchesPortable
// fails with it).
func saxpy(c []float32, x float32, y []float32) {
	y = y[:len(c)]
	v := 0
	if useSaxpyAVX {
		if v = len(c) &^ 7; v > 0 {
			saxpyAVX(&c[0], &y[0], x, v)
		}
	}
	saxpyGo(c[v:], x, y[v:])
}

// saxpyGo is saxpy one element at a time: the portable form of saxpyAVX
// (TestSaxpyMatchesPortable). The conversion keeps the compiler from
// fusing the multiply and the add.
func saxpyGo(c []float32, x float32, y []float32) {
	y = y[:len(c)]
	for j, v := range y {
		c[j] += float32(x * v)
	}
}
