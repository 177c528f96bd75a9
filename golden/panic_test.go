package golden

import (
	"context"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/internal/panicguard"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// panicky is a backend whose Run panics: a bug below the CLI.
type panicky struct{}

func (panicky) Name() string { return "panicky" }
func (panicky) Run(context.Context, string, ops.Params, map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	panic("backend exploded")
}

// TestCheckRaisesAWorkersPanicOnTheCaller (issue 33, the panic guard): a
// panic in a case, which runs on one of Check's worker goroutines, killed
// the process with every goroutine's stack on the terminal, out of reach
// of the CLI's recover. Check now raises it again on its caller's
// goroutine as a *panicguard.Panic carrying the worker's stack, after
// every worker has stopped (and without a hang, whatever --jobs).
func TestCheckRaisesAWorkersPanicOnTheCaller(t *testing.T) {
	for _, jobs := range []int{1, 3} {
		got := func() (r any) {
			defer func() { r = recover() }()
			Check(context.Background(), Embedded(), panicky{}, CheckOptions{Op: "vector_add", Jobs: jobs, NoBudgets: true})
			return nil
		}()
		p, ok := got.(*panicguard.Panic)
		if !ok || p.Value != "backend exploded" || !strings.Contains(string(p.Stack), "golden.panicky.Run") {
			t.Errorf("Check op=vector_add jobs=%d on a backend that panics: got %#v, want a *panicguard.Panic of %q with the worker's stack (through panicky.Run)", jobs, got, "backend exploded")
		}
	}
}
