package kernels

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// decode_attention: one work item per (batch entry, kv head) computes the
// attention of the Hq/Hkv query heads that share the kv head (GQA), over
// the sequence's context split into partitions of PartitionLen positions,
// each small enough that its K and V tiles fit in UB. Per partition: the
// K rows (DataCopy2D of every run of consecutive cache rows: a whole
// partition for contiguous caches, a block's share for paged ones) feed
// the cube's q·Kᵀ (fp32 accumulator); the vector unit scales, takes the
// partition maximum m_p, exp(s − m_p), their sum Z_p and, with the V rows,
// N_p = Σ e_j·v_j. Partitions are combined flash-decoding style: with the
// running maximum M, Z ← Z·exp(M − M') + Z_p·exp(m_p − M') and likewise N,
// which is exact in exact arithmetic and never overflows. out = RN16(N/Z).
//
// Host side, items are spread over the cores by LPT (longest processing
// time first: items sorted by context length, each to the least loaded
// core), or statically (item i to core i mod blockDim) as an option; the
// modeled cost's LoadBalance shows the difference on skewed length mixes.

// The core schedules of decode_attention.
const (
	ScheduleLPT    = "lpt"
	ScheduleStatic = "static"
)

// DecodeAttentionOptions overrides the tiling; zero fields take the
// default.
type DecodeAttentionOptions struct {
	BlockDim     int    // cores (default min(AI cores, items))
	PartitionLen int    // context positions per partition (default from UB)
	Schedule     string // ScheduleLPT (default) or ScheduleStatic
}

// daItem is one work item: query heads [q0, q0+nq) of batch entry b over
// kv head kvh of sequence seq, n positions.
type daItem struct{ b, seq, kvh, q0, nq, n int }

// DecodeAttentionTiling is the host-side tiling.
type DecodeAttentionTiling struct {
	BlockDim     int
	PartitionLen int
	Schedule     string
	items        []daItem
	cores        [][]int // item indices per core
}

// DecodePartitionLen is the default partition: the double-buffered K and V
// tiles (2×2 buffers of P·D fp16) take at most half of UB, P a multiple of
// 16.
func DecodePartitionLen(prof npu.Profile, d int) int {
	p := prof.UBBytes / 2 / (4 * d * 2) / 16 * 16
	return max(p, 16)
}

// NewDecodeAttentionTiling computes the tiling of the items on prof.
func newDecodeAttentionTiling(prof npu.Profile, d int, items []daItem, opt DecodeAttentionOptions) (DecodeAttentionTiling, error) {
	t := DecodeAttentionTiling{PartitionLen: DecodePartitionLen(prof, d), Schedule: ScheduleLPT, items: items}
	if opt.PartitionLen > 0 {
		t.PartitionLen = opt.PartitionLen
	}
	if opt.Schedule != "" {
		if opt.Schedule != ScheduleLPT && opt.Schedule != ScheduleStatic {
			return t, fmt.Errorf("decode_attention: schedule %q (want %s or %s)", opt.Schedule, ScheduleLPT, ScheduleStatic)
		}
		t.Schedule = opt.Schedule
	}
	t.BlockDim = min(prof.AICores, prof.VectorCores, max(len(items), 1))
	if opt.BlockDim > 0 {
		t.BlockDim = min(opt.BlockDim, prof.VectorCores)
	}
	t.cores = make([][]int, t.BlockDim)
	cost := func(it daItem) int { return it.nq*it.n + 64 } // positions × heads, plus a fixed setup
	if t.Schedule == ScheduleStatic {
		for i := range items {
			t.cores[i%t.BlockDim] = append(t.cores[i%t.BlockDim], i)
		}
		return t, nil
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cost(items[b]) - cost(items[a]) })
	load := make([]int, t.BlockDim)
	for _, i := range order {
		c := 0
		for k := range load {
			if load[k] < load[c] {
				c = k
			}
		}
		load[c] += cost(items[i])
		t.cores[c] = append(t.cores[c], i)
	}
	return t, nil
}

// DecodeAttentionKernel is decode_attention's KernelFunc.
func DecodeAttentionKernel(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	const op = "decode_attention"
	if err := ops.CheckInputs(ops.DecodeAttention, p, in); err != nil {
		return nil, nil, err
	}
	g, err := ops.KVGeomOf(ops.DecodeAttention, p, in)
	if err != nil {
		return nil, nil, err
	}
	f := npu.FaultsFrom(ctx)
	q := in["q"]
	b, hq := q.Shape[0], q.Shape[1]
	grp := hq / g.H
	lens := in["seq_lens"].I32()
	var items []daItem
	for bb, s := range in["seq_ids"].I32() {
		n := 0
		if s >= 0 {
			n = int(lens[s])
		}
		if f.Has(FaultDAGQAMod) {
			for hh := range hq {
				items = append(items, daItem{b: bb, seq: int(s), kvh: hh % g.H, q0: hh, nq: 1, n: n})
			}
			continue
		}
		for h := range g.H {
			items = append(items, daItem{b: bb, seq: int(s), kvh: h, q0: h * grp, nq: grp, n: n})
		}
	}
	t, err := newDecodeAttentionTiling(dev.Profile(), g.D, items, variantOptions[DecodeAttentionOptions](ctx))
	if err != nil {
		return nil, nil, err
	}
	out, err := npu.NewGuardedOutput("out", tensor.Float16, b, hq, g.D)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	if len(items) == 0 {
		return map[string]*tensor.Tensor{"out": out.Tensor()}, dev.ZeroCost(), nil
	}
	sigma := float32(ops.DecodeScale(p, g.D))
	cost, err := dev.Launch(ctx, t.BlockDim, decodeAttentionDevice(g, t, in, out, sigma, grp))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	res := map[string]*tensor.Tensor{"out": out.Tensor()}
	if err := npu.CheckGuards(out); err != nil {
		return res, cost, fmt.Errorf("%s: %w", op, err)
	}
	return res, cost, nil
}

// daRun is a run of consecutive cache rows: positions [pos, pos+n) at
// rows [row, row+n).
type daRun struct{ pos, row, n int }

func decodeAttentionDevice(g ops.KVGeom, t DecodeAttentionTiling, in map[string]*tensor.Tensor, out *npu.GuardedOutput, sigma float32, grp int) npu.Kernel {
	return func(c *npu.Core) error {
		f := c.Faults()
		d, P := g.D, t.PartitionLen
		align := c.Profile().UBAlign()
		esz := 2
		if g.Int8 {
			esz = 1
		}
		alloc := func(bytes int) (*npu.Buffer, error) { return c.AllocUB(roundUp(max(bytes, 1), align)) }
		qb, err := alloc(grp * d * 2)
		if err != nil {
			return err
		}
		kb, err := alloc(P * d * esz)
		if err != nil {
			return err
		}
		ksb, err := alloc(P * 4)
		if err != nil {
			return err
		}
		ob, err := alloc(d * 2)
		if err != nil {
			return err
		}
		var bt []int32
		if g.Paged {
			bt = in["block_tables"].I32()
		}
		row := func(s, pos int) int {
			if f.Has(FaultDAPageIndexU16) && g.Paged {
				return int(uint16(bt[s*g.MB+pos/g.BS]))*g.BS + pos%g.BS
			}
			return g.Row(bt, s, pos)
		}
		hd := g.H * d
		// per query head of the item: scores, running max, sum, numerator
		sc := make([][]float32, grp)
		nacc := make([][]float32, grp)
		np := make([][]float32, grp)
		for i := range grp {
			sc[i], nacc[i], np[i] = make([]float32, P), make([]float32, d), make([]float32, d)
		}
		mRun, zRun, partF := make([]float32, grp), make([]float32, grp), make([]float32, grp)
		load := func(cache, scale string, r daRun, kvh int) error {
			if err := c.DataCopy2DIn(kb, in[cache], hd, r.row, kvh*d, r.n, d, d, r.n); err != nil {
				return err
			}
			if g.Int8 {
				return c.DataCopy2DIn(ksb, in[scale], g.H, r.row, kvh, r.n, 1, 1, r.n)
			}
			return nil
		}
		tf := make([]float32, P*d) // the loaded tile after the vector unit's Cast / dequantisation
		qf := make([]float32, grp*d)
		// decode casts the loaded tile of r.n rows to fp32 (fp16: exact;
		// int8: RN32(code·scale)); isK says which scale applies.
		decode := func(r daRun, isK bool, kvh int) {
			n := r.n * d
			if !g.Int8 {
				for i, v := range kb.F16()[:n] {
					tf[i] = f16ToF32(v)
				}
				c.ChargeVector(n * 2)
				return
			}
			codes, scales := kb.I8()[:n], ksb.F32()[:r.n]
			for j := range r.n {
				s := scales[j]
				switch {
				case isK && f.Has(FaultDAScaleDropped):
					s = 1
				case !isK && f.Has(FaultDAVByKScale):
					s = in["k_scale"].F32()[(r.row+j)*g.H+kvh]
				}
				for i, q := range codes[j*d : (j+1)*d] {
					tf[j*d+i] = float32(q) * s
				}
			}
			c.ChargeVector(n * 4)
		}
		for _, it := range t.cores[c.BlockIdx] {
			item := t.items[it]
			c.BeginTile()
			nq := item.nq
			n := item.n
			if f.Has(FaultDAReadsPastLen) && item.seq >= 0 && n > 0 && n < g.L && row(item.seq, n) >= 0 {
				n++
			}
			qoff := (item.b*(g.H*grp) + item.q0) * d
			if n > 0 {
				if err := c.DataCopyPadIn(qb, in["q"], qoff, nq*d); err != nil {
					return err
				}
				for i, v := range qb.F16()[:nq*d] {
					qf[i] = f16ToF32(v)
				}
			}
			for h := range nq {
				mRun[h], zRun[h] = float32(math.Inf(-1)), 0
				clear(nacc[h])
			}
			for p0 := 0; p0 < n; p0 += P {
				p1 := min(n, p0+P)
				var runs []daRun
				for pos := p0; pos < p1; pos++ {
					r := row(item.seq, pos)
					if k := len(runs) - 1; k >= 0 && runs[k].row+runs[k].n == r {
						runs[k].n++
						continue
					}
					runs = append(runs, daRun{pos: pos, row: r, n: 1})
				}
				// scores: q·Kᵀ on the cube, σ on the vector unit
				for _, r := range runs {
					if err := load("k_cache", "k_scale", r, item.kvh); err != nil {
						return err
					}
					decode(r, true, item.kvh)
					for h := range nq {
						qr := qf[h*d : (h+1)*d]
						j := 0
						for ; j+4 <= r.n; j += 4 { // four keys per pass over q; each sum still i ascending
							k0, k1, k2, k3 := tf[j*d:(j+1)*d], tf[(j+1)*d:(j+2)*d], tf[(j+2)*d:(j+3)*d], tf[(j+3)*d:(j+4)*d]
							var a0, a1, a2, a3 float32
							for i, qv := range qr {
								a0 += float32(qv * k0[i])
								a1 += float32(qv * k1[i])
								a2 += float32(qv * k2[i])
								a3 += float32(qv * k3[i])
							}
							o := sc[h][r.pos-p0+j:]
							o[0], o[1], o[2], o[3] = a0*sigma, a1*sigma, a2*sigma, a3*sigma
						}
						for ; j < r.n; j++ {
							var acc float32
							kr := tf[j*d : (j+1)*d]
							for i, qv := range qr {
								acc += float32(qv * kr[i])
							}
							sc[h][r.pos-p0+j] = acc * sigma
						}
					}
					c.ChargeCube(nq, d, r.n, !g.Int8)
				}
				// softmax of the partition on the vector unit
				m := p1 - p0
				for h := range nq {
					mp := float32(math.Inf(-1))
					for _, s := range sc[h][:m] {
						mp = max(mp, s)
					}
					if f.Has(FaultDANoMaxSub) {
						mp = 0
					}
					var zp float32
					for j, s := range sc[h][:m] {
						e := float32(math.Exp(float64(s - mp)))
						sc[h][j] = e
						zp += e
					}
					mNew := max(mRun[h], mp)
					if f.Has(FaultDANoMaxSub) {
						mNew = 0
					}
					a, bsc := float32(math.Exp(float64(mRun[h]-mNew))), float32(math.Exp(float64(mp-mNew)))
					if f.Has(FaultDACombineNoRescale) {
						a, bsc = 1, 1
					}
					if mRun[h] == float32(math.Inf(-1)) {
						a = 0
					}
					zRun[h] = float32(zRun[h]*a) + float32(zp*bsc)
					for i := range nacc[h] {
						nacc[h][i] *= a
					}
					mRun[h], partF[h] = mNew, bsc
					clear(np[h])
				}
				c.ChargeVector(nq * m * 4 * 4) // max, sub, exp, sum
				// weighted sum of V rows
				for _, r := range runs {
					if err := load("v_cache", "v_scale", r, item.kvh); err != nil {
						return err
					}
					decode(r, false, item.kvh)
					for h := range nq {
						acc := np[h][:d]
						j := 0
						for ; j+2 <= r.n; j += 2 { // two rows per pass; each element still adds row j, then j+1
							e0, e1 := sc[h][r.pos-p0+j], sc[h][r.pos-p0+j+1]
							v0, v1 := tf[j*d:(j+1)*d], tf[(j+1)*d:(j+2)*d]
							for i := range acc {
								acc[i] = float32(float32(acc[i]+float32(e0*v0[i])) + float32(e1*v1[i]))
							}
						}
						for ; j < r.n; j++ {
							e := sc[h][r.pos-p0+j]
							for i, v := range tf[j*d : (j+1)*d] {
								acc[i] += float32(e * v)
							}
						}
					}
					c.ChargeCube(nq, r.n, d, !g.Int8)
				}
				for h := range nq {
					for i := range d {
						nacc[h][i] += float32(np[h][i] * partF[h])
					}
				}
				c.ChargeVector(nq * d * 4 * 2)
			}
			// normalise and store
			for h := range nq {
				o := ob.F16()[:d]
				num := c.Profile().Numerics
				for i := range d {
					v := float32(0)
					if n > 0 {
						v = nacc[h][i] / zRun[h]
					}
					o[i] = float16.Fromfloat32(float32(num.Round(float64(v), tensor.Float16)))
				}
				c.ChargeVector(d * 4)
				if err := c.DataCopyPadOut(out.GM(), out.Base()+qoff+h*d, ob, d); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// f16Table maps every fp16 bit pattern to its fp32 value (exact).
var f16Table = func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = float16.Frombits(uint16(i)).Float32()
	}
	return &t
}()

// f16ToF32 is the vector unit's exact fp16 → fp32 Cast.
func f16ToF32(v float16.Float16) float32 { return f16Table[v.Bits()] }
