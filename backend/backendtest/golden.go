package backendtest

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

// goldenRun is what the golden concern produced, for the concerns after
// it: the store, the options the cases ran with, and their outcomes in
// ID order.
type goldenRun struct {
	store    *golden.Store
	opt      golden.CheckOptions
	outcomes []harness.Outcome
}

// goldenOptions are the options `npuverify check` runs the golden cases
// with on b: the emulator held to the stored bits and budgets only on the
// profile they were recorded on, every other backend to each case's
// accuracy policy (golden.Check's ExactAuto decides). Cases run
// concurrently even on one core, so that a backend unsafe for concurrent
// use differs from its serial runs (checkDeterministic).
func goldenOptions(b backend.Backend) golden.CheckOptions {
	opt := golden.CheckOptions{Jobs: max(2, runtime.GOMAXPROCS(0))}
	if e, ok := b.(*emulator.Emulator); ok && !reflect.DeepEqual(e.Profile(), npu.Ascend910B()) {
		opt.Exact, opt.NoBudgets = golden.ExactNever, true
	}
	return opt
}

// onlyIDs is a CheckOptions.Run pattern that selects exactly ids.
func onlyIDs(ids []string) string {
	quoted := make([]string, len(ids))
	for i, id := range ids {
		quoted[i] = regexp.QuoteMeta(id)
	}
	return "^(?:" + strings.Join(quoted, "|") + ")$"
}

// opOf is the op of a golden case ID ("<op>/<name>").
func opOf(id string) string {
	op, _, _ := strings.Cut(id, "/")
	return op
}

// checkGolden runs the embedded golden cases in scope on b, all at once
// and concurrently, and reports each failing case under its op with the
// text `npuverify check` prints for it (harness.Outcome.Failure).
func checkGolden(ctx context.Context, t reporter, b backend.Backend, cfg *config, names []string) goldenRun {
	g := goldenRun{store: golden.Embedded().WithRecorder(emulator.Recorder()), opt: goldenOptions(b)}
	var ids []string
	for _, sc := range g.store.Cases() {
		if !slices.Contains(names, opOf(sc.ID)) {
			continue
		}
		// A case.json that does not parse stays in scope: golden.Check
		// reports it, and a broken store is no reason to pass.
		if sc.File != nil && !cfg.inScope(sc.File.Harness()) {
			continue
		}
		ids = append(ids, sc.ID)
	}
	if len(ids) == 0 {
		t.Skipf("no embedded golden case is in scope")
		return g
	}
	g.opt.Run = onlyIDs(ids)
	outcomes, err := golden.Check(ctx, g.store, b, g.opt)
	if err != nil {
		t.Errorf("golden cases on backend %s: %v", b.Name(), err)
	}
	g.outcomes = outcomes
	forEachOp(t, names, outcomes, "golden case", func(t reporter, o *harness.Outcome) {
		if !o.Pass() {
			t.Errorf("%s", o.Failure())
		}
	})
	return g
}

// forEachOp runs a subtest per op of names over that op's outcomes,
// skipping an op with none (what its cases are is what says).
func forEachOp(t reporter, names []string, outcomes []harness.Outcome, what string, f func(reporter, *harness.Outcome)) {
	for _, op := range names {
		t.Run(op, func(t reporter) {
			n := 0
			for i := range outcomes {
				if o := &outcomes[i]; opOf(o.ID) == op {
					n++
					f(t, o)
				}
			}
			if n == 0 {
				t.Skipf("no %s of %s in scope", what, op)
				return
			}
			t.Logf("%d %ss of %s", n, what, op)
		})
	}
}

// checkDeterministic runs again, one at a time, the golden cases that
// passed when run concurrently: every run must give the bits the
// concurrent one gave, and the serial runs must agree with each other
// (golden.CheckOptions.Repeat, reported as `npuverify check --repeat`
// reports a nondeterministic case). A correct kernel may sum in any
// order, but in the same order every time: a result that depends on
// timing or on what else runs is not reproducible, whatever its accuracy.
func checkDeterministic(ctx context.Context, t reporter, b backend.Backend, cfg *config, names []string, g goldenRun) {
	concurrent := map[string]*harness.Outcome{}
	var ids []string
	for i := range g.outcomes {
		if o := &g.outcomes[i]; o.Pass() {
			concurrent[o.ID] = o
			ids = append(ids, o.ID)
		}
	}
	if len(ids) == 0 {
		t.Skipf("no golden case passed: there is nothing to run again")
		return
	}
	opt := g.opt
	opt.Run, opt.Jobs, opt.Repeat = onlyIDs(ids), 1, 2
	if cfg.short {
		opt.Repeat = 1
	}
	serial, err := golden.Check(ctx, g.store, b, opt)
	if err != nil {
		t.Errorf("golden cases on backend %s, run again one at a time: %v", b.Name(), err)
	}
	forEachOp(t, names, serial, "passing golden case", func(t reporter, o *harness.Outcome) {
		if !o.Pass() {
			t.Errorf("%s", o.Failure())
		}
		if o.Result == nil {
			return
		}
		c := concurrent[o.ID].Result
		for _, name := range slices.Sorted(maps.Keys(c.Outputs)) {
			if d := concurrentDiff(c.Outputs[name], o.Result.Outputs[name]); d != "" {
				t.Errorf("%s: %s: output %q %s", harness.Subject(o.Ran()), o.ID, name, d)
			}
		}
	})
}

// concurrentDiff describes how output conc of the concurrent run differs
// from the serial run's ("" when the bits agree).
func concurrentDiff(conc, serial *tensor.Tensor) string {
	if serial == nil {
		return fmt.Sprintf("is missing from the serial run: got none, want %s", conc)
	}
	eq, at := tensor.BitsEqual(conc, serial)
	switch {
	case eq:
		return ""
	case at < 0:
		return fmt.Sprintf("of a run concurrent with other cases differs from a serial run: got %s, want %s", conc, serial)
	}
	n := 0
	for i := range conc.Len() {
		if conc.Bits(i) != serial.Bits(i) {
			n++
		}
	}
	return fmt.Sprintf("of a run concurrent with other cases differs bitwise from a serial run in %d of %d elements, first at element %d: got %v (bits %#x), want %v (bits %#x) as run serially",
		n, conc.Len(), at, conc.Float64(at), conc.Bits(at), serial.Float64(at), serial.Bits(at))
}
