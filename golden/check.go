package golden

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// ExactMode says whether Check holds a backend to the stored output bits.
type ExactMode int

const (
	// ExactAuto holds the emulator (the backend that recorded the store,
	// Name() == "emulator") to the stored bits and no other backend: a
	// valid kernel may sum in another order.
	ExactAuto ExactMode = iota
	// ExactAlways adds the exact policy for any backend.
	ExactAlways
	// ExactNever judges every backend by the accuracy policy only.
	ExactNever
)

// ReferenceBackend is the name of the backend that records the store.
const ReferenceBackend = "emulator"

// CheckOptions select and configure the cases Check runs.
type CheckOptions struct {
	// Op restricts the run to one op ("" = every op).
	Op string
	// Policy replaces each case's accuracy policy ("" = the case's own).
	Policy string
	// Shard and Shards split the sorted case list: with Shards = N > 0,
	// only cases whose index i (0-based, in ID order) has i mod N = Shard−1
	// run, so shards 1/N … N/N together cover every case exactly once.
	// Shards = 0 runs every case.
	Shard, Shards int
	// Exact decides whether outputs must equal the stored bits.
	Exact ExactMode
	// NoBudgets skips the performance budgets (a backend with another
	// tiling may legitimately take more cycles).
	NoBudgets bool
	// Numerics is the profile the backend computes under when it does not
	// say (harness.Options.Numerics); cases that override it win.
	Numerics tensor.Numerics
	// Timeout bounds each case (0 = no limit).
	Timeout time.Duration
	// Progress, when set, receives one line per case as it finishes.
	Progress io.Writer
}

// BudgetCheck is the verdict on one performance budget.
type BudgetCheck struct {
	Name   string // "cycles" or "gm_bytes"
	Got    int64
	Budget int64
	Pass   bool
}

// String renders e.g. "cycles 1200 ≤ 1300" or "gm_bytes 96 ≠ 128".
func (b BudgetCheck) String() string {
	switch {
	case b.Name == "cycles" && b.Pass:
		return fmt.Sprintf("cycles %d ≤ budget %d", b.Got, b.Budget)
	case b.Name == "cycles":
		return fmt.Sprintf("cycles %d > budget %d", b.Got, b.Budget)
	case b.Pass:
		return fmt.Sprintf("%s %d = recorded %d", b.Name, b.Got, b.Budget)
	}
	return fmt.Sprintf("%s %d ≠ recorded %d", b.Name, b.Got, b.Budget)
}

// CaseResult is the outcome of one case of Check.
type CaseResult struct {
	ID       string   // "<op>/<name>"
	Case     ops.Case // as stored (zero when case.json did not parse)
	Policies []string // the policies applied, in order
	// Result is the harness result; nil when Err is set.
	Result *harness.Result
	// Budgets holds the budget verdicts; empty when the backend reported
	// no cost, the case has no budgets, or budgets were skipped.
	Budgets []BudgetCheck
	// Err is why the case could not be judged: a broken store entry or
	// case (harness.InputError) or a backend failure (harness.BackendError).
	Err error
	// Elapsed is the wall time of the case.
	Elapsed time.Duration
}

// Pass reports whether the case was judged and every verdict and budget
// passed.
func (r *CaseResult) Pass() bool {
	if r.Err != nil || r.Result == nil || !r.Result.Pass() {
		return false
	}
	for _, b := range r.Budgets {
		if !b.Pass {
			return false
		}
	}
	return true
}

// Failure renders why the case failed ("" when it passed): the error, the
// verifier's failure report, and failed budgets, each naming the case.
func (r *CaseResult) Failure() string {
	if r.Pass() {
		return ""
	}
	if r.Err != nil {
		return fmt.Sprintf("%s: %v", r.ID, r.Err)
	}
	s := ""
	if !r.Result.Pass() {
		s = r.Result.Verify.Failure()
	}
	for _, b := range r.Budgets {
		if !b.Pass {
			if s != "" {
				s += "\n"
			}
			s += fmt.Sprintf("%s: %s: budget %s", r.Case.Subject(), r.ID, b)
		}
	}
	return s
}

// Select returns the cases of s that opt selects (op and shard), in ID
// order. It fails on an unknown op or an invalid shard.
func Select(s *Store, opt CheckOptions) ([]*Case, error) {
	if opt.Op != "" {
		if _, err := opdb.Op(opt.Op); err != nil {
			return nil, &harness.InputError{Err: fmt.Errorf("--op: %w", err)}
		}
	}
	if opt.Shards < 0 || (opt.Shards > 0 && (opt.Shard < 1 || opt.Shard > opt.Shards)) || (opt.Shards == 0 && opt.Shard != 0) {
		return nil, &harness.InputError{Err: fmt.Errorf("shard %d/%d: want I/N with 1 ≤ I ≤ N", opt.Shard, opt.Shards)}
	}
	var out []*Case
	for _, c := range s.cases {
		if opt.Op != "" && opOf(c.ID) != opt.Op {
			continue
		}
		out = append(out, c)
	}
	if opt.Shards > 0 {
		var shard []*Case
		for i, c := range out {
			if i%opt.Shards == opt.Shard-1 {
				shard = append(shard, c)
			}
		}
		out = shard
	}
	return out, nil
}

func opOf(id string) string {
	for i := range id {
		if id[i] == '/' {
			return id[:i]
		}
	}
	return id
}

// Check runs backend b over the cases of s that opt selects, in ID order,
// with inputs read from the store (Verify proves they match their seeds).
//
// Every output is judged by the case's policy (or opt.Policy); with
// ExactAuto the emulator is also held bit-exactly to expected/ (the exact
// policy), which is its regression guard, while any other backend is judged
// by the accuracy policy alone, because a valid kernel may sum in another
// order (docs/golden.md). When the backend reports a cost and the case has
// budgets, modeled cycles must not exceed the recorded cycles and GM bytes
// (in + out) must equal the recorded ones.
//
// A case that cannot be judged (broken store entry, backend failure) is a
// CaseResult with Err; the run goes on. Check itself fails only on invalid
// options (unknown op, policy or shard: a harness.InputError) or when ctx
// is done.
func Check(ctx context.Context, s *Store, b backend.Backend, opt CheckOptions) ([]CaseResult, error) {
	var override verify.Policy
	if opt.Policy != "" {
		p, err := verify.ParsePolicy(opt.Policy)
		if err != nil {
			return nil, &harness.InputError{Err: fmt.Errorf("--policy: %w", err)}
		}
		override = p
	}
	cases, err := Select(s, opt)
	if err != nil {
		return nil, err
	}
	exact := opt.Exact == ExactAlways || (opt.Exact == ExactAuto && b.Name() == ReferenceBackend)
	results := make([]CaseResult, 0, len(cases))
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		start := time.Now()
		r := s.checkCase(ctx, c, b, override, exact, opt)
		r.Elapsed = time.Since(start)
		if opt.Progress != nil {
			verdict := "PASS"
			switch {
			case r.Err != nil && harness.IsInput(r.Err):
				verdict = "INPUT ERROR"
			case r.Err != nil:
				verdict = "BACKEND ERROR"
			case !r.Pass():
				verdict = "FAIL"
			}
			fmt.Fprintf(opt.Progress, "%-13s %s (%s)\n", verdict, r.ID, r.Elapsed.Round(time.Millisecond))
		}
		results = append(results, r)
	}
	return results, nil
}

func (s *Store) checkCase(ctx context.Context, c *Case, b backend.Backend, override verify.Policy, exact bool, opt CheckOptions) CaseResult {
	r := CaseResult{ID: c.ID}
	if c.Err != nil {
		r.Err = &harness.InputError{Err: c.Err}
		return r
	}
	hc := c.File.Harness()
	r.Case = hc
	pol := override
	if pol == nil {
		p, err := verify.ParsePolicy(c.File.Policy)
		if err != nil {
			r.Err = &harness.InputError{Err: fmt.Errorf("%s: policy: %w", s.path(c.ID+"/"+CaseJSON), err)}
			return r
		}
		pol = p
	}
	policies := []verify.Policy{pol}
	if exact && pol.Name() != "exact" {
		policies = append(policies, verify.MustParsePolicy("exact"))
	}
	for _, p := range policies {
		r.Policies = append(r.Policies, p.Name())
	}
	op, err := opdb.Op(hc.Op)
	if err != nil {
		r.Err = &harness.InputError{Err: fmt.Errorf("%s: %w", s.path(c.ID+"/"+CaseJSON), err)}
		return r
	}
	params, err := op.Validate(hc.Params)
	if err != nil {
		r.Err = &harness.InputError{Err: fmt.Errorf("%s: %w", s.path(c.ID+"/"+CaseJSON), err)}
		return r
	}
	in, expected, err := s.Load(c)
	if err != nil {
		r.Err = &harness.InputError{Err: err}
		return r
	}
	if err := s.holdToContract(c, op, params, in, expected); err != nil {
		r.Err = &harness.InputError{Err: err}
		return r
	}
	if opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.Timeout)
		defer cancel()
	}
	pc := &harness.Prepared{Case: hc, Op: op, Params: params, Inputs: in}
	res, err := harness.RunPrepared(ctx, b, pc, harness.Options{Numerics: opt.Numerics, Policies: policies, Golden: expected})
	if err != nil {
		r.Err = err
		return r
	}
	r.Result = res
	// Budgets are figures of the emulator's cost model; another backend's
	// cost (at most measured kernel time) is reported, not budgeted.
	if res.Cost != nil && c.File.Budgets != nil && !opt.NoBudgets && b.Name() == ReferenceBackend {
		bud := c.File.Budgets
		gm := res.Cost.GMBytesIn + res.Cost.GMBytesOut
		r.Budgets = []BudgetCheck{
			{Name: "cycles", Got: res.Cost.Cycles, Budget: bud.Cycles, Pass: res.Cost.Cycles <= bud.Cycles},
			{Name: "gm_bytes", Got: gm, Budget: bud.GMBytes, Pass: gm == bud.GMBytes},
		}
	}
	return r
}

// holdToContract checks the tensors case.json lists against op's contract
// for params: every input the contract requires, nothing it does not know,
// and exactly its outputs, each of the contract's dtype and shape. (Load
// has held the files to case.json already.) Errors name case.json.
func (s *Store) holdToContract(c *Case, op ops.Op, params ops.Params, in, expected map[string]*tensor.Tensor) error {
	cj := s.path(c.ID + "/" + CaseJSON)
	if err := ops.CheckInputs(op, params, in); err != nil {
		return fmt.Errorf("%s: inputs: %w", cj, err)
	}
	specs, err := op.Outputs(params, in)
	if err != nil {
		return fmt.Errorf("%s: %w", cj, err)
	}
	for _, sp := range specs {
		t, ok := expected[sp.Name]
		switch {
		case !ok:
			return fmt.Errorf("%s: outputs: output %q of the %s contract is not listed", cj, sp.Name, op.Name())
		case t.DType != sp.DType || !t.SameShape(sp.Shape):
			return fmt.Errorf("%s: outputs: output %q is %s%v, the %s contract says %s%v", cj, sp.Name, t.DType, t.Shape, op.Name(), sp.DType, sp.Shape)
		}
	}
	if len(expected) != len(specs) {
		for _, name := range slices.Sorted(maps.Keys(expected)) {
			if !slices.ContainsFunc(specs, func(sp ops.TensorSpec) bool { return sp.Name == name }) {
				return fmt.Errorf("%s: outputs: %q is not an output of %s", cj, name, op.Name())
			}
		}
	}
	return nil
}

// Exit summarises results as a CLI exit code: 3 if any case hit a backend
// failure (or any error that is not an input error), else 2 if any case
// could not be judged because of its input, else 1 if any failed, else 0.
func Exit(results []CaseResult) int {
	code := 0
	for i := range results {
		r := &results[i]
		switch {
		case r.Err != nil && harness.IsInput(r.Err):
			code = max(code, 2)
		case r.Err != nil:
			code = max(code, 3)
		case !r.Pass():
			code = max(code, 1)
		}
	}
	return code
}
