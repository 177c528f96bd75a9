package npu

import (
	"fmt"

	"github.com/npuverify/npuverify/tensor"
)

// The cube side of a core. Data flow of a matrix multiply, as in Ascend
// C's Matmul:
//
//	GM --LoadL1--> L1 --LoadL0--> L0A / L0B --Mmad--> L0C --FixpipeToUB--> UB --DataCopy2DOut--> GM
//
// by concept:
//   - dma2d.go: the 2-D DMA of blocks between GM and L1/UB
//     (DataCopy2DIn/Out);
//   - cube_operand.go: the operand views (GMMatrix, L1Tile, L0Tile) and
//     the loads LoadL1 and LoadL0;
//   - mmad.go, mmad_ref.go, mmad_fast.go, cube_round.go: the matrix
//     multiply-accumulate, its accumulate model and its exact roundings;
//   - this file: the fractal and the fixpipe (L0C → UB).
//
// What an operator does with the accumulators in UB (a GEMM's
// dequantisation, alpha and beta·C) is the operator's own epilogue, in its
// kernel (package npu/kernels), written with the vector primitives.
//
// Costs:
//   - DataCopy2DIn/Out: one DMA transfer (latency + GM bytes / share),
//     like DataCopyIn/Out, whatever the number of rows.
//   - LoadL0: ceil(bytes / L0LoadBytesPerCycle) cycles on pipe MTE1.
//   - Mmad: one cycle per fractal step (16×16×16 for fp16/bf16, 16×32×16
//     for int8 on ascend910b; fp32 inputs take two cycles per fp16-sized
//     step), counted in CubeCycles; CubeMACs counts M·K·N of the padded
//     operands, CubeUsefulMACs the caller's unpadded extents.
//   - FixpipeToUB: ceil(bytes / FixpipeBytesPerCycle) cycles on pipe FIX.
//   - DataCopy2DIn runs on MTE2 and DataCopy2DOut on MTE3, Mmad on M.

// FixpipeBytesPerCycle is the L0C → UB bandwidth of the model.
const FixpipeBytesPerCycle = 128

// CubeFractal returns the profile's cube fractal for input dtype in: the
// int8 fractal for int8, the fp16 one otherwise (fp32 runs on it at half
// rate).
func (p Profile) CubeFractal(in tensor.DType) Fractal {
	if in == tensor.Int8 {
		return p.CubeInt8
	}
	return p.CubeFP16
}

// FixpipeToUB moves the first n accumulator elements (4 bytes each, fp32
// or int32) of src (L0C) to dst (UB), unchanged.
func (c *Core) FixpipeToUB(dst, src *Buffer, srcOff, n int) error {
	const op = "FixpipeToUB"
	if err := c.checkBuf(op+": src", src, L0C, (srcOff+n)*4); err != nil {
		return err
	}
	if err := c.checkBuf(op+": dst", dst, UB, n*4); err != nil {
		return err
	}
	if srcOff < 0 || n < 0 {
		return fmt.Errorf("%s: negative offset or count", op)
	}
	copy(dst.data[:n*4], src.data[srcOff*4:(srcOff+n)*4])
	if n > 0 {
		c.issue(PipeFIX, op, int64((n*4+FixpipeBytesPerCycle-1)/FixpipeBytesPerCycle), gmAccess{}, rd(src, srcOff*4, n*4), wr(dst, 0, n*4))
	}
	return nil
}
