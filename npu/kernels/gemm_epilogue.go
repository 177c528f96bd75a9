package kernels

import (
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

// The gemm epilogue, on the vector side of the core: per output block,
// the accumulators move L0C → UB in row chunks, are dequantised (int8),
// scaled by alpha, get beta·C added, are rounded to the output dtype and
// stored. The steps round exactly where the op contract's evaluation
// model says (ops/gemm.go): each is one exact operation rounded once to
// the mode's epilogue format E (fp32, or fp16 for mode fp16, whose values
// stay in fp32 storage), and the output is rounded once under the
// profile's numerics. The fused steps are vector instructions the kernel
// defines (npu.Core.VectorFused); the cost model counts each as one.

// epilogueBuffers are a core's buffers for the output side of a GEMM
// tiling: the L0C accumulator of one output block and the UB chunks the
// epilogue works in (c, sa and sb only when the tiling has a C term or
// int8 scales).
type epilogueBuffers struct {
	l0c, acc, out, c, sa, sb *npu.Buffer
}

// allocEpilogue allocates t's epilogue buffers on core.
func allocEpilogue(core *npu.Core, t GEMMTiling) (epilogueBuffers, error) {
	var b epilogueBuffers
	var err error
	if b.l0c, err = core.Alloc(npu.L0C, max(t.BaseM*t.BaseN*4, 1)); err != nil {
		return b, err
	}
	if b.acc, err = core.AllocUB(t.ChunkRows * t.BaseN * 4); err != nil {
		return b, err
	}
	if b.out, err = core.AllocUB(t.ChunkRows * t.BaseN * t.OutDType.Size()); err != nil {
		return b, err
	}
	if t.HasC {
		if b.c, err = core.AllocUB(t.ChunkRows * t.BaseN * t.CDType.Size()); err != nil {
			return b, err
		}
	}
	if t.Int8 {
		if b.sa, err = core.AllocUB(t.BaseM * 4); err != nil {
			return b, err
		}
		if b.sb, err = core.AllocUB(t.BaseN * 4); err != nil {
			return b, err
		}
	}
	return b, nil
}

// gemmEpilogue moves one output block's accumulators L0C → UB in row
// chunks, applies the epilogue and stores the real rows and columns (GM
// row out.BaseRow()+i holds output row i), synchronised by e (the
// events of gemm_sync.go): FIX starts once the block's Mmads are done and
// hands L0C back to the cube after its last chunk.
func gemmEpilogue(core *npu.Core, e *gemmSync, f gemmFaults, t GEMMTiling, bufs epilogueBuffers,
	c, sa, sb *tensor.Tensor, out *npu.GuardedOutput, m0, n0, mr, nr, mc, nc int) error {
	l0c, accUB, outUB, cUB, saUB, sbUB := bufs.l0c, bufs.acc, bufs.out, bufs.c, bufs.sa, bufs.sb
	e.handOff(npu.PipeM, npu.PipeFIX, gemmEvL0C)
	if t.Int8 {
		e.take(npu.PipeV, npu.PipeMTE2, gemmEvScale) // the last block's dequantisation is done
		sa, sb = f.scales(sa, sb)
		saN, sbN := mr, nr
		if t.ScaleABcst {
			saN = 1
		}
		if t.ScaleBBcst {
			sbN = 1
		}
		off := m0
		if t.ScaleABcst {
			off = 0
		}
		if err := core.DataCopyPadIn(saUB, sa, off, saN); err != nil {
			return err
		}
		off = n0
		if t.ScaleBBcst {
			off = 0
		}
		if err := core.DataCopyPadIn(sbUB, sb, off, sbN); err != nil {
			return err
		}
		e.handOff(npu.PipeMTE2, npu.PipeV, gemmEvScale)
	}
	for r0 := 0; r0 < mr; r0 += t.ChunkRows {
		rows := min(t.ChunkRows, mr-r0)
		n := rows * nc
		// The last chunk's reads of the UB copy are done (V's, and
		// MTE3's where the NZ store staged its rows there).
		e.take(npu.PipeV, npu.PipeFIX, gemmEvAcc)
		e.take(npu.PipeMTE3, npu.PipeFIX, gemmEvAcc)
		if err := core.FixpipeToUB(accUB, l0c, r0*nc, n); err != nil {
			return err
		}
		if r0+t.ChunkRows >= mr {
			e.set(npu.PipeFIX, npu.PipeM, gemmEvL0C) // the next block may overwrite L0C
		}
		e.handOff(npu.PipeFIX, npu.PipeV, gemmEvAcc)
		if t.Int8 {
			if !t.ScaleBBcst {
				// Scales of the padding columns: any finite value (never stored).
				s := sbUB.F32()
				for j := nr; j < nc; j++ {
					s[j] = 1
				}
			}
			if err := dequantI32(core, accUB, accUB, saUB, sbUB, rows, nc, r0, t.ScaleABcst, t.ScaleBBcst); err != nil {
				return err
			}
		}
		scaleByAlpha := func() error {
			if t.Alpha == 1 {
				return nil
			}
			return scaleRound(core, t.EpiDType, accUB, accUB, t.Alpha, n)
		}
		addBetaC := func() error {
			if !t.HasC {
				return nil
			}
			e.take(npu.PipeV, npu.PipeMTE2, gemmEvC) // the last chunk's beta·C is done
			if err := core.DataCopy2DIn(cUB, c, t.N, m0+r0, n0, rows, nr, nc, rows); err != nil {
				return err
			}
			e.handOff(npu.PipeMTE2, npu.PipeV, gemmEvC)
			if err := addScaledRound(core, t.EpiDType, accUB, accUB, cUB, t.CDType, t.Beta, n); err != nil {
				return err
			}
			e.set(npu.PipeV, npu.PipeMTE2, gemmEvC)
			return nil
		}
		// alpha·acc, then + beta·C.
		if err := f.alphaBeta(scaleByAlpha, addBetaC); err != nil {
			return err
		}
		e.take(npu.PipeMTE3, npu.PipeV, gemmEvOut) // the last chunk's store has read the cast rows
		if err := core.Cast(t.OutDType, tensor.Float32, outUB, accUB, n); err != nil {
			return err
		}
		if t.OutNZ {
			if err := storeNZ(core, e, f, t, outUB, accUB, out, m0, r0, n0, rows, mr, nr, nc); err != nil {
				return err
			}
		} else {
			e.handOff(npu.PipeV, npu.PipeMTE3, gemmEvOut)
			if err := core.DataCopy2DOut(out.GM(), t.N, out.BaseRow()+m0+r0, n0, f.storeRows(rows, r0, mr, mc, t.ChunkRows), nr, outUB, f.storeStride(nc, nr)); err != nil {
				return err
			}
			e.set(npu.PipeMTE3, npu.PipeV, gemmEvOut)
		}
		if cc := f.storeOverC(c); cc != nil {
			e.handOff(npu.PipeV, npu.PipeMTE3, gemmEvOut)
			if err := core.DataCopy2DOut(cc, t.N, m0+r0, n0, rows, nr, outUB, nc); err != nil {
				return err
			}
			e.set(npu.PipeMTE3, npu.PipeV, gemmEvOut)
		}
		e.set(npu.PipeV, npu.PipeFIX, gemmEvAcc) // V is done with the chunk
	}
	if t.Int8 {
		e.set(npu.PipeV, npu.PipeMTE2, gemmEvScale)
	}
	return nil
}

var fp16Format, _ = tensor.Float16.FloatFormat()

// roundTo returns RN_E(x) for a value x that is the exact result of one
// operation on E-values computed in float64 (exact for products, or a
// correctly rounded sum whose second rounding is innocuous). A NaN is the
// default NaN (npu.CanonNaN): the host's float64 arithmetic picked its
// sign and payload.
func roundTo(e tensor.DType, x float64) float32 {
	if x != x {
		return npu.CanonNaN(float32(x))
	}
	if e == tensor.Float16 {
		return float32(fp16Format.RoundNearestEven(x))
	}
	return float32(x)
}

// dequantI32 converts the [rows × cols] int32 accumulators of src (UB,
// dense, cols per row) to fp32 in dst (UB, may alias src) and dequantises
// them: v ← RN32(RN32(sa·sb)·RN32(acc)). Row i uses sa[saOff+i] (sa[0]
// when saBcst) and column j uses sb[j] (sb[0] when sbBcst); sa and sb are
// fp32 UB buffers. IEEE arithmetic (the profile's numerics apply at the
// store). One vector instruction over both operands' bytes.
func dequantI32(core *npu.Core, dst, src, sa, sb *npu.Buffer, rows, cols, saOff int, saBcst, sbBcst bool) error {
	if rows < 0 || cols < 0 || saOff < 0 {
		return fmt.Errorf("dequant: negative extent")
	}
	n := rows * cols
	saN, sbN := saOff+rows, cols
	saR := rows // the scales read: rows saOff.. of sa
	if saBcst {
		saN, saR = 1, 1
	}
	if sbBcst {
		sbN = 1
	}
	return core.VectorFused("dequant", 2*n*4, func() {
		out, in, fa, fb := dst.F32()[:n], src.I32()[:n], sa.F32(), sb.F32()
		for i := 0; i < rows; i++ {
			si := fa[0]
			if !saBcst {
				si = fa[saOff+i]
			}
			for j := 0; j < cols; j++ {
				sj := fb[0]
				if !sbBcst {
					sj = fb[j]
				}
				s := float32(float64(si) * float64(sj))                        // exact product, one rounding
				v := float32(in[i*cols+j])                                     // RN32 of the integer
				out[i*cols+j] = npu.CanonNaN(float32(float64(s) * float64(v))) // a NaN scale: the default NaN
			}
		}
	}, npu.VectorOperand{Name: "dst", Buf: dst, Bytes: n * 4}, npu.VectorOperand{Name: "src", Buf: src, Bytes: n * 4, ReadBytes: n * 4},
		npu.VectorOperand{Name: "scale_a", Buf: sa, Bytes: saN * 4, ReadBytes: saR * 4}, npu.VectorOperand{Name: "scale_b", Buf: sb, Bytes: sbN * 4, ReadBytes: sbN * 4})
}

// scaleRound sets dst[i] = RN_E(RN_E(s)·src[i]) for the first n
// fp32-stored E values of UB buffers: the alpha step.
func scaleRound(core *npu.Core, e tensor.DType, dst, src *npu.Buffer, s float64, n int) error {
	return core.VectorFused("scale", n*4, func() {
		sh := float64(roundTo(e, s))
		out, in := dst.F32()[:n], src.F32()[:n]
		for i, v := range in {
			out[i] = roundTo(e, sh*float64(v))
		}
	}, npu.VectorOperand{Name: "dst", Buf: dst, Bytes: n * 4}, npu.VectorOperand{Name: "src", Buf: src, Bytes: n * 4, ReadBytes: n * 4})
}

// addScaledRound sets dst[i] = RN_E(src[i] + RN_E(RN_E(beta)·x[i])) for
// the first n values: src and dst fp32-stored E values in UB, x a UB
// buffer of dtype xd (fp32, fp16 or bf16). The beta·C step.
func addScaledRound(core *npu.Core, e tensor.DType, dst, src, x *npu.Buffer, xd tensor.DType, beta float64, n int) error {
	switch xd {
	case tensor.Float32, tensor.Float16, tensor.BFloat16:
	default:
		return fmt.Errorf("beta·C: dtype %s not supported", xd)
	}
	return core.VectorFused("beta·C", 2*n*4, func() {
		var get func(i int) float64
		switch xd {
		case tensor.Float32:
			f := x.F32()
			get = func(i int) float64 { return float64(f[i]) }
		case tensor.Float16:
			f := x.F16()
			get = func(i int) float64 { return float64(f[i].Float32()) }
		default:
			f := x.BF16()
			get = func(i int) float64 { return f[i].Float64() }
		}
		bh := float64(roundTo(e, beta))
		out, in := dst.F32()[:n], src.F32()[:n]
		for i, v := range in {
			t := float64(roundTo(e, bh*get(i))) // exact product, one rounding
			// The float64 sum of two E values is exact for fp16 and
			// correctly rounded for fp32, where rounding it again to fp32
			// is innocuous.
			out[i] = roundTo(e, float64(v)+t)
		}
	}, npu.VectorOperand{Name: "dst", Buf: dst, Bytes: n * 4}, npu.VectorOperand{Name: "src", Buf: src, Bytes: n * 4, ReadBytes: n * 4},
		npu.VectorOperand{Name: "x", Buf: x, Bytes: n * xd.Size(), ReadBytes: n * xd.Size()})
}
