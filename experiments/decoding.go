package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
	"github.com/x448/float16"
)

// DefaultDecodingConfig is the comparison the report command renders:
// 6 sequences × 4 kv heads (24 decode_attention work items, one per AI
// core of ascend910b), D = 128, contexts 512 … 8K.
func DefaultDecodingConfig() report.DecodingConfig {
	return report.DecodingConfig{B: 6, Hq: 4, Hkv: 4, D: 128, Lengths: []int{512, 1024, 2048, 4096, 8192}, Seed: 1}
}

// IncrementalVsRecompute runs, for every length L of cfg, the emulated
// kernels of both paths on prof and reads their modeled cost:
//
//   - incremental: kv_update of x [B,Hkv,D] into fp16 contiguous caches
//     [B,Lmax,Hkv,D] at position L−1, then decode_attention of q [B,Hq,D]
//     over the L cached positions;
//   - recompute: for each kv head, K = X·w_k[h] and V = X·w_v[h] with X the
//     [B·L, D] token inputs (gemm, fp16 in, fp32 accumulation, fp16 out:
//     kv_update's numerics as one GEMM per head instead of B matrix-vector
//     products), then the same decode_attention.
//
// This is the single-layer twin the chain test checks: a multi-layer
// model without a cache would also recompute every earlier position's
// attention, so the recompute figure is a lower bound. Inputs are seeded
// uniform fp16. The cost model does not depend on the values, which the
// runs use twice: kv_update (one row per sequence whatever L) runs once,
// and of the 2·Hkv projection launches of one shape one runs, counted
// 2·Hkv times; TestDecodingCostIgnoresValues checks both.
func IncrementalVsRecompute(ctx context.Context, prof npu.Profile, cfg report.DecodingConfig) (*report.DecodingTable, error) {
	c := cfg
	if c.B <= 0 || c.Hq <= 0 || c.Hkv <= 0 || c.D <= 0 || c.Hq%c.Hkv != 0 || len(c.Lengths) == 0 {
		return nil, fmt.Errorf("decoding table: B %d, Hq %d, Hkv %d, D %d must be positive with Hkv dividing Hq, and lengths %v non-empty",
			c.B, c.Hq, c.Hkv, c.D, c.Lengths)
	}
	for _, l := range c.Lengths {
		if l <= 0 {
			return nil, fmt.Errorf("decoding table: length %d is not positive", l)
		}
	}
	dev, err := npu.NewDevice(prof)
	if err != nil {
		return nil, fmt.Errorf("decoding table: %w", err)
	}
	g := newDecodingGen(c.Seed)
	lmax := slices.Max(c.Lengths)
	b, h, d := c.B, c.Hkv, c.D
	kc, vc := g.f16(b, lmax, h, d), g.f16(b, lmax, h, d)
	ws := g.f16(2, h, d, d) // w_k, w_v
	x, q := g.f16(b, h, d), g.f16(b, c.Hq, d)
	xs := g.f16(b*lmax, d) // the token inputs of one head, for recompute
	ids := tensor.MustNew(tensor.Int32, b)
	for i := range b {
		ids.I32()[i] = int32(i)
	}
	lens := func(n int) *tensor.Tensor {
		t := tensor.MustNew(tensor.Int32, b)
		for i := range b {
			t.I32()[i] = int32(n)
		}
		return t
	}
	kvp, err := ops.KVUpdate.Validate(ops.Params{})
	if err != nil {
		return nil, fmt.Errorf("decoding table: %w", err)
	}
	dap, err := ops.DecodeAttention.Validate(ops.Params{})
	if err != nil {
		return nil, fmt.Errorf("decoding table: %w", err)
	}
	gp := ops.Params{"mode": "fp16_fp32acc"}
	wk, wv := sub(ws, 0, h*d*d, h, d, d), sub(ws, h*d*d, h*d*d, h, d, d)
	t := &report.DecodingTable{Config: c, Device: prof.Name}
	where := fmt.Sprintf("decoding table: B=%d Hq=%d Hkv=%d D=%d seed %d", b, c.Hq, h, d, c.Seed)
	// kv_update writes one row per sequence whatever L: its cost is the
	// same at every position and every cache length
	// (TestDecodingCostIgnoresValues), so one launch on caches of the
	// shortest length stands for every length. (On the full caches its
	// in-place outputs alone were two more copies of them.)
	lmin := slices.Min(c.Lengths)
	short := func(t *tensor.Tensor) *tensor.Tensor { return sub(t, 0, b*lmin*h*d, b, lmin, h, d) }
	_, kvCost, err := kernels.KVUpdateKernel(ctx, dev, kvp, map[string]*tensor.Tensor{
		"x": x, "w_k": wk, "w_v": wv, "k_cache": short(kc), "v_cache": short(vc), "seq_lens": lens(lmin - 1), "seq_ids": ids})
	if err != nil {
		return nil, fmt.Errorf("%s L=%d: kv_update: %w", where, lmin, err)
	}
	for _, l := range c.Lengths {
		_, daCost, err := kernels.DecodeAttentionKernel(ctx, dev, dap, map[string]*tensor.Tensor{
			"q": q, "k_cache": kc, "v_cache": vc, "seq_lens": lens(l), "seq_ids": ids})
		if err != nil {
			return nil, fmt.Errorf("%s L=%d: decode_attention: %w", where, l, err)
		}
		// The 2·Hkv projections are launches of one shape on different
		// weights; the cost model does not look at values, so one launch
		// (K of head 0) is run and counted 2·Hkv times.
		_, pc, err := kernels.GEMMKernel(ctx, dev, gp, map[string]*tensor.Tensor{"a": sub(xs, 0, b*l*d, b*l, d), "b": sub(wk, 0, d*d, d, d)})
		if err != nil {
			return nil, fmt.Errorf("%s L=%d: projection gemm [%d×%d]·[%d×%d]: %w", where, l, b*l, d, d, d, err)
		}
		proj := make([]*npu.Cost, 2*h)
		for i := range proj {
			proj[i] = pc
		}
		row := report.DecodingRow{L: l, KVUpdateCycles: kvCost.Cycles, AttentionCycles: daCost.Cycles, ProjectionCycles: int64(2*h) * pc.Cycles,
			Incremental: pathOf(kvCost, daCost), Recompute: pathOf(append(proj, daCost)...)}
		row.Speedup = float64(row.Recompute.Cycles) / float64(row.Incremental.Cycles)
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// sub is a tensor of shape holding n elements of t from off: a head's
// weights, or the first B·L token rows.
func sub(t *tensor.Tensor, off, n int, shape ...int) *tensor.Tensor {
	s := tensor.MustNew(t.DType, shape...)
	copy(s.F16(), t.F16()[off:off+n])
	return s
}

// decodingGen draws seeded uniform fp16 values in (−1, 1), four per
// random word, from a table of 256 values: the inputs only need to be
// valid and finite, and drawing tens of millions of them must stay fast.
type decodingGen struct {
	rng   *rand.Rand
	table [256]float16.Float16
}

func newDecodingGen(seed uint64) *decodingGen {
	g := &decodingGen{rng: rand.New(rand.NewPCG(seed, 0x6465636f6465))}
	for i := range g.table {
		g.table[i] = float16.Fromfloat32(float32(float64((float64(i)+0.5)/128) - 1))
	}
	return g
}

func (g *decodingGen) f16(shape ...int) *tensor.Tensor {
	t := tensor.MustNew(tensor.Float16, shape...)
	s := t.F16()
	i := 0
	for ; i+4 <= len(s); i += 4 {
		w := g.rng.Uint64()
		s4 := s[i : i+4 : i+4]
		s4[0], s4[1], s4[2], s4[3] = g.table[w&0xff], g.table[w>>16&0xff], g.table[w>>32&0xff], g.table[w>>48&0xff]
	}
	if i < len(s) {
		w := g.rng.Uint64()
		for j := i; j < len(s); j++ {
			s[j] = g.table[w&0xff]
			w >>= 16
		}
	}
	return t
}

// pathOf combines the costs of launches run one after the other.
func pathOf(costs ...*npu.Cost) report.DecodingPath {
	p := report.DecodingPath{Launches: len(costs)}
	var hidden, overlappable float64
	for _, k := range costs {
		p.Cycles += k.Cycles
		p.UBPeakBytes = max(p.UBPeakBytes, k.UBPeakBytes)
		for _, cc := range k.Cores {
			compute := cc.VectorCycles + cc.CubeCycles
			if m := min(cc.DMACycles, compute); m > 0 {
				overlappable += float64(m)
				hidden += float64(max(0, cc.DMACycles+compute-cc.Cycles))
			}
		}
	}
	p.Overlap = verify.Float(math.NaN())
	if overlappable > 0 {
		p.Overlap = verify.Float(min(1, hidden/overlappable))
	}
	return p
}
