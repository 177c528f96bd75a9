package backendtest

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// unknownOp is an op name no contract has.
const unknownOp = "backendtest_no_such_op"

// checkRobustness holds b to what any Backend must do with a call it
// cannot serve: an op it has no kernel for and a context cancelled before
// the call each give an error, no outputs and no panic, so that a caller
// running many cases (npuverify check, a test) reports the case and goes
// on. Inputs that come back changed fail every golden case and property
// run already (the harness compares them after each run).
func checkRobustness(ctx context.Context, t reporter, b backend.Backend, names []string, g goldenRun) {
	t.Run("unknown-op", func(t reporter) {
		out, err := guardedRun(ctx, b, unknownOp, ops.Params{}, map[string]*tensor.Tensor{})
		if !cleanError(out, err) {
			t.Errorf("%s: Run of an op no contract names: got %s, want an error and no outputs",
				harness.Subject(ops.Case{Op: unknownOp}), describe(out, err))
		}
	})
	t.Run("cancelled", func(t reporter) {
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		for _, op := range names {
			t.Run(op, func(t reporter) {
				r := smallestCase(g, op)
				if r == nil {
					t.Skipf("no golden case of %s with outputs to compute ran: no inputs to run with", op)
					return
				}
				in := make(map[string]*tensor.Tensor, len(r.Inputs))
				for name, x := range r.Inputs {
					in[name] = x.Clone()
				}
				out, err := guardedRun(cancelled, b, op, r.Params, in)
				if !cleanError(out, err) {
					t.Errorf("%s: Run with a context cancelled before the call: got %s, want an error and no outputs",
						harness.Subject(r.Case), describe(out, err))
				}
			})
		}
	})
}

// smallestCase is the result of the golden case of op with the fewest
// input elements among those with no empty output (a backend may return
// empty outputs without looking at its context: there is nothing to
// cancel) that ran under the backend's own numerics (a case that
// overrides them needs a backend that can set them); nil when none did.
func smallestCase(g goldenRun, op string) *harness.Result {
	var best *harness.Result
	size := 0
	for i := range g.outcomes {
		o := &g.outcomes[i]
		if opOf(o.ID) != op || o.Result == nil || o.Result.Case.Numerics != nil || hasEmpty(o.Result.Outputs) {
			continue
		}
		n := 0
		for _, x := range o.Result.Inputs {
			n += x.Len()
		}
		if best == nil || n < size {
			best, size = o.Result, n
		}
	}
	return best
}

// hasEmpty reports whether a tensor of ts has no elements.
func hasEmpty(ts map[string]*tensor.Tensor) bool {
	for _, t := range ts {
		if t.Len() == 0 {
			return true
		}
	}
	return false
}

// guardedRun calls b.Run, turning a panic into an error that says so.
func guardedRun(ctx context.Context, b backend.Backend, op string, p ops.Params, in map[string]*tensor.Tensor) (out map[string]*tensor.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, panicked{r}
		}
	}()
	out, _, err = b.Run(ctx, op, p, in)
	return out, err
}

// cleanError reports whether a Run returned what a call it cannot serve
// must: an error, no outputs, and no panic.
func cleanError(out map[string]*tensor.Tensor, err error) bool {
	_, isPanic := err.(panicked)
	return err != nil && len(out) == 0 && !isPanic
}

// panicked is a panic of a backend's Run.
type panicked struct{ value any }

func (p panicked) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// describe says what a Run returned, for a failure's got.
func describe(out map[string]*tensor.Tensor, err error) string {
	switch {
	case err == nil:
		return fmt.Sprintf("%s and no error", outputs(len(out)))
	case len(out) > 0:
		return fmt.Sprintf("%s with error %q", outputs(len(out)), err)
	}
	if p, ok := err.(panicked); ok {
		return "a " + p.Error()
	}
	return fmt.Sprintf("error %q", err)
}

// outputs says how many outputs a Run returned.
func outputs(n int) string {
	if n == 1 {
		return "1 output"
	}
	return fmt.Sprintf("%d outputs", n)
}
