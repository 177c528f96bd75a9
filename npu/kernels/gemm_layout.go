package kernels

import (
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// FRACTAL_NZ operands of gemm and gemm24 (ops/gemm_layout.go): a matrix
// [rows, cols] of a dtype of C0 = 32 bytes per fractal row is held as
// [ceil(cols/C0), ceil(rows/16), 16, C0], element (r, c) at
// ((c/C0·M1 + r/16)·16 + r mod 16)·C0 + c mod C0 (M1 = ceil(rows/16)),
// padding +0.
//
// The output side is the cube's own: each block's results leave UB as
// fractal rows, one contiguous burst of rows·C0 elements per fractal
// column (a single 2-D DataCopy over the [N1, M1·16·C0] view of out), and
// the last block row also writes the padding rows of its fractal, +0, as
// the padding lanes are. The input side is converted to ND on the host
// before the launch (nzOperandND) and then takes the ND path: the
// emulator's L1 tiles are row-major views that only npu.Core.LoadL1 fills,
// from a row-major GM matrix, so an NZ operand's GM → L1 copy as
// contiguous fractal rows (Ascend's copy of an NZ operand) has no
// primitive yet; its cost is charged as the ND operand's strided copy.
// The numerics are the ND path's in every mode, so the NZ out is the ND
// out mapped through the layout bit for bit (TestGEMMNZMatchesND).

// nzOffset is the element offset of (r, c) in an NZ matrix of m1 row
// fractals and C0 c0: the layout's one definition in the kernels.
func nzOffset(r, c, m1, c0 int) int {
	return ((c/c0*m1+r/16)*16+r%16)*c0 + c%c0
}

// nzOperandND returns the ND [rows, cols] matrix the NZ operand t holds,
// reading no padding (under FaultGEMMNZReadAsND, t's bytes taken as the
// row-major matrix itself: the ND stride on NZ data).
func nzOperandND(t *tensor.Tensor, rows, cols int, readAsND bool) (*tensor.Tensor, error) {
	if len(t.Shape) != 4 {
		return nil, fmt.Errorf("input of shape %v is not FRACTAL_NZ", t.Shape)
	}
	nd, err := tensor.New(t.DType, rows, cols)
	if err != nil {
		return nil, err
	}
	m1, c0 := t.Shape[1], t.Shape[3]
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			src := nzOffset(r, c, m1, c0)
			if readAsND {
				src = r*cols + c
			}
			nd.SetBits(r*cols+c, t.Bits(src))
		}
	}
	return nd, nil
}

// gemmInputsND returns in with its NZ operands (named in nz, with their
// logical [rows, cols]) converted to ND.
func gemmInputsND(in map[string]*tensor.Tensor, nz map[string][2]int, f gemmFaults) (map[string]*tensor.Tensor, error) {
	if len(nz) == 0 {
		return in, nil
	}
	out := make(map[string]*tensor.Tensor, len(in))
	for name, t := range in {
		out[name] = t
	}
	for name, rc := range nz {
		t := in[name]
		if t == nil {
			continue
		}
		nd, err := nzOperandND(t, rc[0], rc[1], f.nzReadAsND)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		out[name] = nd
	}
	return out, nil
}

// gemmNZOperands lists the NZ operands of layout l among a, b and c with
// their logical shapes.
func gemmNZOperands(l ops.GEMMLayout, m, k, n int) map[string][2]int {
	nz := map[string][2]int{}
	if l.A == ops.FormatFractalNZ {
		nz["a"] = [2]int{m, k}
	}
	if l.B == ops.FormatFractalNZ {
		nz["b"] = [2]int{k, n}
	}
	if l.Out == ops.FormatFractalNZ {
		nz["c"] = [2]int{m, n}
	}
	return nz
}

// newGEMMOut allocates t's output between guard bands: the [M, N] matrix,
// or for an NZ out its N1 fractal columns as the rows of an [N1, M1·16·C0]
// matrix (gemmOutTensor gives it its NZ shape).
func newGEMMOut(t GEMMTiling) (*npu.GuardedOutput, error) {
	if !t.OutNZ {
		return npu.NewGuardedMatrix("out", t.OutDType, t.M, t.N)
	}
	c0 := 32 / t.OutDType.Size()
	return npu.NewGuardedMatrix("out", t.OutDType, ceilDiv(t.N, c0), roundUp(t.M, 16)*c0)
}

// gemmOutTensor is out's tensor in t's output layout.
func gemmOutTensor(t GEMMTiling, out *npu.GuardedOutput) *tensor.Tensor {
	res := out.Tensor()
	if t.OutNZ {
		res.Shape = ops.GEMMNZShape(t.M, t.N, t.OutDType)
	}
	return res
}

// emptyGEMMOut is the output of a launch with no output block (M or N
// zero): zeros in t's output layout.
func emptyGEMMOut(t GEMMTiling) (*tensor.Tensor, error) {
	if t.OutNZ {
		return tensor.New(t.OutDType, ops.GEMMNZShape(t.M, t.N, t.OutDType)...)
	}
	return tensor.New(t.OutDType, t.M, t.N)
}

// storeNZ stores rows [r0, r0+rows) of the block at (m0, n0) (nr real
// columns, nc per UB row) from outUB to the NZ out: the UB tile is
// rearranged into fractal-column order in stage (the accumulator chunk,
// free once cast; a vector pass, padding lanes +0) and leaves in one 2-D
// DataCopy of one burst of rows·C0 elements per fractal column. The
// block's last chunk in the last block row then writes the padding rows of
// the last row fractal, +0.
func storeNZ(core *npu.Core, e *gemmSync, f gemmFaults, t GEMMTiling, outUB, stage *npu.Buffer, out *npu.GuardedOutput, m0, r0, n0, rows, mr, nr, nc int) error {
	size := t.OutDType.Size()
	c0 := 32 / size
	ld := roundUp(t.M, 16) * c0
	q := ceilDiv(nr, c0)
	rows = f.nzStoredRows(t.M, m0+r0, rows)
	if rows > 0 {
		e.take(npu.PipeMTE3, npu.PipeV, gemmEvAcc) // the last store has read the stage
		dst, src := stage.Bytes(), outUB.Bytes()
		for qq := 0; qq < q; qq++ {
			for r := 0; r < rows; r++ {
				d := (qq*rows + r) * c0 * size
				lanes := min(c0, nr-qq*c0)
				s := (r*nc + qq*c0) * size
				copy(dst[d:d+lanes*size], src[s:s+lanes*size])
				clear(dst[d+lanes*size : d+c0*size])
			}
		}
		core.VectorWork(q * rows * c0 * size)
		e.handOff(npu.PipeV, npu.PipeMTE3, gemmEvAcc)
		if err := core.DataCopy2DOut(out.GM(), ld, out.BaseRow()+n0/c0, (m0+r0)*c0, q, rows*c0, stage, rows*c0); err != nil {
			return err
		}
		e.stageStored()
	}
	if r0+rows < mr || m0+mr < t.M || f.nzLastRowDropped {
		return nil
	}
	// The padding rows M … M1·16 of the last row fractal, in pieces
	// the stage holds.
	per := max(1, stage.Len()/(q*c0*size))
	for p0 := t.M; p0 < roundUp(t.M, 16); p0 += per {
		z := min(per, roundUp(t.M, 16)-p0)
		e.take(npu.PipeMTE3, npu.PipeV, gemmEvAcc)
		clear(stage.Bytes()[:q*z*c0*size])
		core.VectorWork(q * z * c0 * size)
		e.handOff(npu.PipeV, npu.PipeMTE3, gemmEvAcc)
		if err := core.DataCopy2DOut(out.GM(), ld, out.BaseRow()+n0/c0, p0*c0, q, z*c0, stage, z*c0); err != nil {
			return err
		}
		e.stageStored()
	}
	return nil
}
