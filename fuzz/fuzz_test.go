package fuzz_test

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
)

// fuzzOp is the one fuzz body every op's target runs: the op's seeds, its
// decoder, and the emulator judged by the harness under the default
// policy, so a fuzz input is held to exactly what a golden case is.
func fuzzOp(f *testing.F, name string) {
	info, err := opdb.Lookup(name)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range info.FuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, ok := info.FuzzDecode(data)
		if !ok {
			return
		}
		num := in.Numerics
		c := ops.Case{Name: "fuzz", Op: name, Params: in.Params, Numerics: &num}
		if err := ops.CheckInputs(info.Op, in.Params, in.Inputs); err != nil {
			t.Fatalf("%s: fuzz inputs break the contract: %v", c.Subject(), err)
		}
		var opts []backend.Option
		if in.Variant != nil {
			opts = append(opts, backend.WithVariant(*in.Variant))
		}
		b := backend.NewEmulator(npu.Ascend910B(), opts...)
		pc := &harness.Prepared{Case: c, Op: info.Op, Params: in.Params, Inputs: in.Inputs}
		r, err := harness.RunPrepared(context.Background(), b, pc, harness.Options{})
		if err != nil {
			t.Fatalf("%s numerics=%s variant=%v: %v", c.Subject(), num, in.Variant, err)
		}
		if !r.Pass() {
			t.Fatalf("numerics=%s variant=%v\n%s", num, in.Variant, r.Verify.Failure())
		}
	})
}
