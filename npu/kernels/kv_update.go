package kernels

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// kv_update: per batch entry and head, project x[b,h] with w_k[h] and
// w_v[h] (the cube: a 1×D by D×D matrix product, fp32 accumulator, k
// ascending), round to fp16 (new_k, new_v), quantise to int8 on the
// vector unit when the cache is int8, and copy the row (and scale) to the
// cache row of the sequence's write position; then bump seq_lens.
//
// Host side, the (entry, head) pairs are dealt over the cores in
// contiguous runs (kvItems: every pair costs the same, its K and V
// projections and stores), so that a decoding step of few sequences
// still keeps every core busy; a core loads an entry's x rows once for
// the heads of it that it owns. The caches are updated in place:
// the host hands the kernel GM copies of the input caches between guard
// bands (the harness's inputs stay untouched) and the kernel writes only
// the rows it owns. Device side, per entry and head, on an AI core, the
// cube's data flow (npu/cube.go): x[b] (every head's row, once per
// entry) and w[h] k-panel by k-panel GM → L1 (MTE2), 16-row slices L1 → L0A/L0B (MTE1), Mmad into L0C (M)
// n-tile by n-tile, the accumulators L0C → UB (FIX), cast (and quantise)
// on V, copy out (MTE3); every stage ping-pongs (kvUpdateDevice).

// KVUpdateOptions overrides the tiling; zero fields take the default.
type KVUpdateOptions struct {
	// BlockDim is the number of cores (default: min(cube cores, B·H),
	// one (entry, head) pair each where there are enough cores).
	BlockDim int
	// BufferNum is the ping-pong depth of every stage, 1 or 2 (the
	// default): a single-buffered kernel loads the next L1 panel only once
	// MTE1 is done with the last, and the next L0 slice only once the cube
	// is done with the last, slower but just as correct, and its events
	// must satisfy the sanitizer as well.
	BufferNum int
}

// KVUpdateKernel is kv_update's KernelFunc.
func KVUpdateKernel(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	const op = "kv_update"
	if err := ops.CheckInputs(ops.KVUpdate, p, in); err != nil {
		return nil, nil, err
	}
	g, writes, err := ops.KVUpdateWrites(p, in)
	if err != nil {
		return nil, nil, err
	}
	opt := variantOptions[KVUpdateOptions](ctx)
	if opt.BufferNum < 0 || opt.BufferNum > 2 {
		return nil, nil, fmt.Errorf("%s: BufferNum %d out of range [1, 2]", op, opt.BufferNum)
	}
	bufNum := 2
	if opt.BufferNum > 0 {
		bufNum = opt.BufferNum
	}
	x := in["x"]
	b := x.Shape[0]
	prof := dev.Profile()
	blockDim := min(prof.AICores, max(kvItems(b, g.H), 1))
	if opt.BlockDim > 0 {
		blockDim = min(opt.BlockDim, prof.AICores)
	}
	outs := map[string]*npu.GuardedOutput{}
	alloc := func(name string, dt tensor.DType, shape []int, from *tensor.Tensor) error {
		o, err := npu.NewGuardedOutput(name, dt, shape...)
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		if from != nil { // the in-place buffer starts as the input
			if err := o.GM().CopyFrom(o.Base(), from); err != nil {
				return fmt.Errorf("%s: %s: %w", op, name, err)
			}
		}
		outs[name] = o
		return nil
	}
	for _, n := range []string{"new_k", "new_v"} {
		if err := alloc(n, tensor.Float16, x.Shape, nil); err != nil {
			return nil, nil, err
		}
	}
	if err := alloc("written", tensor.Uint8, []int{b}, nil); err != nil {
		return nil, nil, err
	}
	inPlace := []string{"k_cache", "v_cache", "seq_lens"}
	if g.Int8 {
		inPlace = append(inPlace, "k_scale", "v_scale")
	}
	for _, n := range inPlace {
		if err := alloc(n, in[n].DType, in[n].Shape, in[n]); err != nil {
			return nil, nil, err
		}
	}
	rowOf := make([]int, b) // cache row per batch entry, −1: no write
	for i := range rowOf {
		rowOf[i] = -1
	}
	for _, w := range writes {
		rowOf[w.B] = w.Row
	}
	var cost *npu.Cost
	if b == 0 {
		cost = dev.ZeroCost()
	} else {
		gx, gw, exact32, err := kvCubeOperands(in, g)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", op, err)
		}
		cost, err = dev.LaunchOn(ctx, npu.AICore, blockDim, kvUpdateDevice(g, newKVUpdateFaults(npu.FaultsFrom(ctx)), in, outs, rowOf, blockDim, bufNum, gx, gw, exact32))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", op, err)
		}
	}
	res := map[string]*tensor.Tensor{}
	var list []*npu.GuardedOutput
	for n, o := range outs {
		res[n] = o.Tensor()
		list = append(list, o)
	}
	if err := npu.CheckGuards(list...); err != nil {
		return res, cost, fmt.Errorf("%s: %w", op, err)
	}
	return res, cost, nil
}

// kvCubeOperands views x as the [B·H × D] matrix and each weight as the
// [H·D × D] matrix the cube loads its tiles from (sharing the tensors'
// memory), scanned once on the host, and reports for each weight whether
// the sequential fp32 model may take its multiply-then-add path
// (npu.Exact32Operands: fp16 products are exact, so only a weight with an
// Inf or NaN may not).
func kvCubeOperands(in map[string]*tensor.Tensor, g ops.KVGeom) (*npu.GMMatrix, map[string]*npu.GMMatrix, map[string]bool, error) {
	view := func(name string, rows int) (*npu.GMMatrix, error) {
		t := in[name]
		v := t.Window(0, t.Len())
		v.Shape = []int{rows, g.D}
		m, err := npu.NewGMMatrix(v)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		return m, nil
	}
	if g.H == 0 || g.D == 0 {
		return nil, nil, nil, nil
	}
	gx, err := view("x", in["x"].Len()/g.D)
	if err != nil {
		return nil, nil, nil, err
	}
	gw, exact32 := map[string]*npu.GMMatrix{}, map[string]bool{}
	for _, w := range []string{"w_k", "w_v"} {
		m, err := view(w, g.H*g.D)
		if err != nil {
			return nil, nil, nil, err
		}
		gw[w], exact32[w] = m, npu.Exact32Operands(gx, m)
	}
	return gx, gw, exact32, nil
}

// kvItems is how many (entry, head) pairs kv_update deals over the
// cores for b entries of h heads: b·h, or b where there are no heads
// (each entry then only has its flag and seq_len to store).
func kvItems(b, h int) int { return b * max(h, 1) }

// kvCoreItems is core i's share of n items over blockDim cores: the
// contiguous run [lo, hi), the runs differing by at most one item.
func kvCoreItems(i, blockDim, n int) (lo, hi int) {
	return i * n / blockDim, (i + 1) * n / blockDim
}

// kvUpdateDevice is the device side: core c owns a contiguous run of the
// (entry, head) pairs (kvCoreItems), and stores an entry's written flag
// and seq_len where it owns the entry's first head. gx views x as [B·H × D];
// gw the weights as [H·D × D], with exact32 their npu.MmadParams.Exact32.
func kvUpdateDevice(g ops.KVGeom, f kvUpdateFaults, in map[string]*tensor.Tensor, outs map[string]*npu.GuardedOutput, rowOf []int, blockDim, bufNum int,
	gx *npu.GMMatrix, gw map[string]*npu.GMMatrix, exact32 map[string]bool) npu.Kernel {
	return func(c *npu.Core) error {
		d := g.D
		// With no kv heads no row is projected: the row buffers and the
		// tiles are sized 0, so a D the core cannot hold still runs (only
		// seq_lens and the written flags change).
		rowD := d
		if g.H == 0 {
			rowD = 0
		}
		prof := c.Profile()
		align := prof.UBAlign()
		lay := kvLayout{nb: 1, fr: prof.CubeFP16}
		if rowD > 0 {
			var err error
			if lay, err = kvCubeLayout(prof, rowD, g.H, bufNum); err != nil {
				return err
			}
		}
		nb, nt, kp, xe, fr := lay.nb, lay.nt, lay.kp, lay.xe, lay.fr
		// nb copies of every buffer a stage fills (ping-pong): the L1
		// panels (x and w), the L0A/L0B slices, the L0C accumulators and
		// their UB copies, and the output rows, so that each stage works
		// on one copy while the stage before fills the other.
		var xL1, wL1, xeL1 [2]npu.L1Tile
		defer func() {
			for i := range nb {
				xL1[i].Release()
				wL1[i].Release()
				xeL1[i].Release()
			}
		}()
		var aL0, bL0 [2]npu.L0Tile
		var l0c, ab, ob, qb, sb [2]*npu.Buffer
		for i := range nb {
			for _, a := range []struct {
				b     **npu.Buffer
				space npu.Space
				bytes int
			}{
				{&wL1[i].Buf, npu.L1, kp * nt * 2},
				{&aL0[i].Buf, npu.L0A, fr.M * fr.K * 2}, {&bL0[i].Buf, npu.L0B, fr.K * nt * 2},
				{&l0c[i], npu.L0C, fr.M * nt * 4},
				{&ab[i], npu.UB, roundUp(nt*4, align)}, {&ob[i], npu.UB, roundUp(rowD*2, align)},
				{&qb[i], npu.UB, roundUp(rowD, align)}, {&sb[i], npu.UB, align},
			} {
				b, err := c.Alloc(a.space, max(a.bytes, 1))
				if err != nil {
					return err
				}
				*a.b = b
			}
			// x's L1 tile: the entry's rows, or a panel's slice of one row.
			xt, bytes := &xeL1[i], xe*roundUp(rowD, fr.K)*2
			if xe == 0 {
				xt, bytes = &xL1[i], fr.M*kp*2
			}
			b, err := c.Alloc(npu.L1, max(bytes, 1))
			if err != nil {
				return err
			}
			xt.Buf = b
		}
		fb, err := c.AllocUB(align) // seq_len / written flag
		if err != nil {
			return err
		}
		ids, lens := in["seq_ids"].I32(), in["seq_lens"].I32()
		var bt []int32
		if g.Paged {
			bt = in["block_tables"].I32()
		}
		// Explicit synchronisation (npu.SyncExplicit), which the sanitizer
		// holds the kernel to, with one event id per ping-pong slot of
		// each stage: L1 slot q alternates k-panel by k-panel (and the
		// entry x tile's slot xs entry by entry, ids from kvEvEntryX on
		// the MTE2/MTE1 pair), L0 slot l slice by slice, accumulator slot
		// a n-tile by n-tile, output slot o head by head. The Mmad of head
		// h multiplies the fr.M-row block of the entry's x tile that holds
		// x[b,h] (rows of other heads or zeros beside it) and FIX moves out
		// only x[b,h]'s row of the accumulators. Each pair of pipes hands a filled copy over with
		// a set and a wait in a row (MTE2 → MTE1: the panel landed in L1;
		// MTE1 → M: the slice is in L0A/L0B; M → FIX: the accumulators are
		// done; FIX → V: they are in UB; V → MTE3: the row is rounded) and
		// the consumer hands it back with a free event the producer waits
		// for just before it overwrites the copy (MTE1 → MTE2, M → MTE1,
		// FIX → M, V → FIX, MTE3 → V). So MTE1 loads slice s+1 into one
		// L0 slot while the cube multiplies slice s out of the other, and
		// MTE2 loads the next panel while both work on this one. The free
		// events start set (the copies start free) and are taken once more
		// at the end, so every set is waited for.
		if err := c.SetSyncMode(npu.SyncExplicit); err != nil {
			return err
		}
		if err := c.SetBufferNum(nb); err != nil {
			return err
		}
		for i := range nb {
			c.SetFlag(npu.PipeMTE1, npu.PipeMTE2, i)
			c.SetFlag(npu.PipeMTE1, npu.PipeMTE2, kvEvEntryX+i)
			c.SetFlag(npu.PipeM, npu.PipeMTE1, i)
			c.SetFlag(npu.PipeFIX, npu.PipeM, i)
			c.SetFlag(npu.PipeV, npu.PipeFIX, i)
			c.SetFlag(npu.PipeMTE3, npu.PipeV, i)
		}
		q, l, a, o, xs, xh0 := 0, 0, 0, 0, 0, 0
		// project computes x[b,h]·w[h] into ob, n-tile by n-tile: each
		// tile's accumulators go k ascending over the k-panels and their
		// 16-row slices (one fp32 accumulator per column, the op's
		// sequential model; padded k are not accumulated), so neither the
		// panel nor the slice size moves a bit.
		project := func(b, h int, kv kvNames, ob *npu.Buffer) error {
			xr := b*g.H + h // x[b,h]'s row of gx
			// The entry's x tile holds its heads from xh0 on.
			xt, xRow0, xCol0, fixOff := &xeL1[xs], (h-xh0)/fr.M*fr.M, 0, (h-xh0)%fr.M
			if xe == 0 { // x k-panel by k-panel beside w, in its first row
				xRow0, fixOff = 0, 0
			}
			outFree := false
			for n0 := 0; n0 < d; n0 += nt {
				nr := min(nt, d-n0)
				nc := roundUp(nr, fr.N)
				for k0 := 0; k0 < d; k0 += kp {
					kr := min(kp, d-k0)
					kc := roundUp(kr, fr.K)
					c.WaitFlag(npu.PipeMTE1, npu.PipeMTE2, q)
					if xe == 0 {
						if err := c.LoadL1(&xL1[q], gx, xr, k0, 1, kr, fr.M, kc); err != nil {
							return err
						}
						xt, xCol0 = &xL1[q], 0
					} else {
						xCol0 = k0
					}
					if err := c.LoadL1(&wL1[q], gw[kv.w], h*d+k0, n0, kr, nr, kc, nc); err != nil {
						return err
					}
					if !f.missingWait {
						c.SetFlag(npu.PipeMTE2, npu.PipeMTE1, q)
						c.WaitFlag(npu.PipeMTE2, npu.PipeMTE1, q)
					}
					for kk := 0; kk < kc; kk += fr.K {
						c.WaitFlag(npu.PipeM, npu.PipeMTE1, l)
						if err := c.LoadL0(&aL0[l], xt, xRow0, xCol0+kk, fr.M, fr.K); err != nil {
							return err
						}
						if err := c.LoadL0(&bL0[l], &wL1[q], kk, 0, fr.K, nc); err != nil {
							return err
						}
						c.SetFlag(npu.PipeMTE1, npu.PipeM, l)
						c.WaitFlag(npu.PipeMTE1, npu.PipeM, l)
						first := k0 == 0 && kk == 0
						if first {
							c.WaitFlag(npu.PipeFIX, npu.PipeM, a)
						}
						p := npu.MmadParams{
							M: fr.M, K: fr.K, N: nc, UsefulM: 1, UsefulN: nr, UsefulK: min(fr.K, kr-kk),
							Acc: tensor.Float32, Init: first, Exact32: exact32[kv.w],
						}
						if err := c.Mmad(l0c[a], &aL0[l], &bL0[l], p); err != nil {
							return err
						}
						c.SetFlag(npu.PipeM, npu.PipeMTE1, l)
						l = (l + 1) % nb
					}
					c.SetFlag(npu.PipeMTE1, npu.PipeMTE2, q)
					q = (q + 1) % nb
				}
				c.SetFlag(npu.PipeM, npu.PipeFIX, a)
				c.WaitFlag(npu.PipeM, npu.PipeFIX, a)
				c.WaitFlag(npu.PipeV, npu.PipeFIX, a)
				if err := c.FixpipeToUB(ab[a], l0c[a], fixOff*nc, nr); err != nil {
					return err
				}
				c.SetFlag(npu.PipeFIX, npu.PipeM, a)
				c.SetFlag(npu.PipeFIX, npu.PipeV, a)
				c.WaitFlag(npu.PipeFIX, npu.PipeV, a)
				if !outFree {
					c.WaitFlag(npu.PipeMTE3, npu.PipeV, o)
					outFree = true
				}
				kvRoundRow(c, ab[a].F32()[:nr], ob.F16()[n0:n0+nr])
				c.SetFlag(npu.PipeV, npu.PipeFIX, a)
				a = (a + 1) % nb
			}
			if !outFree {
				c.WaitFlag(npu.PipeMTE3, npu.PipeV, o)
			}
			return nil
		}
		head := func(b, h int, s int32, row int, kv kvNames) error {
			src := (b*g.H + h) * d
			ob, qb, sb := ob[o], qb[o], sb[o]
			if s >= 0 {
				if err := project(b, h, kv, ob); err != nil {
					return err
				}
			} else {
				c.WaitFlag(npu.PipeMTE3, npu.PipeV, o)
				clear(ob.Bytes())
			}
			quantised := g.Int8 && row >= 0
			var sc float32
			if quantised {
				var err error
				if sc, err = kvQuantise(c, prof.Numerics, ob.F16()[:d], qb.I8()[:d], ob); err != nil {
					return err
				}
			}
			c.SetFlag(npu.PipeV, npu.PipeMTE3, o)
			c.WaitFlag(npu.PipeV, npu.PipeMTE3, o)
			if s >= 0 && f.overX(kv.w) {
				if err := c.DataCopyPadOut(in["x"], src, ob, d); err != nil {
					return err
				}
			}
			if err := c.DataCopyPadOut(outs[kv.newName].GM(), outs[kv.newName].Base()+src, ob, d); err != nil {
				return err
			}
			if row < 0 {
				return nil
			}
			dst := (row*g.H + h) * d
			cache := outs[kv.cache]
			if !quantised {
				return c.DataCopyPadOut(cache.GM(), cache.Base()+dst, ob, d)
			}
			if err := c.ScalarWrite(sb, 0, 4); err != nil {
				return err
			}
			sb.F32()[0] = sc
			if err := c.DataCopyPadOut(cache.GM(), cache.Base()+dst, qb, d); err != nil {
				return err
			}
			si := f.scaleIndex(row, h, g.H)
			return c.DataCopyPadOut(outs[kv.scale].GM(), outs[kv.scale].Base()+si, sb, 1)
		}
		// fb is the scalar's (SetValue): it overwrites the buffer only
		// once the last store of it read it (MTE3 → S).
		fbStores := 0 // stores of fb whose MTE3 → S event is pending
		takeFB := func() {
			for ; fbStores > 0; fbStores-- {
				c.WaitFlag(npu.PipeMTE3, npu.PipeS, kvEvScalar)
			}
		}
		setFlagBuf := func(n int, v int32) error {
			if !f.flagNoWait {
				takeFB()
			}
			if err := c.ScalarWrite(fb, 0, n); err != nil {
				return err
			}
			if n == 1 {
				fb.U8()[0] = uint8(v)
			} else {
				fb.I32()[0] = v
			}
			return nil
		}
		hs := max(g.H, 1)
		lo, hi := kvCoreItems(c.BlockIdx, blockDim, kvItems(len(rowOf), g.H))
		for b := lo / hs; b < len(rowOf) && b*hs < hi; b++ {
			// This core's heads of entry b: [h0, h1) (none with H = 0).
			h0, h1 := max(lo-b*hs, 0), min(hi-b*hs, g.H)
			c.BeginTile()
			s := ids[b]
			row := rowOf[b]
			flag := uint8(0)
			if row >= 0 {
				flag = 1
			}
			if s >= 0 && row >= 0 {
				row = f.slot(g, bt, int(s), int(lens[s]), row)
			}
			row = f.skippedRow(g, bt, lens, int(s), row)
			flag = f.written(flag, int(s))
			// The entry's x rows of this core's heads, all at once, in one
			// transfer (else k-panel by k-panel in project).
			xLoaded := s >= 0 && xe > 0 && h1 > h0
			if xLoaded {
				c.WaitFlag(npu.PipeMTE1, npu.PipeMTE2, kvEvEntryX+xs)
				xh0 = h0
				if err := c.LoadL1(&xeL1[xs], gx, b*g.H+h0, 0, h1-h0, d, roundUp(h1-h0, fr.M), roundUp(d, fr.K)); err != nil {
					return err
				}
				if !f.missingWait {
					c.SetFlag(npu.PipeMTE2, npu.PipeMTE1, kvEvEntryX+xs)
					c.WaitFlag(npu.PipeMTE2, npu.PipeMTE1, kvEvEntryX+xs)
				}
			}
			for _, kv := range []kvNames{
				{"w_k", "new_k", "k_cache", "k_scale"}, {"w_v", "new_v", "v_cache", "v_scale"},
			} {
				for h := h0; h < h1; h++ {
					if err := head(b, h, s, row, kv); err != nil {
						return err
					}
					c.SetFlag(npu.PipeMTE3, npu.PipeV, o)
					o = (o + 1) % nb
				}
			}
			if xLoaded {
				c.SetFlag(npu.PipeMTE1, npu.PipeMTE2, kvEvEntryX+xs)
				xs = (xs + 1) % nb
			}
			if h0 > 0 {
				continue // the entry's flag and seq_len are the core's with its first head
			}
			if err := setFlagBuf(1, int32(flag)); err != nil {
				return err
			}
			if err := c.DataCopyPadOut(outs["written"].GM(), outs["written"].Base()+b, fb, 1); err != nil {
				return err
			}
			c.SetFlag(npu.PipeMTE3, npu.PipeS, kvEvScalar)
			fbStores++
			if rowOf[b] >= 0 && f.bumpsSeqLen() {
				if err := setFlagBuf(4, lens[s]+1); err != nil {
					return err
				}
				if err := c.DataCopyPadOut(outs["seq_lens"].GM(), outs["seq_lens"].Base()+int(s), fb, 1); err != nil {
					return err
				}
				c.SetFlag(npu.PipeMTE3, npu.PipeS, kvEvScalar)
				fbStores++
			}
		}
		takeFB()
		for i := range nb {
			c.WaitFlag(npu.PipeMTE1, npu.PipeMTE2, i)
			c.WaitFlag(npu.PipeMTE1, npu.PipeMTE2, kvEvEntryX+i)
			c.WaitFlag(npu.PipeM, npu.PipeMTE1, i)
			c.WaitFlag(npu.PipeFIX, npu.PipeM, i)
			c.WaitFlag(npu.PipeV, npu.PipeFIX, i)
			c.WaitFlag(npu.PipeMTE3, npu.PipeV, i)
		}
		return nil
	}
}
