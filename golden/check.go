package golden

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/panicguard"
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
	// Run, when set, is a regular expression (Go syntax, unanchored, like
	// go test -run) a case's ID "<op>/<name>" must match to run.
	Run string
	// Policy replaces each case's accuracy policy ("" = the case's own).
	Policy string
	// Shard and Shards split the sorted case list: with Shards = N > 0,
	// only cases whose index i (0-based, in ID order) has i mod N = Shard−1
	// run, so shards 1/N … N/N together cover every case exactly once.
	// Shards = 0 runs every case. The split is of the cases Op and Run
	// select, so shards of a filtered run still cover it exactly once.
	Shard, Shards int
	// Jobs is how many cases run at once (≤ 1: one at a time). Results
	// come back in ID order whatever the order they finish in.
	Jobs int
	// Repeat is how many times each case runs (≤ 1: once). Outputs whose
	// bits differ between runs are reported in Outcome.Nondeterministic.
	Repeat int
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
	// StepTimeout bounds each of a case's long steps besides the
	// backend's run on a deadline of its own: regenerating a recipe's
	// inputs (and its expected outputs, for the policies that compare
	// bits) and the reference (harness.Options.StepTimeout). 0 = Timeout.
	// The CLI sets it to --timeout, also for a backend that times itself
	// (Timeout 0), so that no step of a case outlives it.
	StepTimeout time.Duration
	// Progress, when set, receives one line per case as it finishes.
	Progress io.Writer
	// Observe, when set, is called as each case's first run on the
	// backend starts (after its inputs are loaded and held to the
	// contract; a case that never reaches the backend is not observed),
	// with the case's ID: the run goes under the context it returns, and
	// done, when not nil, is called as soon as that run returns, whatever
	// its outcome. It is how a caller traces a case (npu.WithTrace) one
	// at a time per job, without Check knowing of traces. Under Repeat
	// only the first run is observed (the emulator's schedule is the same
	// on every run). It is called from the jobs' goroutines concurrently.
	Observe func(ctx context.Context, id string) (runCtx context.Context, done func())
}

// budgetCheck is the verdict on one performance budget, as the report
// shows it: "budget cycles" with "cycles 1200 ≤ budget 1300", or
// "budget gm_bytes" with "gm_bytes 96 ≠ recorded 128".
func budgetCheck(name string, got, budget int64, pass bool) harness.Check {
	var d string
	switch {
	case name == "cycles" && pass:
		d = fmt.Sprintf("cycles %d ≤ budget %d", got, budget)
	case name == "cycles":
		d = fmt.Sprintf("cycles %d > budget %d", got, budget)
	case pass:
		d = fmt.Sprintf("%s %d = recorded %d", name, got, budget)
	default:
		d = fmt.Sprintf("%s %d ≠ recorded %d", name, got, budget)
	}
	return harness.Check{Name: "budget " + name, Pass: pass, Detail: d}
}

// Select returns the cases of s that opt selects (op, run and shard), in
// ID order. It fails on an unknown op, an invalid regular expression or an
// invalid shard.
func Select(s *Store, opt CheckOptions) ([]*StoredCase, error) {
	if opt.Op != "" {
		if _, err := ops.Lookup(opt.Op); err != nil {
			return nil, &harness.InputError{Err: fmt.Errorf("--op: %w", err)}
		}
	}
	var re *regexp.Regexp
	if opt.Run != "" {
		var err error
		if re, err = regexp.Compile(opt.Run); err != nil {
			return nil, &harness.InputError{Err: fmt.Errorf("--run %q: %w", opt.Run, err)}
		}
	}
	if opt.Shards < 0 || (opt.Shards > 0 && (opt.Shard < 1 || opt.Shard > opt.Shards)) || (opt.Shards == 0 && opt.Shard != 0) {
		return nil, &harness.InputError{Err: fmt.Errorf("shard %d/%d: want I/N with 1 ≤ I ≤ N", opt.Shard, opt.Shards)}
	}
	var out []*StoredCase
	for _, c := range s.cases {
		if opt.Op != "" && opOf(c.ID) != opt.Op {
			continue
		}
		if re != nil && !re.MatchString(c.ID) {
			continue
		}
		out = append(out, c)
	}
	if opt.Shards > 0 {
		var shard []*StoredCase
		for i, c := range out {
			if i%opt.Shards == opt.Shard-1 {
				shard = append(shard, c)
			}
		}
		out = shard
	}
	return out, nil
}

// noneSelected says which filter of opt selected no case of s: running
// nothing and passing would hide an empty store or a wrong filter.
func noneSelected(s *Store, opt CheckOptions) error {
	n := len(s.cases)
	if n == 0 {
		return fmt.Errorf("no cases selected: store %s holds no cases", s.where)
	}
	nop := n
	if opt.Op != "" {
		nop = 0
		for _, c := range s.cases {
			if opOf(c.ID) == opt.Op {
				nop++
			}
		}
		if nop == 0 {
			return fmt.Errorf("no cases selected: --op %s matches none of the %d cases in %s", opt.Op, n, s.where)
		}
	}
	of := ""
	if opt.Op != "" {
		of = " of --op " + opt.Op
	}
	if opt.Run != "" {
		sel, err := Select(s, CheckOptions{Op: opt.Op, Run: opt.Run})
		if err == nil && len(sel) == 0 {
			return fmt.Errorf("no cases selected: --run %s matches none of the %d cases%s in %s", opt.Run, nop, of, s.where)
		}
		nop = len(sel)
		of += " matching --run " + opt.Run
	}
	return fmt.Errorf("no cases selected: --shard %d/%d selects none of the %d cases%s in %s", opt.Shard, opt.Shards, nop, of, s.where)
}

func opOf(id string) string {
	for i := range id {
		if id[i] == '/' {
			return id[:i]
		}
	}
	return id
}

// Check runs backend b over the cases of s that opt selects, with inputs
// read from the store (Verify proves they match their seeds), opt.Jobs
// cases at a time, and returns their outcomes in ID order.
//
// Every output is judged by the case's policy (or opt.Policy); with
// ExactAuto the emulator is also held bit-exactly to expected/ (the exact
// policy), which is its regression guard, while any other backend is judged
// by the accuracy policy alone, because a valid kernel may sum in another
// order (docs/golden.md). When the backend reports a cost and the case has
// budgets, modeled cycles must not exceed the recorded cycles and GM bytes
// (in + out) must equal the recorded ones. With opt.Repeat = N > 1 each
// case runs N times: every run is judged, and outputs whose bits differ
// between runs make the case nondeterministic (Outcome.Nondeterministic).
//
// A case that cannot be judged (broken store entry, backend failure) is a
// harness.Outcome with Err; the run goes on. Check itself fails only on invalid
// options (unknown op, policy, pattern or shard: a harness.InputError) or
// when ctx is done; it then returns the outcomes of the cases that
// finished, still in ID order.
func Check(ctx context.Context, s *Store, b backend.Backend, opt CheckOptions) ([]harness.Outcome, error) {
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
	if len(cases) == 0 {
		return nil, &harness.InputError{Err: noneSelected(s, opt)}
	}
	exact := opt.Exact == ExactAlways || (opt.Exact == ExactAuto && b.Name() == ReferenceBackend)
	results := make([]harness.Outcome, len(cases))
	done := make([]bool, len(cases))
	next := make(chan int)
	var wg sync.WaitGroup
	var progress sync.Mutex
	// A panic in a case is raised again on the caller's goroutine once the
	// workers are done (the CLI's guard catches it there); the other
	// workers take no new case meanwhile.
	var crash panicguard.Catcher
	defer crash.Rethrow()
	for range min(max(opt.Jobs, 1), len(cases)) {
		wg.Go(func() {
			for i := range next {
				if crash.Caught() {
					continue
				}
				start := time.Now()
				var r harness.Outcome
				func() {
					defer crash.Catch()
					r = s.checkCase(ctx, cases[i], b, override, exact, opt)
				}()
				if crash.Caught() {
					continue
				}
				r.Elapsed = time.Since(start)
				if opt.Progress != nil {
					progress.Lock()
					fmt.Fprintf(opt.Progress, "%-13s %s (%s)\n", strings.ToUpper(r.Verdict()), r.ID, r.Elapsed.Round(time.Millisecond))
					progress.Unlock()
				}
				results[i], done[i] = r, true
			}
		})
	}
	for i := range cases {
		if ctx.Err() != nil {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		var finished []harness.Outcome
		for i := range results {
			if done[i] {
				finished = append(finished, results[i])
			}
		}
		return finished, err
	}
	return results, nil
}

func (s *Store) checkCase(ctx context.Context, c *StoredCase, b backend.Backend, override verify.Policy, exact bool, opt CheckOptions) harness.Outcome {
	r := harness.Outcome{ID: c.ID}
	if c.Err != nil {
		r.Err = &harness.InputError{Err: c.Err}
		return r
	}
	cj := s.path(c.ID + "/" + CaseJSON)
	hc := c.File.Harness()
	r.Case = hc
	pol := override
	if pol == nil {
		p, err := verify.ParsePolicy(c.File.Policy)
		if err != nil {
			r.Err = &harness.InputError{Err: fmt.Errorf("%s: policy: %w", cj, err)}
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
	step := opt.StepTimeout
	if step <= 0 {
		step = opt.Timeout
	}
	in, expected, err := s.loadForCheck(ctx, c, step)
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			err = &harness.InputError{Err: err}
		}
		r.Err = err
		return r
	}
	// Load has held the files to case.json; here case.json is held to the
	// op's contract.
	pc, err := harness.PrepareInputs(hc, in)
	if err != nil {
		r.Err = &harness.InputError{Err: fmt.Errorf("%s: %w", cj, err)}
		return r
	}
	if err := checkRecorded(c, pc, expected); err != nil {
		r.Err = &harness.InputError{Err: fmt.Errorf("%s: outputs: %w", cj, err)}
		return r
	}
	ho := harness.Options{Numerics: opt.Numerics, Policies: policies, Golden: expected, Timeout: opt.Timeout, StepTimeout: step}
	recipeVerdicts := s.recipeGolden(ctx, c, pc, s.recorderFor(b), &ho) // a recipe's expected bits come from its hashes
	res, err := runRepeated(ctx, &r, b, pc, ho, opt)
	if err != nil {
		r.Err = err
		return r
	}
	recipeVerdicts(res)
	r.Result = res
	// Budgets are figures of the emulator's cost model; another backend's
	// cost (at most measured kernel time) is reported, not budgeted.
	if m := res.Measurement; m != nil && m.Model != nil && c.File.Budgets != nil && !opt.NoBudgets && b.Name() == ReferenceBackend {
		bud := c.File.Budgets
		gm := m.Model.GMBytes()
		r.Checks = []harness.Check{
			budgetCheck("cycles", m.Model.Cycles, bud.Cycles, m.Model.Cycles <= bud.Cycles),
			budgetCheck("gm_bytes", gm, bud.GMBytes, gm == bud.GMBytes),
		}
	}
	return r
}

// runRepeated runs pc max(opt.Repeat, 1) times, each run under its own
// timeout (hopt.Timeout), and returns the result to report: the first run that failed
// its checks, else the first run. Outputs whose bits differ from the first
// run's are recorded in r.Nondeterministic, one line per output (the first
// run that differs, the first differing element and how many differ). An
// error of any run ends the case: it could not be judged.
func runRepeated(ctx context.Context, r *harness.Outcome, b backend.Backend, pc *harness.Prepared, hopt harness.Options, opt CheckOptions) (*harness.Result, error) {
	n := max(opt.Repeat, 1)
	r.Runs = n
	var first, report *harness.Result
	differs := map[string]bool{}
	for k := 1; k <= n; k++ {
		runCtx, done := ctx, func() {}
		if k == 1 && opt.Observe != nil {
			var d func()
			if runCtx, d = opt.Observe(ctx, r.ID); d != nil {
				done = d
			}
		}
		res, err := harness.RunPrepared(runCtx, b, pc, hopt)
		done()
		if err != nil {
			if n > 1 {
				return nil, fmt.Errorf("run %d of %d: %w", k, n, err)
			}
			return nil, err
		}
		if first == nil {
			first, report = res, res
		} else if report.Pass() && !res.Pass() {
			report = res
		}
		if k == 1 {
			continue
		}
		for _, name := range slices.Sorted(maps.Keys(first.Outputs)) {
			if differs[name] {
				continue
			}
			if d := outputDiff(name, first.Outputs[name], res.Outputs[name], k); d != "" {
				differs[name] = true
				r.Nondeterministic = append(r.Nondeterministic, d)
			}
		}
	}
	return report, nil
}

// outputDiff describes how output name of run k differs bitwise from run
// 1's ("" when it does not).
func outputDiff(name string, a, b *tensor.Tensor, k int) string {
	if b == nil {
		return fmt.Sprintf("output %q: run %d returned none, run 1 %s", name, k, a)
	}
	eq, at := tensor.BitsEqual(a, b)
	switch {
	case eq:
		return ""
	case at < 0:
		return fmt.Sprintf("output %q: run %d returned %s, run 1 %s", name, k, b, a)
	}
	count := 0
	for i := range a.Len() {
		if a.Bits(i) != b.Bits(i) {
			count++
		}
	}
	return fmt.Sprintf("output %q: run %d differs bitwise from run 1 in %d of %d elements, first at element %d: run 1 %v (bits %#x), run %d %v (bits %#x)",
		name, k, count, a.Len(), at, a.Float64(at), a.Bits(at), k, b.Float64(at), b.Bits(at))
}
