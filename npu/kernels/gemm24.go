package kernels

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// gemm24: out = A·B with A 2:4 compressed (ops/gemm24.go), on the cube's
// sparse mode. The host tiling is gemm's for the dense M×K×N shape (same
// output blocks, cores and K panels, so the cost model compares the two
// on equal terms), with baseK rounded up to twice the fractal's k so each
// slice's compressed half is whole fractals. Per output block and K panel
// a core DMAs the compressed A panel [mr × kr/2] into L1, the meta panel
// [mr × kr/4] into UB and the B panel [kr × nr] into L1; per baseK slice
// it decodes the slice's meta in UB into uint8 B-row indices (a vector
// pass), loads L0A (compressed) and L0B (dense rows) and runs MmadSparse,
// which multiplies only the kept k. The epilogue is gemm's (int8
// dequantisation, the cast to fp16, the store between guard bands).

// GEMM24Options overrides the tiling (a valid variant for the mutation
// score): output block sides and the core count, as in GEMMOptions.
type GEMM24Options struct {
	BaseM, BaseN, BlockDim int
	// BufferNum is the ping-pong depth of every stage, as in GEMMOptions.
	BufferNum int
}

// NewGEMM24Tiling returns the tiling of an M×K×N gemm24.
func NewGEMM24Tiling(prof npu.Profile, cfg ops.GEMMConfig, m, k, n int, opt GEMM24Options) (GEMMTiling, error) {
	o := GEMMOptions{BaseM: opt.BaseM, BaseN: opt.BaseN, BlockDim: opt.BlockDim, BufferNum: opt.BufferNum, sparse24: true}
	t, err := GEMMTilingWith(prof, cfg, m, k, n, o)
	if err != nil {
		return t, fmt.Errorf("gemm24: %w", err)
	}
	step := gemm24KAlign(t.Frac)
	if step > gemm24MaxSliceK {
		return t, fmt.Errorf("gemm24: %s.k: %d makes a slice of %d dense k, past the %d rows of b a uint8 index addresses (a fractal k of at most %d)",
			gemm24FractalField(t.In), t.Frac.K, step, gemm24MaxSliceK, gemm24MaxSliceK/2)
	}
	if t.BaseK%step != 0 || t.BaseK > gemm24MaxSliceK {
		// baseK rounded up to the granule; when the L0s cannot hold that
		// (a small device), one granule of k, and then one fractal a side.
		fr := t.Frac
		var first error
		for _, b := range [][3]int{
			{t.BaseM, t.BaseN, min(roundUp(t.BaseK, step), roundDown(gemm24MaxSliceK, step))},
			{t.BaseM, t.BaseN, step}, {fr.M, fr.N, step},
		} {
			if opt.BaseM > 0 && b[0] != opt.BaseM || opt.BaseN > 0 && b[1] != opt.BaseN {
				continue
			}
			o.BaseM, o.BaseN, o.BaseK = b[0], b[1], b[2]
			var err error
			if t, err = GEMMTilingWith(prof, cfg, m, k, n, o); err == nil {
				break
			}
			if first == nil {
				first = err
			}
		}
		if t.BaseK%step != 0 || t.BaseK > gemm24MaxSliceK || t.BaseM == 0 {
			if first == nil {
				first = fmt.Errorf("gemm: BaseK %d is not a multiple of %d", t.BaseK, step)
			}
			return GEMMTiling{}, fmt.Errorf("gemm24: %w", first)
		}
	}
	// gemm's epilogue chunk may take the whole UB; gemm24 also keeps two
	// meta panels and the slice's decoded indices there (gemm24Kernel), so
	// when they do not fit beside it the chunk takes fewer rows.
	if reserved := gemm24MetaUB(prof, t); t.UBBytes+reserved > prof.UBBytes {
		if err := t.fitEpilogue(prof, reserved); err != nil {
			return t, fmt.Errorf("gemm24: %w", err)
		}
	}
	return t, nil
}

// gemm24MaxSliceK is the most dense k one baseK slice may span: MmadSparse
// addresses the slice's rows of b with uint8 indices.
const gemm24MaxSliceK = 256

// gemm24KAlign is the granule of baseK: twice the fractal's k (so a
// slice's compressed half is whole fractals) and whole 2:4 groups of 4
// (a fractal k of 1 made slices of half a group, whose meta no slice
// held whole).
func gemm24KAlign(fr npu.Fractal) int { return lcm(2*fr.K, 4) }

// gemm24FractalField is the profile field of the fractal of dtype in.
func gemm24FractalField(in tensor.DType) string {
	if in == tensor.Int8 {
		return "cube_fractal_int8"
	}
	return "cube_fractal_fp16"
}

// gemm24MetaUB is the UB gemm24Kernel holds besides the epilogue: two
// meta panels [BaseM × panelK/4] and two decoded index tiles [BaseM ×
// BaseK/2] (ping-pong with the L0 tiles, so that the next slice's decode
// overlaps this slice's Mmad), each rounded up to the UB alignment.
func gemm24MetaUB(prof npu.Profile, t GEMMTiling) int {
	a := prof.UBAlign()
	panelK := min(t.depth(), roundUp(max(t.K, 1), gemm24KAlign(t.Frac)))
	return 2*roundUp(max(t.BaseM*panelK/4, 1), a) + 2*roundUp(max(t.BaseM*t.BaseK/2, 1), a)
}

// GEMM24Kernel is gemm24's KernelFunc.
func GEMM24Kernel(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	cfg, err := ops.ParseGEMM24(p)
	if err != nil {
		return nil, nil, err
	}
	vp, _ := ops.GEMM24.Validate(p)
	if err := ops.CheckInputs(ops.GEMM24, vp, in); err != nil {
		return nil, nil, err
	}
	m, k, n, err := ops.GEMM24Shape(vp, in)
	if err != nil {
		return nil, nil, err
	}
	// An NZ b is converted to ND on the host (gemm_layout.go).
	nz := gemmNZOperands(ops.GEMMLayout{B: cfg.Layout.B}, m, k, n)
	if in, err = gemmInputsND(in, nz, gemmFaults{}); err != nil {
		return nil, nil, fmt.Errorf("gemm24: %w", err)
	}
	t, err := NewGEMM24Tiling(dev.Profile(), cfg, m, k, n, variantOptions[GEMM24Options](ctx))
	if err != nil {
		return nil, nil, err
	}
	t.OutNZ = cfg.Layout.Out == ops.FormatFractalNZ
	var sa, sb *tensor.Tensor
	if t.Int8 {
		sa, sb = in["scale_a"], in["scale_b"]
		t.ScaleABcst, t.ScaleBBcst = sa.Len() == 1, sb.Len() == 1
	}
	if t.BlockDim == 0 {
		out, err := emptyGEMMOut(t)
		if err != nil {
			return nil, nil, fmt.Errorf("gemm24: %w", err)
		}
		return map[string]*tensor.Tensor{"out": out}, dev.ZeroCost(), nil
	}
	out, err := newGEMMOut(t)
	if err != nil {
		return nil, nil, fmt.Errorf("gemm24: %w", err)
	}
	defer out.Release()
	ga, err := npu.NewGMMatrix(in["a_values"])
	if err != nil {
		return nil, nil, fmt.Errorf("gemm24: input \"a_values\": %w", err)
	}
	gb, err := npu.NewGMMatrix(in["b"])
	if err != nil {
		return nil, nil, fmt.Errorf("gemm24: input \"b\": %w", err)
	}
	gb.NZ = cfg.Layout.B == ops.FormatFractalNZ // loaded a burst per column fractal
	f := newGEMM24Faults(npu.FaultsFrom(ctx))
	cost, err := dev.LaunchOn(ctx, npu.AICore, t.BlockDim, gemm24Kernel(t, f, ga, in["a_meta"], gb, sa, sb, out))
	if err != nil {
		return nil, nil, fmt.Errorf("gemm24: %w", err)
	}
	f.afterLaunch(npu.HostWrite(ctx, in["a_meta"]))
	res := map[string]*tensor.Tensor{"out": gemmOutTensor(t, out)}
	if err := npu.CheckGuards(out); err != nil {
		return res, cost, fmt.Errorf("gemm24: %w", err)
	}
	return res, cost, nil
}

// decodeMeta24 is the vector pass that turns meta bytes [rows × groups]
// (UB, ld metaLd, from column metaCol) into uint8 B-row indices [rows × 2·groups] (UB, ld
// idxLd), relative to the slice's first k; padding positions (rows past
// rows, positions past 2·groups up to idxLd) index row 2t, which meets a
// zero value. The fault plan's decodeGroup holds the decode bugs of the
// catalogue.
func decodeMeta24(core *npu.Core, f gemm24Faults, idx, meta *npu.Buffer, rows, padRows, groups, metaLd, metaCol, idxLd int) {
	ix, mb := idx.U8(), meta.U8()
	for r := 0; r < padRows; r++ {
		for t := 0; t < idxLd; t++ {
			ix[r*idxLd+t] = uint8(2 * t)
		}
		if r >= rows {
			continue
		}
		for g := 0; g < groups; g++ {
			ix[r*idxLd+2*g], ix[r*idxLd+2*g+1] = f.decodeGroup(mb[r*metaLd+metaCol+g], g)
		}
	}
	core.VectorWork(padRows*groups + padRows*idxLd)
}

func gemm24Kernel(t GEMMTiling, f gemm24Faults, a *npu.GMMatrix, meta *tensor.Tensor, b *npu.GMMatrix, sa, sb *tensor.Tensor, out *npu.GuardedOutput) npu.Kernel {
	return func(core *npu.Core) error {
		blocks := t.coreBlocks(core.BlockIdx)
		if len(blocks) == 0 {
			return nil
		}
		if err := core.SetBufferNum(t.BufferNum); err != nil {
			return err
		}
		size := t.In.Size()
		depth := t.depth()
		fr := t.Frac
		kAlign := gemm24KAlign(fr)
		panelK := min(depth, roundUp(max(t.K, 1), kAlign))
		alloc := func(s npu.Space, bytes int) (*npu.Buffer, error) { return core.Alloc(s, max(bytes, 1)) }
		var aL1, bL1 [2]npu.L1Tile
		defer func() {
			for i := range aL1 {
				aL1[i].Release()
				bL1[i].Release()
			}
		}()
		var metaUB [2]*npu.Buffer
		for i := range 2 {
			var err error
			if aL1[i].Buf, err = alloc(npu.L1, t.BaseM*panelK/2*size); err != nil {
				return err
			}
			if bL1[i].Buf, err = alloc(npu.L1, panelK*t.BaseN*size); err != nil {
				return err
			}
			if metaUB[i], err = core.AllocUB(max(t.BaseM*panelK/4, 1)); err != nil {
				return err
			}
		}
		var aL0, bL0 [2]npu.L0Tile
		for i := range 2 {
			var err error
			if aL0[i].Buf, err = alloc(npu.L0A, t.BaseM*t.BaseK/2*size); err != nil {
				return err
			}
			if bL0[i].Buf, err = alloc(npu.L0B, t.BaseK*t.BaseN*size); err != nil {
				return err
			}
		}
		var idxUB [2]*npu.Buffer
		for i := range idxUB {
			var err error
			if idxUB[i], err = core.AllocUB(t.BaseM * t.BaseK / 2); err != nil {
				return err
			}
		}
		bufs, err := allocEpilogue(core, t)
		if err != nil {
			return err
		}
		l0c := bufs.l0c
		gf := f.gemm()
		// Explicit synchronisation as gemm's (gemm_sync.go), with the
		// meta panels (MTE2 → V, per L1 slot) and the decoded indices (V →
		// M, per L0 slot) besides: V decodes slice s+1's meta while the
		// cube multiplies slice s.
		e, err := startGEMMSync(core, gf.missingWait)
		if err != nil {
			return err
		}
		// One ping-pong slot per stage when the tiling single-buffers
		// (BufferNum 1).
		nb := max(1, min(t.BufferNum, 2))
		ping, l0 := 0, 0
		for _, blk := range blocks {
			m0, n0, mr, nr := blk.m0, blk.n0, blk.mr, blk.nr
			mc, nc := roundUp(mr, fr.M), roundUp(nr, fr.N)
			first := true
			e.take(npu.PipeFIX, npu.PipeM, gemmEvL0C) // the last block's accumulators are out
			for k0 := 0; k0 < max(t.K, 1); k0 += depth {
				core.BeginTile()
				if gf.skipsPanel(k0, depth, t.K) {
					continue
				}
				kr := max(0, min(depth, t.K-k0))
				kc := roundUp(max(kr, 1), kAlign)
				e.take(npu.PipeMTE1, npu.PipeMTE2, ping)         // MTE1 is done with the slot's panels
				e.take(npu.PipeV, npu.PipeMTE2, gemmEvMeta+ping) // V is done with its meta
				if kr > 0 {
					if err := core.LoadL1(&aL1[ping], a, m0, k0/2, mr, kr/2, mc, kc/2); err != nil {
						return err
					}
					if err := core.DataCopy2DIn(metaUB[ping], meta, t.K/4, m0, k0/4, mr, kr/4, kc/4, mc); err != nil {
						return err
					}
					if err := core.LoadL1(&bL1[ping], b, k0, n0, kr, nr, kc, nc); err != nil {
						return err
					}
				}
				e.panelLoaded(ping)
				e.handOff(npu.PipeMTE2, npu.PipeV, gemmEvMeta+ping)
				for kk := 0; kk < kc; kk += t.BaseK {
					kb := min(t.BaseK, kc-kk)
					useful := max(0, min(kb, kr-kk)) / 2
					p := npu.MmadParams{M: mc, K: kb, N: nc, UsefulM: mr, UsefulN: nr, UsefulK: useful,
						Acc: t.AccDType, Blocked: t.Blocked, Init: first}
					if kr == 0 {
						// K = 0: only clear the accumulators.
						aL0[l0].DType, aL0[l0].Rows, aL0[l0].Cols = t.In, mc, 0
						bL0[l0].DType, bL0[l0].Rows, bL0[l0].Cols = t.In, 0, nc
						p.K = 0
						if err := core.Mmad(l0c, &aL0[l0], &bL0[l0], p); err != nil {
							return err
						}
						first = false
						continue
					}
					// Decode this slice's meta: the view starts at column
					// kk/4, into indices the cube is done with.
					e.take(npu.PipeM, npu.PipeV, gemmEvIdx+l0)
					decodeMeta24(core, f, idxUB[l0], metaUB[ping], mr, mc, useful/2, kc/4, kk/4, kb/2)
					e.handOff(npu.PipeV, npu.PipeM, gemmEvIdx+l0)
					e.take(npu.PipeM, npu.PipeMTE1, l0) // the cube is done with the slot's last slice
					if err := core.LoadL0(&aL0[l0], &aL1[ping], 0, kk/2, mc, kb/2); err != nil {
						return err
					}
					if err := core.LoadL0(&bL0[l0], &bL1[ping], kk, 0, kb, nc); err != nil {
						return err
					}
					e.sliceLoaded(l0)
					if err := core.MmadSparse(l0c, &aL0[l0], idxUB[l0], kb/2, &bL0[l0], p); err != nil {
						return err
					}
					e.set(npu.PipeM, npu.PipeMTE1, l0)
					e.set(npu.PipeM, npu.PipeV, gemmEvIdx+l0)
					first = false
					l0 = (l0 + 1) % nb
				}
				e.set(npu.PipeMTE1, npu.PipeMTE2, ping)
				e.set(npu.PipeV, npu.PipeMTE2, gemmEvMeta+ping)
				gf.panelDone(t, l0c, mc*nc)
				ping = (ping + 1) % nb
			}
			if err := gemmEpilogue(core, e, gf, t, bufs, nil, sa, sb, out, m0, n0, mr, nr, mc, nc); err != nil {
				return err
			}
		}
		e.drain()
		return nil
	}
}
