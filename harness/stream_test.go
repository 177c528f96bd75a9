package harness_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/verify"
)

// TestStreamedRunMatchesWhole runs every gemm golden case on the emulator,
// and on the emulator with each fault of gemm's catalogue, twice: with
// Options.Stream (the Expected a block at a time) and without; the
// verify Results must be the same (metrics, verdicts, failing elements),
// and only the streamed run leaves Result.Expected nil. A policy that
// reads more than the metrics, or golden outputs, turn streaming off.
func TestStreamedRunMatchesWhole(t *testing.T) {
	info, err := opdb.Lookup("gemm")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	backends := []*emulator.Emulator{emulator.New(npu.Ascend910B())}
	for _, f := range info.Faults {
		backends = append(backends, emulator.New(npu.Ascend910B(), emulator.WithFaults(f.Fault)))
	}
	// The golden cases are small, one block each; the generated one has
	// two blocks, the second shorter, and every block shares sum chunks.
	cases := append(info.GoldenCases(), ops.NewCase("gemm", "two_blocks", ops.Params{"mode": "fp16_fp32acc", "beta": "0.5"},
		map[string]int{"m": 300, "k": 40, "n": 501}, ops.DistNormal))
	failed := 0
	for _, c := range cases {
		if c.Recipe {
			continue
		}
		pc, err := harness.Prepare(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range backends {
			whole, err := harness.RunPrepared(ctx, b, pc, harness.Options{})
			streamed, serr := harness.RunPrepared(ctx, b, pc, harness.Options{Stream: true})
			if err != nil || serr != nil { // a fault that stops the kernel
				if err == nil || serr == nil || err.Error() != serr.Error() {
					t.Fatalf("%s: faults %v: error %v, streamed %v: want the same", harness.Subject(c), b.Faults(), err, serr)
				}
				continue
			}
			if g, w := fmt.Sprintf("%+v", *streamed.Verify), fmt.Sprintf("%+v", *whole.Verify); g != w {
				t.Fatalf("%s: faults %v: streamed Result %s / want (whole) %s", harness.Subject(c), b.Faults(), g, w)
			}
			if streamed.Expected != nil || whole.Expected == nil {
				t.Fatalf("%s: Expected streamed %v, whole %v: want nil and set", harness.Subject(c), streamed.Expected != nil, whole.Expected != nil)
			}
			if !whole.Pass() {
				failed++
			}
		}
	}
	if failed == 0 {
		t.Errorf("gemm: no run failed: the comparison covered passing verdicts alone")
	}

	pc, err := harness.Prepare(info.GoldenCases()[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []harness.Options{
		{Stream: true, Policies: []verify.Policy{verify.MustParsePolicy("ascend-mere")}},
		{Stream: true, Golden: pc.Inputs},
	} {
		res, err := harness.RunPrepared(ctx, backends[0], pc, opt)
		if err != nil {
			t.Fatal(err)
		}
		if res.Expected == nil {
			t.Errorf("%s: Stream with policies %v, golden %v: streamed, want the whole Expected", harness.Subject(pc.Case), opt.Policies, opt.Golden != nil)
		}
	}
}
