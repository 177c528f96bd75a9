package suites_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// kvExact holds, per cache element of the logical cache (sequence,
// position, head, i), the exactly recomputed value and how far the
// stored (dequantised) value may be from it by the kv_update contract.
type kvExact struct {
	val, dev map[[4]int]float64
}

// TestKVChain is the ST chain: T decode steps of kv_update followed by
// decode_attention, on both layouts and both cache dtypes. Every step
// must pass all of each op's own checks, and the attention output must
// equal attention over the fully recomputed K and V (the initial cache
// plus the float64 projections of every step's x) within the decode
// bound plus the effect of the stored rows' a-priori deviation δ from
// their exact projection: scores move by Δ_j = σ·Σ_i|q_i|·δk_ji, the
// normalised weights by a factor within exp(±2Δ), Δ = max Δ_j, so the
// output moves by at most R·Σ p_j|v_j − o| + (1+R)·Σ p_j·δv_j,
// R = exp(2Δ) − 1.
func TestKVChain(t *testing.T) {
	skipUnlessEmulator(t)
	const steps = 3
	ctx := context.Background()
	b := emulator.New(npu.Ascend910B())
	for _, p := range []ops.Params{
		{"layout": ops.KVContiguous, "cache_dtype": ops.KVFP16},
		{"layout": ops.KVContiguous, "cache_dtype": ops.KVInt8},
		{"layout": ops.KVPaged, "cache_dtype": ops.KVFP16},
		{"layout": ops.KVPaged, "cache_dtype": ops.KVInt8},
	} {
		seed := uint64(len(p["layout"]) + 10*len(p["cache_dtype"]))
		subject := fmt.Sprintf("kv_update+decode_attention %s seed=%d", p, seed)
		kvp, _ := ops.KVUpdate.Validate(p)
		dap, _ := ops.DecodeAttention.Validate(p)
		dims := map[string]int{"b": 5, "s": 4, "h": 2, "d": 16, "l": 24, "bs": 4}
		in, err := ops.KVUpdate.Generate(kvp, ops.Gen{Dims: dims, Dist: ops.DistUniform, Seed: seed})
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		g, err := ops.KVGeomOf(ops.KVUpdate, kvp, in)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		// Sequences short enough to take every step.
		for s := range g.S {
			in["seq_lens"].I32()[s] = int32(min(int(in["seq_lens"].I32()[s]), g.L-steps))
		}
		exact := map[string]kvExact{}
		for _, kv := range []struct{ cache, scale string }{{"k_cache", "k_scale"}, {"v_cache", "v_scale"}} {
			e := kvExact{val: map[[4]int]float64{}, dev: map[[4]int]float64{}}
			for s := range g.S {
				n := int(in["seq_lens"].I32()[s])
				for h := range g.H {
					for pos, row := range ops.KVRows(g, in, kv.cache, kv.scale, s, n, h) {
						for i, v := range row {
							e.val[[4]int{s, pos, h, i}] = v
						}
					}
				}
			}
			exact[kv.cache] = e
		}
		hq := 2 * g.H
		for step := range steps {
			// kv_update on the current state.
			xg, err := ops.KVUpdate.Generate(kvp, ops.Gen{Dims: dims, Dist: ops.DistNormal, Seed: seed + uint64(step) + 1})
			if err != nil {
				t.Fatalf("%s step %d: %v", subject, step, err)
			}
			in["x"] = xg["x"]
			c := ops.Case{Name: fmt.Sprintf("chain-%d", step), Op: "kv_update", Params: kvp, Seed: seed}
			r, err := harness.RunPrepared(ctx, b, &harness.Prepared{Case: c, Op: ops.KVUpdate, Params: kvp, Inputs: in}, harness.Options{})
			if err != nil {
				t.Fatalf("%s step %d: %v", subject, step, err)
			}
			if !r.Pass() {
				t.Fatalf("%s step %d:\n%s", subject, step, r.Verify.Failure())
			}
			_, writes, _ := ops.KVUpdateWrites(kvp, in)
			for _, kv := range []struct{ w, newName, cache, scale string }{
				{"w_k", "new_k", "k_cache", "k_scale"}, {"w_v", "new_v", "v_cache", "v_scale"},
			} {
				v, _ := reference.Project(in["x"].Float64s(), in[kv.w].Float64s(), 5, g.H, g.D)
				ne, ce := r.Expected[kv.newName], r.Expected[kv.cache]
				for _, w := range writes {
					for h := range g.H {
						for i := range g.D {
							k := [4]int{w.Seq, w.Pos, h, i}
							src := (w.B*g.H+h)*g.D + i
							exact[kv.cache].val[k] = v[src]
							if !g.Int8 {
								exact[kv.cache].dev[k] = ne.Bound[src]
								continue
							}
							se := r.Expected[kv.scale]
							si := w.Row*g.H + h
							bq := ce.BoundAt((w.Row*g.H+h)*g.D + i)
							exact[kv.cache].dev[k] = bq*(se.RefAt(si)+se.BoundAt(si)) + 127*se.BoundAt(si)
						}
					}
				}
			}
			for _, name := range []string{"k_cache", "v_cache", "k_scale", "v_scale", "seq_lens"} {
				if o, ok := r.Outputs[name]; ok {
					in[name] = o
				}
			}
			// decode_attention on the updated cache.
			qg, _ := ops.DecodeAttention.Generate(dap, ops.Gen{Dims: map[string]int{"b": 5, "s": 4, "hq": hq, "h": g.H, "d": g.D, "l": 24, "bs": 4}, Dist: ops.DistNormal, Seed: seed + 100 + uint64(step)})
			din := map[string]*tensor.Tensor{"q": qg["q"]}
			for _, name := range []string{"k_cache", "v_cache", "k_scale", "v_scale", "block_tables", "seq_lens", "seq_ids"} {
				if v, ok := in[name]; ok {
					din[name] = v
				}
			}
			dc := ops.Case{Name: fmt.Sprintf("chain-%d", step), Op: "decode_attention", Params: dap, Seed: seed}
			dr, err := harness.RunPrepared(ctx, b, &harness.Prepared{Case: dc, Op: ops.DecodeAttention, Params: dap, Inputs: din}, harness.Options{})
			if err != nil {
				t.Fatalf("%s step %d: %v", subject, step, err)
			}
			if !dr.Pass() {
				t.Fatalf("%s step %d:\n%s", subject, step, dr.Verify.Failure())
			}
			checkRecomputed(t, subject, step, g, din, dr, exact, hq)
			// Ascend's fp16 attention standard, reported beside the bound.
			if ratio := ops.AscendAttentionRatio(dr.Outputs["out"], dr.Expected["out"]); ratio > 1 {
				t.Errorf("%s step %d: Ascend fp16 attention standard: got max |d|/(2^-8·max(1,|r|)) = %.3g, want ≤ 1", subject, step, ratio)
			} else {
				t.Logf("%s step %d: Ascend fp16 attention standard ratio %.3g (≤ 1 holds)", subject, step, ratio)
			}
		}
	}
}

// checkRecomputed compares the decode output with attention over the
// recomputed K and V (see TestKVChain).
func checkRecomputed(t *testing.T, subject string, step int, g ops.KVGeom, din map[string]*tensor.Tensor, dr *harness.Result, exact map[string]kvExact, hq int) {
	t.Helper()
	sigma := ops.DecodeScale(dr.Params, g.D)
	out, e := dr.Outputs["out"], dr.Expected["out"]
	lens, ids := din["seq_lens"].I32(), din["seq_ids"].I32()
	q := din["q"].Float64s()
	for bb, s := range ids {
		if s < 0 || lens[s] == 0 {
			continue
		}
		n := int(lens[s])
		for hh := range hq {
			h := hh / (hq / g.H)
			k, v := make([][]float64, n), make([][]float64, n)
			dk, dv := make([][]float64, n), make([][]float64, n)
			for pos := range n {
				k[pos], v[pos], dk[pos], dv[pos] = make([]float64, g.D), make([]float64, g.D), make([]float64, g.D), make([]float64, g.D)
				for i := range g.D {
					key := [4]int{int(s), pos, h, i}
					k[pos][i], dk[pos][i] = exact["k_cache"].val[key], exact["k_cache"].dev[key]
					v[pos][i], dv[pos][i] = exact["v_cache"].val[key], exact["v_cache"].dev[key]
				}
			}
			off := (bb*hq + hh) * g.D
			qr := q[off : off+g.D]
			o, _, pr, _ := reference.Attention(qr, k, v, sigma)
			delta := 0.0
			for pos := range n {
				d := 0.0
				for i := range g.D {
					d += math.Abs(qr[i]) * dk[pos][i]
				}
				delta = math.Max(delta, sigma*d)
			}
			rr := math.Expm1(2 * delta)
			for i := range g.D {
				var spread, dvs float64
				for pos := range n {
					spread += pr[pos] * math.Abs(v[pos][i]-o[i])
					dvs += pr[pos] * dv[pos][i]
				}
				bnd := e.Bound[off+i] + rr*spread + (1+rr)*dvs
				if got := out.Float64(off + i); !(math.Abs(got-o[i]) <= bnd) {
					t.Fatalf("%s step %d: out[%d,%d,%d] vs attention over recomputed K, V: got %g, want %g, bound %g", subject, step, bb, hh, i, got, o[i], bnd)
				}
			}
		}
	}
}

var _ = opdb.KVUpdate // the records register the ops the harness runs
