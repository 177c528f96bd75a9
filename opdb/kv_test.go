package opdb_test

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
)

// TestKVCasesPass runs the KV-cache ops' golden and mutation cases on the
// correct emulator: every check passes (no false alarm on the default
// kernel).
func TestKVCasesPass(t *testing.T) {
	b := emulator.New(npu.Ascend910B())
	for _, info := range []*opdb.Info{opdb.KVUpdate, opdb.DecodeAttention} {
		cases := info.GoldenCases()
		mc, err := info.MutationCases(npu.Ascend910B())
		if err != nil {
			t.Fatal(err)
		}
		if !testing.Short() {
			cases = append(cases, mc...)
		}
		for _, c := range cases {
			r, err := harness.Run(context.Background(), b, c, harness.Options{})
			if err != nil {
				t.Errorf("%s: %v", harness.Subject(c), err)
				continue
			}
			if !r.Pass() {
				t.Errorf("%s", r.Verify.Failure())
			}
		}
	}
}
