package experiments

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/tensor"
)

// smallDecodingConfig is a comparison small enough for a unit test.
func smallDecodingConfig() report.DecodingConfig {
	return report.DecodingConfig{B: 2, Hq: 4, Hkv: 2, D: 64, Lengths: []int{128, 256, 512, 1024}, Seed: 3}
}

// TestIncrementalBeatsRecompute holds the cost model to what incremental
// decoding is for, on the report's configuration and on a small batch (2
// sequences × 2 kv heads, D = 64): at every context length one decode
// step costs fewer modeled cycles than projecting K and V again for every
// token, and the advantage in cycles grows with the context (the cost
// model is deterministic, so these are exact comparisons, not
// statistics). kv_update spreads its (entry, head) pairs over the cores,
// so even the small batch's step (4 pairs on 4 cores) costs less than the
// batched projections of its shortest context.
//
// The growth asked from one length to the next is the one that follows
// from the model: both sides run the same decode_attention, so recompute −
// incremental is the projections' cycles less kv_update's, and kv_update's
// do not depend on L (TestDecodingCostIgnoresValues) while the
// projections' cannot fall as their rows grow; so the advantage in cycles
// never shrinks from one length to the next. The ratio is not asked to
// grow: it is (projections + attention) / (kv_update + attention), and
// with kv_update a small constant it follows projections / attention,
// which falls with L (the projection gemm gets more efficient as its rows
// grow: at L = 512 each of the 24 cores has one 128-row block whose loads
// cannot hide behind an earlier block's cube, at L = 1024 two, 1.38× the
// cycles for twice the rows, while decode_attention grows nearly in
// proportion to L): on the report's configuration 3.20× at L = 512 and
// 2.95× at 8192.
func TestIncrementalBeatsRecompute(t *testing.T) {
	for _, cfg := range []report.DecodingConfig{DefaultDecodingConfig(), smallDecodingConfig()} {
		if testing.Short() && cfg.D == DefaultDecodingConfig().D {
			continue
		}
		tab, err := IncrementalVsRecompute(context.Background(), npu.Ascend910B(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var md bytes.Buffer
		if err := tab.Markdown(&md); err != nil {
			t.Fatal(err)
		}
		t.Log("\n" + md.String())
		if len(tab.Rows) != len(cfg.Lengths) {
			t.Fatalf("decoding B=%d Hq=%d Hkv=%d D=%d seed %d: %d rows / want %d", cfg.B, cfg.Hq, cfg.Hkv, cfg.D, cfg.Seed, len(tab.Rows), len(cfg.Lengths))
		}
		for i, r := range tab.Rows {
			where := func() string {
				return fmt.Sprintf("decoding B=%d Hq=%d Hkv=%d D=%d seed %d L=%d", cfg.B, cfg.Hq, cfg.Hkv, cfg.D, cfg.Seed, r.L)
			}
			if r.Incremental.Cycles <= 0 || r.Incremental.Cycles >= r.Recompute.Cycles {
				t.Errorf("%s: incremental %d cycles / want 0 < incremental < recompute %d", where(), r.Incremental.Cycles, r.Recompute.Cycles)
			}
			if got, want := r.Incremental.Cycles, r.KVUpdateCycles+r.AttentionCycles; got != want {
				t.Errorf("%s: incremental %d cycles / want kv_update + decode_attention = %d", where(), got, want)
			}
			if got, want := r.Recompute.Cycles, r.ProjectionCycles+r.AttentionCycles; got != want {
				t.Errorf("%s: recompute %d cycles / want projections + decode_attention = %d", where(), got, want)
			}
			if r.Incremental.Launches != 2 || r.Recompute.Launches != 2*cfg.Hkv+1 {
				t.Errorf("%s: launches %d and %d / want 2 and %d", where(), r.Incremental.Launches, r.Recompute.Launches, 2*cfg.Hkv+1)
			}
			if i > 0 {
				prev := tab.Rows[i-1]
				if got, was := r.Recompute.Cycles-r.Incremental.Cycles, prev.Recompute.Cycles-prev.Incremental.Cycles; got < was {
					t.Errorf("%s: recompute − incremental %d cycles / want ≥ %d, the advantage at L=%d", where(), got, was, prev.L)
				}
			}
		}
	}
}

// TestDecodingCostIgnoresValues backs the two shortcuts of
// IncrementalVsRecompute: projection launches of one shape on other
// weights and inputs cost the same cycles, and kv_update's cycles do not
// depend on the write position (the context length).
func TestDecodingCostIgnoresValues(t *testing.T) {
	ctx := context.Background()
	dev := npu.MustNewDevice(npu.Ascend910B())
	const rows, d = 1024, 64
	var cycles []int64
	for seed := range uint64(2) {
		g := newDecodingGen(seed)
		_, c, err := kernels.GEMMKernel(ctx, dev, ops.Params{"mode": "fp16_fp32acc"}, map[string]*tensor.Tensor{"a": g.f16(rows, d), "b": g.f16(d, d)})
		if err != nil {
			t.Fatal(err)
		}
		cycles = append(cycles, c.Cycles)
	}
	if cycles[0] != cycles[1] {
		t.Errorf("gemm fp16_fp32acc m=%d k=n=%d seeds 0, 1: cycles %d and %d / want equal", rows, d, cycles[0], cycles[1])
	}
	p, err := ops.KVUpdate.Validate(ops.Params{})
	if err != nil {
		t.Fatal(err)
	}
	// kv_update: the whole cost (what the decoding table reads of it, and
	// the rest) is the same at every write position and cache length.
	g := newDecodingGen(7)
	const b, h = 2, 2
	var first *npu.Cost
	for _, l := range []int{64, 160} {
		in := map[string]*tensor.Tensor{"x": g.f16(b, h, d), "w_k": g.f16(h, d, d), "w_v": g.f16(h, d, d), "k_cache": g.f16(b, l, h, d), "v_cache": g.f16(b, l, h, d),
			"seq_ids": tensor.MustNew(tensor.Int32, b)}
		in["seq_ids"].I32()[1] = 1
		for _, pos := range []int32{0, int32(l / 2), int32(l - 1)} {
			in["seq_lens"] = tensor.MustNew(tensor.Int32, b)
			in["seq_lens"].I32()[0], in["seq_lens"].I32()[1] = pos, pos
			_, c, err := kernels.KVUpdateKernel(ctx, dev, p, in)
			if err != nil {
				t.Fatal(err)
			}
			if first == nil {
				first = c
			} else if !reflect.DeepEqual(c, first) {
				t.Errorf("kv_update B=%d H=%d D=%d seed 7, cache length %d, position %d: cost %+v / want %+v (cache length 64, position 0)", b, h, d, l, pos, *c, *first)
			}
		}
	}
}

// TestDecodingDeterministicAndRendered: the table the command hands to
// report is the same on every run (the report is compared byte for byte
// across runs and merges), renders in every format, and a configuration
// the study cannot run is a decoding-table error, not a table.
func TestDecodingDeterministicAndRendered(t *testing.T) {
	cfg := smallDecodingConfig()
	cfg.Lengths = []int{64, 256}
	var out [2]string
	for i := range out {
		tab, err := IncrementalVsRecompute(context.Background(), npu.Ascend910B(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		r := &report.Report{Title: "t", Sections: []report.Section{tab}}
		if err := r.JSON(&b); err != nil {
			t.Fatal(err)
		}
		if err := r.Markdown(&b); err != nil {
			t.Fatal(err)
		}
		if err := r.HTML(&b); err != nil {
			t.Fatal(err)
		}
		out[i] = b.String()
	}
	if out[0] != out[1] {
		t.Errorf("decoding seed %d: two runs render differently", cfg.Seed)
	}
	for _, s := range []string{`"incremental_decoding"`, "## Incremental decoding vs full recompute", "| 256 |", `id="plot-decoding-1"`, `id="plot-decoding-2"`} {
		if !strings.Contains(out[0], s) {
			t.Errorf("decoding seed %d: rendered report lacks %q", cfg.Seed, s)
		}
	}
	for _, bad := range []report.DecodingConfig{{B: 1, Hq: 3, Hkv: 2, D: 64, Lengths: []int{8}}, {B: 1, Hq: 2, Hkv: 2, D: 64}, {B: 1, Hq: 2, Hkv: 2, D: 64, Lengths: []int{0}}} {
		if _, err := IncrementalVsRecompute(context.Background(), npu.Ascend910B(), bad); err == nil || !strings.HasPrefix(err.Error(), "decoding table: ") {
			t.Errorf("decoding %+v: err %v / want a decoding table error", bad, err)
		}
	}
}

// TestDecodingGenF16 holds decodingGen.f16 to its obvious form: one random
// word per four values, the low byte of each 16-bit lane picking the table
// entry, lanes in order, a last partial word for the tail.
func TestDecodingGenF16(t *testing.T) {
	for n := range 10 {
		const seed = 3
		got := newDecodingGen(seed).f16(n).F16()
		g := newDecodingGen(seed)
		var w uint64
		for i := range n {
			if i%4 == 0 {
				w = g.rng.Uint64()
			}
			if want := g.table[w>>(16*(i%4))&0xff]; got[i] != want {
				t.Errorf("decodingGen(seed %d).f16(%d)[%d] = %#04x, want %#04x", seed, n, i, got[i].Bits(), want.Bits())
			}
		}
	}
}
