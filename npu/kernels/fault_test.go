package kernels

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

func TestFaultCatalogue(t *testing.T) {
	cat := FaultCatalogue()
	if len(cat) < 15 {
		t.Errorf("catalogue has %d faults, want at least 15", len(cat))
	}
	seen := map[npu.Fault]bool{}
	for _, f := range cat {
		if seen[f.Fault] {
			t.Errorf("duplicate fault %s", f.Fault)
		}
		seen[f.Fault] = true
		if _, err := Lookup(f.Op); err != nil {
			t.Errorf("fault %s: op %q has no kernel: %v", f.Fault, f.Op, err)
		}
		if !strings.HasPrefix(string(f.Fault), f.Op+"/") || f.Models == "" {
			t.Errorf("fault %s: want a name %q/… and a description, got %+v", f.Fault, f.Op, f)
		}
	}
}

// vectorAddInputs returns x, y of n uniform values of dtype d.
func vectorAddInputs(t *testing.T, d tensor.DType, n int) map[string]*tensor.Tensor {
	t.Helper()
	op, err := ops.Lookup("vector_add")
	if err != nil {
		t.Fatal(err)
	}
	in, err := op.Generate(ops.Params{"dtype": d.String()}, ops.Gen{Dims: map[string]int{"n": n}, Dist: ops.DistUniform, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestVectorAddGuardError(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	in := vectorAddInputs(t, tensor.Float16, 257)
	ref, _, err := VectorAdd(context.Background(), dev, in["x"], in["y"], VectorAddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := npu.WithFaults(context.Background(), npu.NewFaults(FaultVAWritePastEnd))
	z, cost, err := VectorAdd(ctx, dev, in["x"], in["y"], VectorAddOptions{})
	var ge *npu.GuardError
	if !errors.As(err, &ge) || z == nil || cost == nil {
		t.Fatalf("write past the end: z %v, cost %v, err %v; want z, cost and a *npu.GuardError", z, cost, err)
	}
	if v := ge.Violations[0]; v.Output != "z" || v.After != 1 || v.Last != 257 || v.Before != 0 {
		t.Errorf("violation %+v, want one element of z past the end at index 257", v)
	}
	if ok, i := tensor.BitsEqual(ref, z); !ok {
		t.Errorf("z differs from the correct result at %d: the fault only writes past the end", i)
	}
	// Through the registry (the emulator's entry), z comes back with the error.
	run, _ := Lookup("vector_add")
	out, _, err := run(ctx, dev, ops.Params{"dtype": "fp16"}, in)
	if !errors.As(err, &ge) || out["z"] == nil {
		t.Errorf("registry entry: out %v, err %v; want z and a *npu.GuardError", out, err)
	}
}

func TestVariantReachesVectorAdd(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	in := vectorAddInputs(t, tensor.Float32, 1000)
	run, _ := Lookup("vector_add")
	_, def, err := run(context.Background(), dev, ops.Params{"dtype": "fp32"}, in)
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithVariant(context.Background(), Variant{Name: "v", VectorAdd: VectorAddOptions{BlockDim: 7, TileElems: 49}})
	_, cost, err := run(ctx, dev, ops.Params{"dtype": "fp32"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if def.BlockDim == 7 || cost.BlockDim != 7 {
		t.Errorf("BlockDim default %d, variant %d; want the variant's 7", def.BlockDim, cost.BlockDim)
	}
}
