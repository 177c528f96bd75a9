package kernels

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// syncFaultRun runs kernel under fault (empty: the correct kernel) and
// returns its output and cost.
type syncFaultRun func(ctx context.Context) (*tensor.Tensor, *npu.Cost, error)

// within runs f, failing the test if it does not return within a minute:
// a skipped barrier must be a finding, never a hang.
func within(t *testing.T, ctx context.Context, what string, f syncFaultRun) (*tensor.Tensor, *npu.Cost, error) {
	t.Helper()
	type res struct {
		out  *tensor.Tensor
		cost *npu.Cost
		err  error
	}
	done := make(chan res, 1)
	go func() {
		out, cost, err := f(ctx)
		done <- res{out, cost, err}
	}()
	select {
	case r := <-done:
		return r.out, r.cost, r.err
	case <-time.After(time.Minute):
		t.Fatalf("%s: the launch hangs (a deadlock must be a finding)", what)
	}
	return nil, nil, nil
}

// checkSyncFault holds one synchronisation fault to what makes it one:
// the correct kernel raises no finding, the faulty one computes its very
// bits (twice: deterministic) and raises a finding of kind, whose message
// contains each of names.
func checkSyncFault(t *testing.T, what string, run syncFaultRun, fault npu.Fault, kind string, names ...string) {
	t.Helper()
	want, clean, err := run(context.Background())
	if err != nil {
		t.Fatalf("%s: correct kernel: %v", what, err)
	}
	if len(clean.Findings) != 0 {
		t.Errorf("%s: correct kernel: got findings %v want none", what, clean.Findings)
	}
	ctx := npu.WithFaults(context.Background(), npu.NewFaults(fault))
	var first []npu.Finding
	for i := range 2 {
		got, cost, err := within(t, ctx, fmt.Sprintf("%s fault %s", what, fault), run)
		if err != nil {
			t.Fatalf("%s fault %s: %v", what, fault, err)
		}
		if same, at := sameBits(got, want); !same {
			t.Errorf("%s fault %s: element %d: got %v want %v (the correct kernel's bits)", what, fault, at, got.Float64(at), want.Float64(at))
		}
		if i == 0 {
			first = cost.Findings
			continue
		}
		if fmt.Sprint(cost.Findings) != fmt.Sprint(first) {
			t.Errorf("%s fault %s: findings differ between two runs: got %v want %v", what, fault, cost.Findings, first)
		}
	}
	for _, f := range first {
		t.Logf("%s: %s", fault, f.Message)
		if f.Kind != kind {
			continue
		}
		for _, n := range names {
			if !strings.Contains(f.Message, n) {
				t.Errorf("%s fault %s: finding %q does not name %q", what, fault, f.Message, n)
			}
		}
		return
	}
	t.Errorf("%s fault %s: got findings %v want a %s", what, fault, first, kind)
}

// TestCrossCoreSyncFaults: decode_attention's combine without SyncAll is
// an xcore-race (a combining core reads another core's partition record
// with nothing ordering the two), a core that skips the barrier a
// deadlock naming it, and gemm's accumulator never initialised an uninit
// read of L0C by the accumulating Mmad; each with the correct kernel's
// bits, deterministically, and the correct kernels clean.
func TestCrossCoreSyncFaults(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	p, err := ops.DecodeAttention.Validate(ops.Params{})
	if err != nil {
		t.Fatal(err)
	}
	dims := map[string]int{"b": 3, "s": 3, "hq": 4, "h": 1, "d": 64, "l": 3000}
	const seed = 11
	in, err := ops.DecodeAttention.Generate(p, ops.Gen{Dims: dims, Dist: ops.DistNormal, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	tl := decodeTilingOf(t, p, in)
	idle := -1
	for i, u := range tl.combine {
		if len(u) == 0 && idle < 0 {
			idle = i
		}
	}
	if len(tl.units) == 0 || idle < 0 {
		t.Fatalf("decode_attention %s dims=%v seed=%d: got %d combine units, first core without one %d: want a split plan with an idle combiner", p, dims, seed, len(tl.units), idle)
	}
	decode := func(ctx context.Context) (*tensor.Tensor, *npu.Cost, error) {
		out, cost, err := DecodeAttentionKernel(ctx, dev, p, in)
		if err != nil {
			return nil, nil, err
		}
		return out["out"], cost, nil
	}
	what := fmt.Sprintf("decode_attention %s dims=%v seed=%d", p, dims, seed)
	checkSyncFault(t, what, decode, FaultDecodeAttentionCombineWithoutSyncAll, npu.KindXCoreRace, "DataCopy2DIn", "reads bytes", "writes")
	checkSyncFault(t, what, decode, FaultDecodeAttentionCoreSkipsSyncAll, npu.KindDeadlock, fmt.Sprintf("core %d ended without reaching SyncAll #1", idle))

	for _, dims := range []map[string]int{{"m": 40, "k": 300, "n": 24}, {"m": 300, "k": 64, "n": 600}} {
		gemm, what := gemmSyncRun(t, dev, dims, seed)
		checkSyncFault(t, what, gemm, FaultGEMMAccumulatorNotInitialised, npu.KindUninit, "pipe M", "M Mmad#1", "L0C buffer")
	}
}

// gemmSyncRun is the syncFaultRun of fp16_fp32acc gemm at dims on
// seeded uniform inputs, and the subject its failures name.
func gemmSyncRun(t *testing.T, dev *npu.Device, dims map[string]int, seed uint64) (syncFaultRun, string) {
	t.Helper()
	gp, err := ops.GEMM.Validate(ops.Params{"mode": "fp16_fp32acc"})
	if err != nil {
		t.Fatal(err)
	}
	gin, err := ops.GEMM.Generate(gp, ops.Gen{Dims: dims, Dist: ops.DistUniform, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context) (*tensor.Tensor, *npu.Cost, error) {
		out, cost, err := GEMMKernel(ctx, dev, gp, gin)
		if err != nil {
			return nil, nil, err
		}
		return out["out"], cost, nil
	}
	return run, fmt.Sprintf("gemm %s dims=%v seed=%d", gp, dims, seed)
}
