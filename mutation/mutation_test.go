package mutation

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
)

// TestMutationScore runs the whole default suite (every embedded golden
// case, vector_add and gemm, and the generated multi-tile vector_add
// cases) against every fault of the catalogue and, for false alarms,
// against the correct emulator and every op's valid variants. It asserts a
// perfect score in the bound column (the checks any backend is judged
// by), and zero false alarms. Nothing is subsetted: each fault's run stops
// at its first bound catch (the golden cases catch most faults within the
// first few), and only the false-alarm runs need every case (of their op), so the
// test takes a few seconds. `make mutation` runs every case for every
// fault and prints the table with per-fault case counts.
func TestMutationScore(t *testing.T) {
	suite, err := DefaultSuite(npu.Ascend910B())
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Cases: suite})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
	if res.Golden < 100 || res.Generated == 0 {
		t.Errorf("suite has %d golden and %d generated cases, want the whole embedded set and the generated ones", res.Golden, res.Generated)
	}
	if len(res.Faults) < 15 {
		t.Errorf("%d faults scored, want at least 15", len(res.Faults))
	}
	for _, f := range res.Faults {
		if f.Bound == nil {
			t.Errorf("fault %s SURVIVED the bound checks (%s)", f.Fault, f.Models)
		}
		if f.Exact == nil {
			t.Errorf("fault %s SURVIVED even the exact comparison", f.Fault)
		}
		for _, e := range f.Errors {
			t.Errorf("fault %s: case could not run: %s", f.Fault, e)
		}
	}
	// The faults that leave z right are caught by the checks that exist
	// for them: the guard bands, the inputs-unchanged check and the
	// sanitizer (synchronisation faults, bit-identical in program order)
	// are part of the default checks.
	sanitizer := backend.CheckSanitizer + "(kernel)"
	wantCheck := map[npu.Fault]string{
		kernels.FaultVectorAddWritePastEnd:              harness.CheckGuardBand + "(z)",
		kernels.FaultVectorAddInputModified:             harness.CheckInputsUnchanged + "(x)",
		kernels.FaultGEMMPaddingRowsStored:              harness.CheckGuardBand + "(out)",
		kernels.FaultVectorAddMissingWait:               sanitizer,
		kernels.FaultVectorAddPingPongReuse:             sanitizer,
		kernels.FaultVectorAddWholeTileAdd:              sanitizer,
		kernels.FaultKVUpdateMissingWait:                sanitizer,
		kernels.FaultTransDataMissingStoreWait:          sanitizer,
		kernels.FaultSparseCompressMissingScalarWait:    sanitizer,
		kernels.FaultKVUpdateFlagOverwrittenBeforeStore: sanitizer,

		kernels.FaultDecodeAttentionCombineWithoutSyncAll: sanitizer,
		kernels.FaultDecodeAttentionCoreSkipsSyncAll:      sanitizer,
		kernels.FaultGEMMAccumulatorNotInitialised:        sanitizer,
		kernels.FaultGEMMMissingWait:                      sanitizer,
	}
	for _, f := range res.Faults {
		if want, ok := wantCheck[f.Fault]; ok && (f.Bound == nil || !slices.Contains(f.Bound.Checks, want)) {
			t.Errorf("fault %s caught by %s, want %s", f.Fault, f.Bound, want)
		}
	}
	if len(res.Alarms) != 1+len(opdb.Variants()) {
		t.Errorf("%d false-alarm runs, want the correct emulator and %d variants", len(res.Alarms), len(opdb.Variants()))
	}
	// The correct emulator runs every case; a variant, every case of its op.
	want := map[string]int{correctName: res.Golden + res.Generated}
	for _, v := range opdb.Variants() {
		want[v.Op+"/"+v.Name] = len(casesOf(suite, v.Op))
	}
	for _, a := range res.Alarms {
		if a.FalseAlarms() != 0 {
			t.Errorf("%s: %d false alarms: %v %v", a.Backend, a.FalseAlarms(), a.Alarms, a.Errors)
		}
		if a.Ran != want[a.Backend] || a.Ran == 0 {
			t.Errorf("%s: ran %d cases, want %d", a.Backend, a.Ran, want[a.Backend])
		}
	}
}

// The guard band is a check of its own: a kernel that computes z right
// but writes one element past it passes the bound policy and fails
// guard-band, as a verification failure (not a backend error).
func TestGuardBandIsADefaultCheck(t *testing.T) {
	c := ops.Case{Op: "vector_add", Params: ops.Params{"dtype": "bf16"}, Dims: map[string]int{"n": 33}, Dist: ops.DistUniform, Seed: 3}
	for _, tc := range []struct {
		fault npu.Fault
		want  string // failing check(name)
	}{
		{kernels.FaultVectorAddWritePastEnd, harness.CheckGuardBand + "(z)"},
		{kernels.FaultVectorAddInputModified, harness.CheckInputsUnchanged + "(x)"},
	} {
		b := emulator.New(npu.Ascend910B(), emulator.WithFaults(tc.fault))
		res, err := harness.Run(context.Background(), b, c, harness.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.fault, err)
		}
		var failed []string
		for _, o := range res.Verify.Outputs {
			for _, v := range o.Verdicts {
				if !v.Pass {
					failed = append(failed, v.Policy+"("+o.Name+")")
				}
			}
		}
		if res.Pass() || !slices.Equal(failed, []string{tc.want}) {
			t.Errorf("%s: pass %v, failed checks %v; want exactly %s\n%s", tc.fault, res.Pass(), failed, tc.want, res.Verify.Failure())
		}
		if !strings.Contains(res.Verify.Failure(), harness.Subject(c).String()) {
			t.Errorf("%s: failure report does not name the case: %s", tc.fault, res.Verify.Failure())
		}
	}
}

// A fault is injected only into the backend that carries it: the
// numerics override (saturate cases) keeps the fault, and a correct
// emulator on the same profile stays correct.
func TestFaultsStayWithTheirBackend(t *testing.T) {
	prof := npu.Ascend910B()
	faulty := emulator.New(prof, emulator.WithFaults(kernels.FaultVectorAddInfNotSaturated))
	cases, err := DefaultSuite(prof)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cases, func(c *SuiteCase) bool { return c.ID == "vector_add/fp16_large_n257_sat" })
	if i < 0 {
		t.Fatal("golden case vector_add/fp16_large_n257_sat not found")
	}
	if v := RunCase(context.Background(), faulty, cases[i], true); !v.CaughtBound() {
		t.Errorf("inf-not-saturated not caught on a saturate case: the fault was lost by WithNumerics")
	}
	if v := RunCase(context.Background(), emulator.New(prof), cases[i], true); v.Caught() || v.Err != nil {
		t.Errorf("correct emulator fails %s: %v %s %v", cases[i].ID, v.Checks, v.Detail, v.Err)
	}
}

// The int8 scale swap is a DMA range error where M ≠ N (the emulator
// bounds-checks what a device would read as garbage); where M = N it is a
// wrong value that the bound catches.
func TestScalesSwappedIsAValueFault(t *testing.T) {
	cases, err := GoldenCases(golden.Embedded().WithRecorder(emulator.Recorder()))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cases, func(c *SuiteCase) bool { return c.ID == "gemm/int8_int32acc_longk_16x512x16" })
	if i < 0 {
		t.Skip("golden case gemm/int8_int32acc_longk_16x512x16 not in the store")
	}
	b := emulator.New(npu.Ascend910B(), emulator.WithFaults(kernels.FaultGEMMScalesSwapped))
	if v := RunCase(context.Background(), b, cases[i], false); !slices.Equal(v.Checks, []string{"bound(out)"}) {
		t.Errorf("int8-scales-swapped on a square case: failed checks %v (%s), want bound(out)", v.Checks, v.Detail)
	}
}
