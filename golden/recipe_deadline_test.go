package golden

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/harness"
)

// TestStepDeadline is issue 33 item 7: a case's long steps besides the
// backend's run, regenerating a recipe's inputs and computing the
// reference, end at CheckOptions.StepTimeout (here 1 ns, long past before
// either step can finish: a 10^6-element regeneration and a 17×33×15 GEMM
// reference each take far more than the microsecond between starting
// them and waiting), as a case error that is not an input error and names
// the step and the limit. Before, both ran to completion whatever the
// deadline.
func TestStepDeadline(t *testing.T) {
	for _, tc := range []struct{ id, step string }{
		{"vector_add/fp16_uniform_n1000000", "regenerating the inputs from seed"},
		{"gemm/bf16_fp32acc_alphabeta_17x33x15", "computing the reference and judging the outputs"},
	} {
		opt := CheckOptions{Run: "^" + regexp.QuoteMeta(tc.id) + "$", StepTimeout: time.Nanosecond}
		rs, err := Check(context.Background(), Embedded(), renamed{newEmulator()}, opt)
		if err != nil || len(rs) != 1 {
			t.Fatalf("%s: StepTimeout %s: Check: %d outcomes, %v; want 1 and no error", tc.id, opt.StepTimeout, len(rs), err)
		}
		r := rs[0]
		switch {
		case r.Err == nil:
			t.Errorf("%s: StepTimeout %s: got verdict %s, want a deadline error naming %q", tc.id, opt.StepTimeout, r.Verdict(), tc.step)
		case harness.IsInput(r.Err) || !errors.Is(r.Err, context.DeadlineExceeded):
			t.Errorf("%s: StepTimeout %s: got error %v (input error %v), want a deadline error, not an input error", tc.id, opt.StepTimeout, r.Err, harness.IsInput(r.Err))
		case !strings.Contains(r.Err.Error(), tc.step) || !strings.Contains(r.Err.Error(), "timed out after 1ns"):
			t.Errorf("%s: StepTimeout %s: got error %q, want it to name %q and the limit", tc.id, opt.StepTimeout, r.Err, tc.step)
		}
	}
}
