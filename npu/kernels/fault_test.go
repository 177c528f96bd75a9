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
	cat := append(append([]FaultInfo{}, VectorAddFaults...), GEMMFaults...)
	if len(cat) < 23 {
		t.Errorf("catalogue has %d faults, want at least 23", len(cat))
	}
	seen := map[npu.Fault]bool{}
	for _, f := range cat {
		if seen[f.Fault] {
			t.Errorf("duplicate fault %s", f.Fault)
		}
		seen[f.Fault] = true
		if !strings.HasPrefix(string(f.Fault), f.Op+"/") || f.Models == "" {
			t.Errorf("fault %s: want a name %q/… and a description, got %+v", f.Fault, f.Op, f)
		}
	}
}

// TestFaultPlansCoverCatalogue: each catalogue fault switches on its own
// part of its op's per-launch fault plan, and no fault leaves the plan at
// the correct kernel's zero value, so a fault added to the catalogue but
// never wired to a hook (or wired to another fault's) fails here.
func TestFaultPlansCoverCatalogue(t *testing.T) {
	plans := map[string]func(npu.Faults) any{
		"vector_add":       func(f npu.Faults) any { return newVectorAddFaults(f) },
		"gemm":             func(f npu.Faults) any { return newGEMMFaults(f) },
		"gemm24":           func(f npu.Faults) any { return newGEMM24Faults(f) },
		"sparse24_prune":   func(f npu.Faults) any { return newSparse24PruneFaults(f) },
		"sparse_compress":  func(f npu.Faults) any { return newSparseCompressFaults(f) },
		"kv_update":        func(f npu.Faults) any { return newKVUpdateFaults(f) },
		"decode_attention": func(f npu.Faults) any { return newDecodeAttentionFaults(f) },
	}
	if newVectorAddFaults(npu.Faults{}) != (vectorAddFaults{}) || newGEMMFaults(npu.Faults{}) != (gemmFaults{}) ||
		newGEMM24Faults(npu.Faults{}) != (gemm24Faults{}) || newSparse24PruneFaults(npu.Faults{}) != (sparse24PruneFaults{}) ||
		newSparseCompressFaults(npu.Faults{}) != (sparseCompressFaults{}) || newKVUpdateFaults(npu.Faults{}) != (kvUpdateFaults{}) ||
		newDecodeAttentionFaults(npu.Faults{}) != (decodeAttentionFaults{}) {
		t.Error("the plan of no fault is not the zero plan (the correct kernel)")
	}
	var cat []FaultInfo
	for _, c := range [][]FaultInfo{VectorAddFaults, GEMMFaults, GEMM24Faults, Sparse24PruneFaults, SparseCompressFaults, KVUpdateFaults, DecodeAttentionFaults} {
		cat = append(cat, c...)
	}
	seen := map[any]npu.Fault{}
	for _, f := range cat {
		plan, ok := plans[f.Op]
		if !ok {
			t.Errorf("fault %s: op %q has no fault plan", f.Fault, f.Op)
			continue
		}
		got := plan(npu.NewFaults(f.Fault))
		if got == plan(npu.Faults{}) {
			t.Errorf("fault %s: plan %+v / want a hook switched on (the plan of no fault)", f.Fault, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("fault %s: plan %+v / want it distinct from the plan of %s", f.Fault, got, other)
		}
		seen[got] = f.Fault
	}
}

// vectorAddInputs returns x, y of n uniform values of dtype d.
func vectorAddInputs(t *testing.T, d tensor.DType, n int) map[string]*tensor.Tensor {
	t.Helper()
	op := ops.VectorAdd
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
	ctx := npu.WithFaults(context.Background(), npu.NewFaults(FaultVectorAddWritePastEnd))
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
	run := VectorAddKernel
	out, _, err := run(ctx, dev, ops.Params{"dtype": "fp16"}, in)
	if !errors.As(err, &ge) || out["z"] == nil {
		t.Errorf("registry entry: out %v, err %v; want z and a *npu.GuardError", out, err)
	}
}

func TestVariantReachesVectorAdd(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	in := vectorAddInputs(t, tensor.Float32, 1000)
	run := VectorAddKernel
	_, def, err := run(context.Background(), dev, ops.Params{"dtype": "fp32"}, in)
	if err != nil {
		t.Fatal(err)
	}
	ctx := WithVariant(context.Background(), Variant{Name: "v", Op: "vector_add", Options: VectorAddOptions{BlockDim: 7, TileElems: 49}})
	_, cost, err := run(ctx, dev, ops.Params{"dtype": "fp32"}, in)
	if err != nil {
		t.Fatal(err)
	}
	if def.BlockDim == 7 || cost.BlockDim != 7 {
		t.Errorf("BlockDim default %d, variant %d; want the variant's 7", def.BlockDim, cost.BlockDim)
	}
}

func TestGEMMGuardError(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	_, cfg, in := genGEMM(t, ops.Params{"mode": "fp16_fp32acc"}, ops.DistUniform, 17, 33, 15, 1)
	ref, _, err := GEMM(context.Background(), dev, cfg, in, GEMMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := npu.WithFaults(context.Background(), npu.NewFaults(FaultGEMMPaddingRowsStored))
	out, cost, err := GEMM(ctx, dev, cfg, in, GEMMOptions{})
	var ge *npu.GuardError
	if !errors.As(err, &ge) || out == nil || cost == nil {
		t.Fatalf("padding rows stored: out %v, cost %v, err %v; want out, cost and a *npu.GuardError", out, cost, err)
	}
	// 17 rows pad to 32: 15 padding rows of 15 columns land past the end.
	if v := ge.Violations[0]; v.Output != "out" || v.After != 15*15 || v.Before != 0 {
		t.Errorf("violation %+v, want 225 elements of out past the end", v)
	}
	if ok, i := sameBits(ref, out); !ok {
		t.Errorf("out differs from the correct result at %d: the fault only stores past the end", i)
	}
}

// ReverseK sums in another order: the same result within the bound, and
// (for fp32 accumulation over many slices) not always the same bits.
func TestGEMMReverseKIsValid(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	op := ops.GEMM
	differ := false
	for _, mode := range []string{"fp32", "fp16_fp32acc", "fp16", "bf16_fp32acc", "int8_int32acc"} {
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			vp, cfg, in := genGEMM(t, ops.Params{"mode": mode, "accumulate": acc, "alpha": "-1.5", "beta": "0.25"}, ops.DistUniform, 9, 300, 20, 7)
			ref, _, err := GEMM(context.Background(), dev, cfg, in, GEMMOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := GEMM(context.Background(), dev, cfg, in, GEMMOptions{BaseK: 32, ReverseK: true})
			if err != nil {
				t.Fatalf("%s %s: %v", mode, acc, err)
			}
			exp, err := op.Expect(vp, in, tensor.Numerics{})
			if err != nil {
				t.Fatal(err)
			}
			e := exp["out"]
			for i := 0; i < got.Len(); i++ {
				if !e.Accepts(i, got.Float64(i)) {
					t.Fatalf("%s %s: element %d = %g, ref %g, bound %g", mode, acc, i, got.Float64(i), e.Ref[i], e.Bound[i])
				}
			}
			if ok, _ := sameBits(ref, got); !ok {
				differ = true
			}
		}
	}
	if !differ {
		t.Error("ReverseK gave the default's bits in every mode: it does not change the summation order")
	}
}

func TestReadAsTransposed(t *testing.T) {
	b := tensor.MustNew(tensor.Float32, 2, 3) // flat 0..5
	for i := range 6 {
		b.SetFloat64(i, float64(i), tensor.Numerics{})
	}
	got := readAsTransposed(b)
	// (k, n) from flat n·K + k with K = 2: rows [0 2 4] and [1 3 5].
	want := []float64{0, 2, 4, 1, 3, 5}
	for i, w := range want {
		if got.Float64(i) != w || !got.SameShape([]int{2, 3}) {
			t.Fatalf("readAsTransposed = %v %v, want %v", got.Shape, got.Float64s(), want)
		}
	}
}
