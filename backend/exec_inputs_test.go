package backend_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/ckernel"
)

// A kernel that writes into its input files passes every output check
// (its outputs are right) and must still fail: the exec backend re-hashes
// each input file after the run and the harness fails inputs-unchanged,
// naming the tensor and what changed (docs/exec-backend.md).
func TestExecInputsReadOnly(t *testing.T) {
	ck := ckernel.Build(t)
	for _, c := range []struct {
		script, input, want string
	}{
		{"clobber_input.sh", "x", "first difference at element 0: +Inf"},
		{"truncate_input.sh", "y", "no longer reads as fp16[17]"},
	} {
		b := newExec(t, kernel(t, c.script)+" "+quoteArg(ck), backend.ExecOptions{Timeout: 20 * time.Second})
		r, err := harness.Run(context.Background(), b, faultCase, harness.Options{})
		if err != nil {
			t.Fatalf("%s kernel %s: %v", harness.Subject(faultCase), c.script, err)
		}
		if r.Pass() {
			t.Errorf("%s kernel %s: passed, want inputs-unchanged failing for input %q", harness.Subject(faultCase), c.script, c.input)
			continue
		}
		msg := r.Verify.Failure()
		if !strings.Contains(msg, harness.CheckInputsUnchanged) || !strings.Contains(msg, `input "`+c.input+`"`) || !strings.Contains(msg, c.want) {
			t.Errorf("%s kernel %s: failure\n%s\nwant %s naming input %q and %q", harness.Subject(faultCase), c.script, msg, harness.CheckInputsUnchanged, c.input, c.want)
		}
	}
	// The kernel alone passes: the check fires on the writes, not on the run.
	if r := runCase(t, newExec(t, quoteArg(ck), backend.ExecOptions{Timeout: 20 * time.Second}), faultCase); !r.Pass() {
		t.Errorf("%s: the C kernel alone fails: %s", harness.Subject(faultCase), r.Verify.Failure())
	}
}
