package kernels

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// gemm: out = alpha·(A·B) + beta·C in the five precision modes of the op
// contract (ops/gemm.go), which also states the evaluation model this
// kernel follows bit for bit.
//
// Host side, GEMMTilingWith pads M, N, K to the cube fractal (16×16×16
// for fp16/bf16/fp32, 16×32×16 for int8), picks base blocks baseM × baseN
// (the L0C accumulator tile) and baseK (one Mmad) that fit L0A/L0B
// double-buffered and L0C, an L1 depth of StepK·baseK that fits the A and
// B panels double-buffered in L1, shrinks the base blocks while there are
// fewer output blocks than AI cores, cuts the output into one region per
// core (gemm_tiling.go's core layout), and chooses which operand a core
// keeps in L1 across its blocks that share it (GEMMTiling.Reuse: the
// leading k-panels of A across a block row, or of B across a block
// column, loaded once per group). Device side, each core, for each of its
// output blocks, walks K ascending: DMA the A and B panels GM → L1
// (zero-padded; a resident panel only by the group's first block),
// load baseK slices L1 → L0A/L0B, Mmad into L0C (the first one starts
// from +0); then moves the accumulators L0C → UB in row chunks, runs the
// vector epilogue (dequantise, alpha, beta·C) and the cast to the output
// dtype, and DMAs the real rows and columns out. Padding rows and columns
// never reach GM, and padded k are 0·0 products, which leave every
// accumulator unchanged (it is never −0). Each output element is
// accumulated by one core in one L0C tile over K ascending, so the result
// does not depend on the tiling or the core count (GEMMOptions.ReverseK,
// a valid variant for the mutation score's false-alarm check, walks K
// descending instead). The output is stored between guard bands
// (npu.NewGuardedMatrix). The tiling is in gemm_tiling.go, the epilogue
// in gemm_epilogue.go; the calls on f (a gemmFaults, the launch's fault
// plan, fault_gemm.go) are the mutation score's fault hooks, each at the
// spot where its bug would sit, and return the correct value when no
// fault is on.

// GEMM runs gemm on dev with validated config cfg and inputs held to the
// op contract (a, b, optional c, scale_a/scale_b for int8), a, b and c
// ND; out in cfg.Layout.Out (GEMMKernel converts NZ inputs).
func GEMM(ctx context.Context, dev *npu.Device, cfg ops.GEMMConfig, in map[string]*tensor.Tensor, opt GEMMOptions) (*tensor.Tensor, *npu.Cost, error) {
	if dev == nil {
		return nil, nil, fmt.Errorf("gemm: nil device")
	}
	m, k, n, err := ops.GEMMDims(in)
	if err != nil {
		return nil, nil, err
	}
	t, err := GEMMTilingWith(dev.Profile(), cfg, m, k, n, opt)
	if err != nil {
		return nil, nil, err
	}
	a, b, c := in["a"], in["b"], in["c"]
	if t.HasC && c == nil {
		return nil, nil, fmt.Errorf("gemm: input \"c\" is missing (beta ≠ 0)")
	}
	var sa, sb *tensor.Tensor
	if t.Int8 {
		if sa, sb = in["scale_a"], in["scale_b"]; sa == nil || sb == nil {
			return nil, nil, fmt.Errorf("gemm: int8 mode needs scale_a and scale_b")
		}
		t.ScaleABcst, t.ScaleBBcst = sa.Len() == 1, sb.Len() == 1
	}
	t.OutNZ = cfg.Layout.Out == ops.FormatFractalNZ
	if t.BlockDim == 0 {
		out, err := emptyGEMMOut(t)
		if err != nil {
			return nil, nil, fmt.Errorf("gemm: %w", err)
		}
		return out, dev.ZeroCost(), nil
	}
	// out lives in GM between guard bands of whole rows: a store past
	// either end lands in a guard and is reported, not lost.
	out, err := newGEMMOut(t)
	if err != nil {
		return nil, nil, fmt.Errorf("gemm: %w", err)
	}
	defer out.Release() // what GEMM returns is out.Tensor(), a copy
	f := newGEMMFaults(npu.FaultsFrom(ctx))
	b = f.readB(b)
	// Scan A and B concurrently: on the host, before the launch, the
	// scan is serial work.
	var ga, gb *npu.GMMatrix
	var errA, errB error
	parallel.Do(2, func(i int) {
		if i == 0 {
			ga, errA = npu.NewGMMatrix(a)
		} else {
			gb, errB = npu.NewGMMatrix(b)
		}
	})
	if errA != nil {
		return nil, nil, fmt.Errorf("gemm: input \"a\": %w", errA)
	}
	if errB != nil {
		return nil, nil, fmt.Errorf("gemm: input \"b\": %w", errB)
	}
	// NZ operands are loaded into L1 as Ascend's matmul loads them: a
	// burst per column fractal, not per row (npu.GMMatrix.NZ).
	ga.NZ, gb.NZ = cfg.Layout.A == ops.FormatFractalNZ, cfg.Layout.B == ops.FormatFractalNZ
	// The SIMD multiply-then-add path is the sequential fp32 model when
	// every product is exact in fp32 and B is finite (see npu.MmadParams).
	exact32 := t.AccDType == tensor.Float32 && !t.Blocked && npu.Exact32Operands(ga, gb)
	cost, err := dev.LaunchOn(ctx, npu.AICore, t.BlockDim, gemmKernel(t, f, exact32, ga, gb, c, sa, sb, out))
	if err != nil {
		return nil, nil, fmt.Errorf("gemm: %w", err)
	}
	if err := npu.CheckGuards(out); err != nil {
		return gemmOutTensor(t, out), cost, fmt.Errorf("gemm: %w", err)
	}
	return gemmOutTensor(t, out), cost, nil
}

// gemmKernel is the device side: one block per AI core. f is the
// launch's fault plan (fault_gemm.go).
func gemmKernel(t GEMMTiling, f gemmFaults, exact32 bool, a, b *npu.GMMatrix, c, sa, sb *tensor.Tensor, out *npu.GuardedOutput) npu.Kernel {
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
		alloc := func(s npu.Space, bytes int) (*npu.Buffer, error) { return core.Alloc(s, max(bytes, 1)) }
		var aL1, bL1 [2]npu.L1Tile
		// res are the reused operand's resident panels (t.Reuse), in K
		// order: loaded by a group's first block, read by all of it.
		res := make([]npu.L1Tile, t.ResidentPanels)
		defer func() {
			for i := range aL1 {
				aL1[i].Release()
				bL1[i].Release()
			}
			for i := range res {
				res[i].Release()
			}
		}()
		var aL0, bL0 [2]npu.L0Tile
		// Double-buffer only what this core loads more than once.
		myBlocks := len(blocks)
		panels := t.panels()
		nL1 := min(t.BufferNum, myBlocks*panels)
		nL0 := min(t.BufferNum, myBlocks*max(1, ceilDiv(t.K, t.BaseK)))
		// A side whose panels are all resident needs no slots.
		allRes := t.ResidentPanels >= panels
		for i := 0; i < nL1; i++ {
			var err error
			if !allRes || t.Reuse != ReuseA {
				if aL1[i].Buf, err = alloc(npu.L1, t.BaseM*t.panelK()*size); err != nil {
					return err
				}
			}
			if !allRes || t.Reuse != ReuseB {
				if bL1[i].Buf, err = alloc(npu.L1, t.panelK()*t.BaseN*size); err != nil {
					return err
				}
			}
		}
		for pi := range res {
			var err error
			if res[pi].Buf, err = alloc(npu.L1, t.reuseRows(t.Reuse)*t.panelKC(pi)*size); err != nil {
				return err
			}
		}
		for i := 0; i < nL0; i++ {
			var err error
			if aL0[i].Buf, err = alloc(npu.L0A, t.BaseM*t.BaseK*size); err != nil {
				return err
			}
			if bL0[i].Buf, err = alloc(npu.L0B, t.BaseK*t.BaseN*size); err != nil {
				return err
			}
		}
		bufs, err := allocEpilogue(core, t)
		if err != nil {
			return err
		}
		l0c := bufs.l0c
		fr := t.Frac
		// Explicit synchronisation (gemmSync, held by the sanitizer): the
		// panels of L1 slot q, the slices of L0 slot l and the
		// accumulators each have their own events.
		e, err := startGEMMSync(core, f.missingWait)
		if err != nil {
			return err
		}
		ping, l0 := 0, 0
		firstBlk := [2]int{blocks[0].m0, blocks[0].n0}
		for bi, blk := range blocks {
			m0, n0, mr, nr := blk.m0, blk.n0, blk.mr, blk.nr
			mc, nc := roundUp(mr, fr.M), roundUp(nr, fr.N)
			first := true
			// The resident panels hold this block's if it shares them
			// with the last block; else it loads them, and the next
			// blocks of its group read them.
			resident := bi > 0 && t.reuses(blocks[bi-1], blk)
			// A group's last block frees each resident panel as soon as
			// MTE1 has issued its last read of it, so the next group's
			// first block loads it while this one's later panels still
			// run.
			groupLast := len(res) > 0 && (bi+1 == len(blocks) || !t.reuses(blk, blocks[bi+1]))
			// The block's first Mmad overwrites L0C: after FIX has moved
			// the last block's accumulators out.
			e.take(npu.PipeFIX, npu.PipeM, gemmEvL0C)
			for pi := range panels {
				k0 := pi * depth
				if t.ReverseK {
					k0 = (panels - 1 - pi) * depth
				}
				core.BeginTile()
				if f.skipsPanel(k0, depth, t.K) {
					continue
				}
				kr := min(depth, t.K-k0)
				kc := roundUp(kr, t.BaseK)
				// aT and bT are the panels' tiles: a ping-pong slot, or
				// for the reused operand's leading panels their own.
				aT, bT := &aL1[ping], &bL1[ping]
				ri := k0 / max(depth, 1)
				inRes := ri < len(res)
				if inRes {
					if t.Reuse == ReuseA {
						aT = &res[ri]
					} else {
						bT = &res[ri]
					}
				}
				e.take(npu.PipeMTE1, npu.PipeMTE2, ping) // MTE1 is done with the slot's last panel
				if kr > 0 {
					kc = t.panelKC(ri)
					if inRes && !resident {
						// MTE1 is done with the last group's panel ri.
						e.take(npu.PipeMTE1, npu.PipeMTE2, gemmResidentEv(ri))
					}
					if !inRes || t.Reuse != ReuseA || !resident {
						if err := core.LoadL1(aT, a, m0, k0, mr, kr, mc, kc); err != nil {
							return err
						}
					}
					if !inRes || t.Reuse != ReuseB || !resident {
						if err := core.LoadL1(bT, b, k0, n0, kr, nr, kc, nc); err != nil {
							return err
						}
					}
				}
				e.panelLoaded(ping)
				slices := max(1, ceilDiv(kc, t.BaseK))
				for si := range slices {
					kk := si * t.BaseK
					if t.ReverseK {
						kk = (slices - 1 - si) * t.BaseK
					}
					kb := min(t.BaseK, kc-kk)
					if f.skipsSlice(k0+kk, kb, t.K) {
						continue
					}
					e.take(npu.PipeM, npu.PipeMTE1, l0) // the cube is done with the slot's last slice
					if kb > 0 {
						if err := core.LoadL0(&aL0[l0], aT, 0, kk, mc, kb); err != nil {
							return err
						}
						if err := core.LoadL0(&bL0[l0], bT, kk, 0, kb, nc); err != nil {
							return err
						}
					} else {
						kb = 0 // K = 0: Mmad only clears the accumulators
						aL0[l0].DType, aL0[l0].Rows, aL0[l0].Cols = t.In, mc, 0
						bL0[l0].DType, bL0[l0].Rows, bL0[l0].Cols = t.In, 0, nc
					}
					e.sliceLoaded(l0)
					p := npu.MmadParams{
						M: mc, K: kb, N: nc, UsefulM: mr, UsefulN: nr,
						UsefulK: max(0, min(kb, t.K-k0-kk)),
						Acc:     f.accumulator(t.AccDType), Blocked: t.Blocked, Init: f.initAcc(core, l0c, first), Exact32: exact32,
					}
					if err := core.Mmad(l0c, &aL0[l0], &bL0[l0], p); err != nil {
						return err
					}
					e.set(npu.PipeM, npu.PipeMTE1, l0)
					first = false
					l0 = (l0 + 1) % nL0
				}
				e.set(npu.PipeMTE1, npu.PipeMTE2, ping)
				if groupLast && inRes {
					e.set(npu.PipeMTE1, npu.PipeMTE2, gemmResidentEv(ri))
				}
				f.panelDone(t, l0c, mc*nc)
				ping = (ping + 1) % nL1
			}
			em0, en0 := f.blockOrigin(firstBlk, [2]int{m0, n0})
			if err := gemmEpilogue(core, e, f, t, bufs, c, sa, sb, out, em0, en0, mr, nr, mc, nc); err != nil {
				return err
			}
		}
		e.drain()
		return nil
	}
}

// GEMMKernel is gemm's KernelFunc: params and inputs as in the op contract.
func GEMMKernel(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	cfg, err := ops.ParseGEMM(p)
	if err != nil {
		return nil, nil, err
	}
	vp, _ := ops.GEMM.Validate(p)
	if err := ops.CheckInputs(ops.GEMM, vp, in); err != nil {
		return nil, nil, err
	}
	if cfg.Beta == 0 {
		// c is not read when beta = 0.
		in = withoutKey(in, "c")
	}
	if !cfg.Layout.ND() {
		m, k, n, err := ops.GEMMShape(vp, in)
		if err != nil {
			return nil, nil, err
		}
		if in, err = gemmInputsND(in, gemmNZOperands(cfg.Layout, m, k, n), newGEMMFaults(npu.FaultsFrom(ctx))); err != nil {
			return nil, nil, fmt.Errorf("gemm: %w", err)
		}
	}
	out, cost, err := GEMM(ctx, dev, cfg, in, variantOptions[GEMMOptions](ctx))
	if err != nil {
		if out != nil { // a guard violation: out was produced, and a guard written
			return map[string]*tensor.Tensor{"out": out}, cost, err
		}
		return nil, nil, err
	}
	return map[string]*tensor.Tensor{"out": out}, cost, nil
}

func withoutKey(in map[string]*tensor.Tensor, key string) map[string]*tensor.Tensor {
	if _, ok := in[key]; !ok {
		return in
	}
	out := make(map[string]*tensor.Tensor, len(in))
	for k, v := range in {
		if k != key {
			out[k] = v
		}
	}
	return out
}
