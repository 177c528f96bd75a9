package golden

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/opdb"
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

// Select returns the cases of s that opt selects (op and shard), in ID
// order. It fails on an unknown op or an invalid shard.
func Select(s *Store, opt CheckOptions) ([]*StoredCase, error) {
	if opt.Op != "" {
		if _, err := opdb.Op(opt.Op); err != nil {
			return nil, &harness.InputError{Err: fmt.Errorf("--op: %w", err)}
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
// harness.Outcome with Err; the run goes on. Check itself fails only on invalid
// options (unknown op, policy or shard: a harness.InputError) or when ctx
// is done.
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
	results := make([]harness.Outcome, 0, len(cases))
	for _, c := range cases {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		start := time.Now()
		r := s.checkCase(ctx, c, b, override, exact, opt)
		r.Elapsed = time.Since(start)
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "%-13s %s (%s)\n", strings.ToUpper(r.Verdict()), r.ID, r.Elapsed.Round(time.Millisecond))
		}
		results = append(results, r)
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
	in, expected, err := s.loadForCheck(c)
	if err != nil {
		r.Err = &harness.InputError{Err: err}
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
	if opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opt.Timeout)
		defer cancel()
	}
	ho := harness.Options{Numerics: opt.Numerics, Policies: policies, Golden: expected}
	recipeVerdicts := s.recipeGolden(ctx, c, pc, &ho) // a recipe's expected bits come from its hashes
	res, err := harness.RunPrepared(ctx, b, pc, ho)
	if err != nil {
		r.Err = err
		return r
	}
	recipeVerdicts(res)
	r.Result = res
	// Budgets are figures of the emulator's cost model; another backend's
	// cost (at most measured kernel time) is reported, not budgeted.
	if res.Cost != nil && c.File.Budgets != nil && !opt.NoBudgets && b.Name() == ReferenceBackend {
		bud := c.File.Budgets
		gm := res.Cost.GMBytesIn + res.Cost.GMBytesOut
		r.Checks = []harness.Check{
			budgetCheck("cycles", res.Cost.Cycles, bud.Cycles, res.Cost.Cycles <= bud.Cycles),
			budgetCheck("gm_bytes", gm, bud.GMBytes, gm == bud.GMBytes),
		}
	}
	return r
}
