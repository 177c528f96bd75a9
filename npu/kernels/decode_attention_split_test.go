package kernels

import (
	"context"
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Flash-decoding's split (issue 34): a long context's partitions are
// computed on several cores and combined after the barrier, in partition
// order, with the arithmetic one core uses; so the bits never depend on
// the plan. The figures asserted here are the cost model's, which is
// deterministic; the thresholds are the issue's.

// runDecode runs decode_attention on ascend910b under opt (zero: the
// default plan) and returns its output and cost.
func runDecode(t *testing.T, what string, p ops.Params, in map[string]*tensor.Tensor, opt DecodeAttentionOptions) (*tensor.Tensor, *npu.Cost) {
	t.Helper()
	ctx := context.Background()
	if opt != (DecodeAttentionOptions{}) {
		ctx = WithVariant(ctx, Variant{Name: "test", Op: "decode_attention", Options: opt})
	}
	out, cost, err := DecodeAttentionKernel(ctx, npu.MustNewDevice(npu.Ascend910B()), p, in)
	if err != nil {
		t.Fatalf("decode_attention %s %s options %+v: %v", p, what, opt, err)
	}
	return out["out"], cost
}

// TestDecodeAttentionSplitKeepsBits: shapes whose default plan splits
// contexts over cores (the generator's third sequence is full: one long
// context beside an empty and a short one, over a contiguous fp16 and a
// paged int8 GQA cache; a random mix) give the bits of the unsplit static
// schedule and of one core, and the default plan does split them.
func TestDecodeAttentionSplitKeepsBits(t *testing.T) {
	for _, c := range []struct {
		name   string
		params ops.Params
		dims   map[string]int
		seed   uint64
	}{
		{"contiguous fp16", ops.Params{}, map[string]int{"b": 3, "s": 3, "hq": 4, "h": 1, "d": 64, "l": 3000}, 11},
		{"random mix", ops.Params{}, map[string]int{"b": 9, "s": 9, "hq": 2, "h": 2, "d": 32, "l": 2000}, 12},
		{"paged int8 gqa", ops.Params{"layout": ops.KVPaged, "cache_dtype": ops.KVInt8}, map[string]int{"b": 3, "s": 3, "hq": 8, "h": 2, "d": 128, "l": 1200, "bs": 16}, 13},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := ops.DecodeAttention.Validate(c.params)
			if err != nil {
				t.Fatal(err)
			}
			in, err := ops.DecodeAttention.Generate(p, ops.Gen{Dims: c.dims, Dist: ops.DistNormal, Seed: c.seed})
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("dims=%v seed=%d", c.dims, c.seed)
			got, cost := runDecode(t, what, p, in, DecodeAttentionOptions{})
			for _, opt := range []DecodeAttentionOptions{{Schedule: ScheduleStatic}, {BlockDim: 1}} {
				want, _ := runDecode(t, what, p, in, opt)
				if same, at := sameBits(got, want); !same {
					t.Errorf("decode_attention %s %s: element %d: got %v / want %v (the bits under %+v)", p, what, at, got.Float64(at), want.Float64(at), opt)
				}
			}
			tl := decodeTilingOf(t, p, in)
			if len(tl.units) == 0 {
				t.Errorf("decode_attention %s %s: got no split item (cores %d) / want the default plan to split a long context", p, what, tl.BlockDim)
			}
			if cost.BlockDim < 2 {
				t.Errorf("decode_attention %s %s: got %d cores / want several", p, what, cost.BlockDim)
			}
		})
	}
}

// decodeTilingOf is the default tiling of in on ascend910b.
func decodeTilingOf(t *testing.T, p ops.Params, in map[string]*tensor.Tensor) DecodeAttentionTiling {
	t.Helper()
	g, err := ops.KVGeomOf(ops.DecodeAttention, p, in)
	if err != nil {
		t.Fatal(err)
	}
	prof := npu.Ascend910B()
	esz := 2
	if g.Int8 {
		esz = 1
	}
	hq := in["q"].Shape[1]
	part, heads, err := decodeLayout(prof, g.D, esz, hq/g.H)
	if err != nil {
		t.Fatal(err)
	}
	part = min(part, roundUp(max(g.L, 1), 16))
	var bt []int32
	if g.Paged {
		bt = in["block_tables"].I32()
	}
	var items []daItem
	for b, s := range in["seq_ids"].I32() {
		n := 0
		if s >= 0 {
			n = int(in["seq_lens"].I32()[s])
		}
		for _, hg := range (decodeAttentionFaults{}).headGroups(hq, g.H) {
			items = append(items, daItem{b: b, seq: int(s), kvh: hg.kvh, q0: hg.q0, nq: hg.nq, n: n, ws: -1})
		}
	}
	tl, err := newDecodeAttentionTiling(prof, g, decodeAttentionFaults{}, bt, part, heads, items, DecodeAttentionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// TestDecodeAttentionLongContextKeepsCoresBusy: B = 1, L = 32K (GQA 4:1,
// D = 128) keeps at least 20 of ascend910b's 24 AI cores busy, a core
// counting as busy when its pipes work (DMA or compute, not waiting at
// the barrier) for 90 % of the cores' makespan (the checklist's balance
// target; daMakespan: the launch itself is HBM-bound, its 16 MiB of K and
// V taking longer at the HBM bandwidth than any core's schedule), where
// one core per kv head ran it before.
func TestDecodeAttentionLongContextKeepsCoresBusy(t *testing.T) {
	const l, seed = 32 << 10, 14
	in := decodeInputs(seed, 4, 1, 128, l, []int{l})
	p, err := ops.DecodeAttention.Validate(ops.Params{})
	if err != nil {
		t.Fatal(err)
	}
	what := fmt.Sprintf("b=1 hq=4 hkv=1 d=128 l=%d seed=%d", l, seed)
	_, cost := runDecode(t, what, p, in, DecodeAttentionOptions{})
	busy := 0
	for _, c := range cost.Cores {
		if float64(c.DMABusyCycles+c.ComputeBusyCycles-c.OverlapCycles) >= 0.9*float64(daMakespan(cost)) {
			busy++
		}
	}
	_, static := runDecode(t, what, p, in, DecodeAttentionOptions{Schedule: ScheduleStatic})
	t.Logf("%s: %d cores, %d busy, busy balance %.3f (end balance %.3f), %d cycles (static: %d cores, %d cycles)", what, cost.BlockDim, busy, daBusyBalance(cost), cost.LoadBalance, cost.Cycles, static.BlockDim, static.Cycles)
	if busy < 20 || cost.Cycles >= static.Cycles {
		t.Errorf("decode_attention %s %s: got %d of %d cores busy, %d cycles / want ≥ 20 of 24 busy and fewer cycles than static's %d",
			p, what, busy, cost.BlockDim, cost.Cycles, static.Cycles)
	}
}

// TestDecodeAttentionPartialsCost: a split plan pays for its partials,
// whose GM writes and reads count beside the cache's; its cores meet at
// the barrier (the makespan is every core's end), and the busy balance
// (daBusyBalance) does not count the wait there as work.
func TestDecodeAttentionPartialsCost(t *testing.T) {
	const seed = 16
	in := decodeInputs(seed, 4, 1, 64, 4096, []int{4096})
	p, err := ops.DecodeAttention.Validate(ops.Params{})
	if err != nil {
		t.Fatal(err)
	}
	what := fmt.Sprintf("b=1 hq=4 hkv=1 d=64 l=4096 seed=%d", seed)
	_, split := runDecode(t, what, p, in, DecodeAttentionOptions{})
	_, whole := runDecode(t, what, p, in, DecodeAttentionOptions{Schedule: ScheduleStatic})
	if split.BlockDim < 2 || split.GMBytesOut <= whole.GMBytesOut || split.GMBytesIn <= whole.GMBytesIn {
		t.Errorf("decode_attention %s %s: got %d cores, GM in %d out %d / want several cores and more GM traffic both ways than one core's %d in, %d out (the partials)",
			p, what, split.BlockDim, split.GMBytesIn, split.GMBytesOut, whole.GMBytesIn, whole.GMBytesOut)
	}
	if b := daBusyBalance(split); b > split.LoadBalance || split.CoreCycles[0] != split.Cycles {
		t.Errorf("decode_attention %s %s: got busy balance %.3f, balance %.3f, core 0 ends at %d of %d cycles / want busy ≤ balance and every core ending at the makespan after the barrier",
			p, what, b, split.LoadBalance, split.CoreCycles[0], split.Cycles)
	}
}

// daBusyBalance is the load balance counting only the cycles a core's
// pipes work (the union of its DMA and compute spans) over the cores'
// makespan: after SyncAll every core ends at the same cycle, so the end
// of its schedule, which Cost.LoadBalance compares, counts the wait at
// the barrier as work. The makespan is the slowest core's schedule
// (daMakespan), not Cost.Cycles, which the launch's HBM traffic sets
// when it takes longer (npu.BoundHBM): the balance is of the cores'
// work among themselves.
func daBusyBalance(c *npu.Cost) float64 {
	span := daMakespan(c)
	if span == 0 || len(c.Cores) == 0 {
		return 1
	}
	least := c.Cores[0].DMABusyCycles + c.Cores[0].ComputeBusyCycles - c.Cores[0].OverlapCycles
	for _, cc := range c.Cores {
		least = min(least, cc.DMABusyCycles+cc.ComputeBusyCycles-cc.OverlapCycles)
	}
	return float64(least) / float64(span)
}

// daMakespan is the end of the slowest core's schedule.
func daMakespan(c *npu.Cost) int64 {
	var span int64
	for _, cc := range c.CoreCycles {
		span = max(span, cc)
	}
	return span
}
