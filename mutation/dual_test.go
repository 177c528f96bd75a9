package mutation

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
)

// TestDualCasesAcceptValid: the stored cases judged by ascend-dual (the
// gemm deepk recipes, opdb.GEMMDualPolicy) pass on every valid variant of
// their op, held to the case's policy only (a variant may round in
// another order, so no exact check): the dual benchmark raises no false
// alarm where the default check applies it. The C kernel, the other valid
// kernel, is held to the whole store by the exec backend's tests. The
// test fails if no stored case uses the policy.
func TestDualCasesAcceptValid(t *testing.T) {
	s := golden.Embedded().WithRecorder(emulator.Recorder())
	ops := map[string]bool{}
	for _, c := range s.Cases() {
		if c.Err == nil && c.File.Policy == dualPolicy {
			ops[c.File.Op] = true
		}
	}
	if len(ops) == 0 {
		t.Fatalf("no stored case is judged by %s", dualPolicy)
	}
	prof := npu.Ascend910B()
	variants := append([]kernels.Variant{{Name: "default", Op: "gemm"}}, opdb.Variants()...)
	for _, v := range variants {
		if !ops[v.Op] {
			continue
		}
		b := emulator.New(prof, emulator.WithVariant(v))
		res, err := golden.Check(context.Background(), s, b, golden.CheckOptions{Op: v.Op, Run: "deepk", Exact: golden.ExactNever, NoBudgets: true, Jobs: 2})
		if err != nil {
			t.Fatalf("variant %s: %v", v, err)
		}
		n := 0
		for i := range res {
			r := &res[i]
			if len(r.Policies) == 0 || r.Policies[0] != dualPolicy {
				continue
			}
			n++
			if !r.Pass() {
				t.Errorf("variant %s: %s", v, r.Failure())
			}
		}
		if n == 0 {
			t.Errorf("variant %s: no %s case of %s ran", v, dualPolicy, v.Op)
		}
		t.Logf("variant %s: %d %s cases pass", v, n, dualPolicy)
	}
}
