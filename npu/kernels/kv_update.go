package kernels

import (
	"context"
	"fmt"
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// kv_update: per batch entry and head, project x[b,h] with w_k[h] and
// w_v[h] (the cube: a 1×D by D×D matrix product, fp32 accumulator, k
// ascending), round to fp16 (new_k, new_v), quantise to int8 on the
// vector unit when the cache is int8, and copy the row (and scale) to the
// cache row of the sequence's write position; then bump seq_lens.
//
// Host side, KVUpdateTiling deals the batch entries over the cores (each
// entry costs the same, H projections). The caches are updated in place:
// the host hands the kernel GM copies of the input caches between guard
// bands (the harness's inputs stay untouched) and the kernel writes only
// the rows it owns. Device side, per entry: DataCopyPad x[b,h] and w[h]
// into UB, matrix-vector product, cast, copy out.

// KVUpdateOptions overrides the tiling; zero fields take the default.
type KVUpdateOptions struct {
	// BlockDim is the number of cores (default: min(cube cores, B)).
	BlockDim int
	// BufferNum is the ping-pong depth, 1 or 2 (the default): a
	// single-buffered kernel loads the next panel only once the cube is
	// done with the last, slower but just as correct, and its events must
	// satisfy the sanitizer as well.
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
	blockDim := min(prof.AICores, prof.VectorCores, max(b, 1))
	if opt.BlockDim > 0 {
		blockDim = min(opt.BlockDim, prof.VectorCores)
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
		cost, err = dev.Launch(ctx, blockDim, kvUpdateDevice(g, newKVUpdateFaults(npu.FaultsFrom(ctx)), in, outs, rowOf, blockDim, bufNum))
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

// kvUpdateDevice is the device side: core c owns batch entries c,
// c+blockDim, … (every entry costs the same).
func kvUpdateDevice(g ops.KVGeom, f kvUpdateFaults, in map[string]*tensor.Tensor, outs map[string]*npu.GuardedOutput, rowOf []int, blockDim, bufNum int) npu.Kernel {
	return func(c *npu.Core) error {
		d := g.D
		// With no kv heads no row is projected: the row buffers and the
		// weight panel are sized 0, so a D the UB cannot hold still runs
		// (only seq_lens and the written flags change).
		rowD := d
		if g.H == 0 {
			rowD = 0
		}
		align := c.Profile().UBAlign()
		kt, nb := 0, 1
		if rowD > 0 {
			var err error
			if kt, nb, err = kvPanelLayout(c.Profile(), rowD, bufNum); err != nil {
				return err
			}
		}
		// nb copies of every buffer a head writes or a load fills, so the
		// next panel's and the next head's loads, the cube and the stores
		// of the head before run at once (ping-pong; nb = 1 where the UB
		// holds only one set, or where the variant asks for it).
		var xb, ob, qb, sb, wb [2]*npu.Buffer
		for i := range nb {
			for _, a := range []struct {
				b     **npu.Buffer
				bytes int
			}{{&xb[i], rowD * 2}, {&ob[i], rowD * 2}, {&qb[i], rowD}, {&sb[i], 1}, {&wb[i], kt * rowD * 2}} {
				b, err := c.AllocUB(roundUp(max(a.bytes, 1), align))
				if err != nil {
					return err
				}
				*a.b = b
			}
		}
		fb, err := c.AllocUB(align) // seq_len / written flag
		if err != nil {
			return err
		}
		var acc [2][]float32 // the cube's fp32 accumulators (L0C), one per head in flight
		for i := range nb {
			acc[i] = make([]float32, rowD)
		}
		wf := make([]float32, kt*rowD)
		ids, lens := in["seq_ids"].I32(), in["seq_lens"].I32()
		var bt []int32
		if g.Paged {
			bt = in["block_tables"].I32()
		}
		// Explicit synchronisation (npu.SyncExplicit), which the sanitizer
		// holds the kernel to, with one event id per ping-pong slot: panel
		// slot q alternates panel by panel, head slot o head by head. MTE2
		// loads head o's x row once the cube is done with xb[o] (evXFree)
		// and each weight panel into wb[q] once the cube is done with it
		// (evWFree); the cube multiplies a panel once it landed (evIn) into
		// accumulator o once V has read it out (evAccFree); V rounds (and
		// quantises) once the cube is done (evCube) into ob[o] and qb[o]
		// once their stores drained (evOutFree); MTE3 stores once V is
		// done (evStore). So the loads of head h+1 run under the cube, V
		// and stores of head h. The freeing events start set (the buffers
		// start free) and are taken once more at the end, so every set is
		// waited for.
		const evWFree, evXFree = 0, 2 // M → MTE2: + q, + o
		const evIn, evCube, evStore, evOutFree, evAccFree = 0, 0, 0, 0, 0
		if err := c.SetSyncMode(npu.SyncExplicit); err != nil {
			return err
		}
		if err := c.SetBufferNum(nb); err != nil {
			return err
		}
		for i := range nb {
			c.SetFlag(npu.PipeM, npu.PipeMTE2, evWFree+i)
			c.SetFlag(npu.PipeM, npu.PipeMTE2, evXFree+i)
			c.SetFlag(npu.PipeMTE3, npu.PipeV, evOutFree+i)
			c.SetFlag(npu.PipeV, npu.PipeM, evAccFree+i)
		}
		q, o := 0, 0
		head := func(b, h int, s int32, row int, kv kvNames) error {
			src := (b*g.H + h) * d
			ob, qb, sb := ob[o], qb[o], sb[o]
			if s >= 0 {
				xb, acc := xb[o], acc[o]
				c.WaitFlag(npu.PipeM, npu.PipeMTE2, evXFree+o)
				if err := c.DataCopyPadIn(xb, in["x"], src, d); err != nil {
					return err
				}
				c.WaitFlag(npu.PipeV, npu.PipeM, evAccFree+o)
				clear(acc)
				for k0 := 0; k0 < d; k0 += kt {
					rows := min(kt, d-k0)
					c.WaitFlag(npu.PipeM, npu.PipeMTE2, evWFree+q)
					if err := c.DataCopyPadIn(wb[q], in[kv.w], (h*d+k0)*d, rows*d); err != nil {
						return err
					}
					if !f.missingWait {
						c.SetFlag(npu.PipeMTE2, npu.PipeM, evIn+q)
						c.WaitFlag(npu.PipeMTE2, npu.PipeM, evIn+q)
					}
					kvAccumulate(acc, wf, xb.F16()[k0:k0+rows], wb[q].F16()[:rows*d])
					c.ChargeCube(1, rows, d, true)
					c.SetFlag(npu.PipeM, npu.PipeMTE2, evWFree+q)
					q = (q + 1) % nb
				}
				c.SetFlag(npu.PipeM, npu.PipeMTE2, evXFree+o)
				c.SetFlag(npu.PipeM, npu.PipeV, evCube+o)
				c.WaitFlag(npu.PipeM, npu.PipeV, evCube+o)
				c.WaitFlag(npu.PipeMTE3, npu.PipeV, evOutFree+o)
				kvRoundRow(c, acc, ob.F16()[:d])
				c.SetFlag(npu.PipeV, npu.PipeM, evAccFree+o)
			} else {
				c.WaitFlag(npu.PipeMTE3, npu.PipeV, evOutFree+o)
				clear(ob.Bytes())
			}
			quantised := g.Int8 && row >= 0
			var sc float32
			if quantised {
				sc = kvQuantise(c, c.Profile().Numerics, ob.F16()[:d], qb.I8()[:d])
			}
			c.SetFlag(npu.PipeV, npu.PipeMTE3, evStore+o)
			c.WaitFlag(npu.PipeV, npu.PipeMTE3, evStore+o)
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
			sb.F32()[0] = sc
			if err := c.DataCopyPadOut(cache.GM(), cache.Base()+dst, qb, d); err != nil {
				return err
			}
			si := f.scaleIndex(row, h, g.H)
			return c.DataCopyPadOut(outs[kv.scale].GM(), outs[kv.scale].Base()+si, sb, 1)
		}
		for b := c.BlockIdx; b < len(rowOf); b += blockDim {
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
			for _, kv := range []kvNames{
				{"w_k", "new_k", "k_cache", "k_scale"}, {"w_v", "new_v", "v_cache", "v_scale"},
			} {
				for h := range g.H {
					if err := head(b, h, s, row, kv); err != nil {
						return err
					}
					c.SetFlag(npu.PipeMTE3, npu.PipeV, evOutFree+o)
					o = (o + 1) % nb
				}
			}
			fb.U8()[0] = flag
			if err := c.DataCopyPadOut(outs["written"].GM(), outs["written"].Base()+b, fb, 1); err != nil {
				return err
			}
			if rowOf[b] >= 0 && f.bumpsSeqLen() {
				fb.I32()[0] = lens[s] + 1
				if err := c.DataCopyPadOut(outs["seq_lens"].GM(), outs["seq_lens"].Base()+int(s), fb, 1); err != nil {
					return err
				}
			}
		}
		for i := range nb {
			c.WaitFlag(npu.PipeM, npu.PipeMTE2, evWFree+i)
			c.WaitFlag(npu.PipeM, npu.PipeMTE2, evXFree+i)
			c.WaitFlag(npu.PipeMTE3, npu.PipeV, evOutFree+i)
			c.WaitFlag(npu.PipeV, npu.PipeM, evAccFree+i)
		}
		return nil
	}
}

// kvNames names a projection's weight, its new rows, its cache and its
// int8 scales.
type kvNames struct{ w, newName, cache, scale string }

// kvRoundRow rounds the fp32 accumulators of one projected row to fp16
// into out, as kvRound does, charging only the vector instruction: the
// kernel charges the cube panel by panel.
func kvRoundRow(c *npu.Core, acc []float32, out []float16.Float16) {
	num := c.Profile().Numerics
	for j, a := range acc {
		out[j] = float16.Fromfloat32(float32(num.Round(float64(npu.CanonNaN(a)), tensor.Float16))) // a NaN sum: the default NaN
	}
	c.ChargeVector(len(acc) * 4)
}

// kvUBRows is the UB a kv_update block holds besides its weight panel,
// per ping-pong slot: the x row and the fp16 output row (2·D bytes each),
// the int8 row (D) and one block for a scale, each rounded to the UB
// alignment; and once, one block for a seq_len or flag.
func kvUBRows(prof npu.Profile, d int) int {
	align := prof.UBAlign()
	return 2*roundUp(d*2, align) + roundUp(d, align) + align
}

// kvPanelRows is how many rows of a D×D weight matrix one UB panel holds
// beside the row buffers, single-buffered: all D when they fit, else the
// most that fit, so that any D whose rows fit runs, with w streamed
// through UB k-panel by k-panel (Ascend C's K tiling of a matrix-vector
// product). Each panel continues the same fp32 accumulators in k order,
// so the bits do not depend on the panel size. A UB that cannot hold the
// rows and one weight row is an error naming ub_bytes.
func kvPanelRows(prof npu.Profile, d int) (int, error) {
	kt, _, err := kvPanelLayout(prof, d, 1)
	return kt, err
}

// kvPanelLayout is the panel rows and the ping-pong slots (1 or 2) of a
// block: with bufNum 2 (the default), two sets of row buffers and two
// panels of the most rows that fit beside them, so the next panel loads
// while the cube multiplies this one; one set where the UB cannot hold two
// sets and a weight row each (a D near the UB's limit still runs, single
// buffered, as before).
func kvPanelLayout(prof npu.Profile, d, bufNum int) (kt, nb int, err error) {
	align := prof.UBAlign()
	for nb = max(bufNum, 1); nb >= 1; nb-- {
		free := prof.UBBytes - nb*kvUBRows(prof, d) - align
		kt = min(d, free/nb/align*align/(d*2))
		if kt >= 1 {
			return kt, nb, nil
		}
	}
	return 0, 0, fmt.Errorf("kv_update: d %d needs %d bytes of UB (the x, output and int8 rows and one weight row); ub_bytes is %d",
		d, kvUBRows(prof, d)+align+roundUp(d*2, align), prof.UBBytes)
}

// kvProject is the cube's 1×D by D×D product in one panel: kvAccumulate
// over all of w, then kvRound.
func kvProject(c *npu.Core, acc, wf []float32, x, w, out []float16.Float16) {
	clear(acc)
	kvAccumulate(acc, wf, x, w)
	kvRound(c, acc, out)
}

// kvAccumulate adds the rows of one k-panel of w (len(x) rows of
// len(acc) columns) times x into acc: one fp32 accumulator per output
// column, k ascending (fp16 products are exact in fp32, so
// multiply-then-add rounds as the fused step). wf is scratch for the
// panel widened to fp32, all at once (exact: the values the products
// read one at a time).
func kvAccumulate(acc, wf []float32, x, w []float16.Float16) {
	d := len(acc)
	wf = wf[:len(w)]
	tensor.F16ToF32s(wf, w)
	for i, xi := range x {
		xv := xi.Float32()
		row := wf[i*d : (i+1)*d]
		for j, wv := range row {
			acc[j] += float32(xv * wv) // converted: rounds on its own (exact), never fused
		}
	}
}

// kvRound is the fp16 cast of the accumulators into out, and charges the
// whole 1×D by D×D product (one cube product however many panels fed
// it) and the cast.
func kvRound(c *npu.Core, acc []float32, out []float16.Float16) {
	d := len(acc)
	c.ChargeCube(1, d, d, true)
	kvRoundRow(c, acc, out)
}

// kvQuantise is the vector unit's symmetric per-row int8 quantisation of
// one fp16 row, in fp32: Abs and ReduceMax, one divide by 127 for the
// scale, Div of the row by the scale, Cast to int8 with the profile's
// rounding, clamped to ±127. An all-zero row gives scale 0 and codes 0.
func kvQuantise(c *npu.Core, num tensor.Numerics, v []float16.Float16, q []int8) float32 {
	var amax float32
	for _, x := range v {
		amax = max(amax, float32(math.Abs(float64(x.Float32()))))
	}
	c.ChargeVector(len(v) * 2) // abs + reduce max
	if amax == 0 {
		clear(q)
		return 0
	}
	sc := npu.CanonNaN(amax / 127) // a NaN in the row: the default NaN scale
	for i, x := range v {
		r := num.Round(float64(x.Float32()/sc), tensor.Int8)
		q[i] = int8(max(-127, min(127, r)))
	}
	c.ChargeVector(len(v) * 4) // divide
	c.ChargeVector(len(v) * 4) // cast to int8
	return sc
}
