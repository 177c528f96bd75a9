package mutation

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/panicguard"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/verify"
)

// CheckBackendError names the failure of a backend to produce outputs at
// all (it crashed, or broke the output contract): a real harness notices
// it as surely as a wrong value.
const CheckBackendError = "backend-error"

// exactPolicy is the name of the bit-exact policy.
const exactPolicy = "exact"

// Verdict is the outcome of one case on one backend.
type Verdict struct {
	Case *SuiteCase
	// Checks are the failed bound checks (every check but exact), as
	// "<check>(<output or input>)" or CheckBackendError, in report order.
	Checks []string
	// Exact is set when the outputs differ from the golden bits.
	Exact bool
	// Detail is the first bound check failure's reason, one line;
	// ExactDetail the exact policy's.
	Detail, ExactDetail string
	// Err is set when the case could not be run for a reason that is not
	// the backend's (a broken case): the suite itself is at fault.
	Err error
}

// CaughtBound reports whether a bound check failed.
func (v *Verdict) CaughtBound() bool { return len(v.Checks) > 0 }

// Caught reports whether any check, exact included, failed.
func (v *Verdict) Caught() bool { return v.CaughtBound() || v.Exact }

// RunCase runs c on b with its policy, plus the exact policy when exact is
// set and the case has golden outputs, and classifies the failures.
func RunCase(ctx context.Context, b backend.Backend, c *SuiteCase, exact bool) Verdict {
	v := Verdict{Case: c}
	policies := []verify.Policy{c.Policy}
	if exact && c.Golden != nil && c.Policy.Name() != exactPolicy {
		policies = append(policies, verify.MustParsePolicy(exactPolicy))
	}
	res, err := harness.RunPrepared(ctx, b, c.Prepared, harness.Options{Policies: policies, Golden: c.trusted()})
	switch {
	case err != nil && harness.IsBackend(err):
		v.Checks, v.Detail = []string{CheckBackendError}, oneLine(err.Error())
		return v
	case err != nil:
		v.Err = err
		return v
	}
	for _, o := range res.Verify.Outputs {
		for _, vd := range o.Verdicts {
			if vd.Pass {
				continue
			}
			what := fmt.Sprintf("%s(%s)", vd.Policy, o.Name)
			if vd.Policy == exactPolicy && c.Policy.Name() != exactPolicy {
				if !v.Exact {
					v.Exact, v.ExactDetail = true, what+": "+oneLine(vd.Reason)
				}
				continue
			}
			if v.Detail == "" {
				v.Detail = what + ": " + oneLine(vd.Reason)
			}
			v.Checks = append(v.Checks, what)
		}
	}
	return v
}

func oneLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	const max = 160
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Catch is the first case that caught a fault in one column.
type Catch struct {
	Case   string   `json:"case"`
	Checks []string `json:"checks"` // the checks that failed on that case
	Detail string   `json:"detail"`
}

// String renders "case: check, check".
func (c *Catch) String() string {
	if c == nil {
		return "SURVIVED"
	}
	return c.Case + ": " + strings.Join(c.Checks, ", ")
}

// FaultResult is the outcome of the suite on one fault.
type FaultResult struct {
	kernels.FaultInfo
	// Bound is the first case caught by the bound checks; nil: survived.
	Bound *Catch `json:"bound"`
	// Exact is the first case caught by any check, exact included; nil:
	// survived even the bit-exact comparison.
	Exact *Catch `json:"exact"`
	// BoundCases and ExactCases count the cases that caught the fault in
	// each column; Ran is how many of the fault's op's cases ran (all of
	// them with Options.AllCases, else the run stopped at the first bound
	// catch).
	BoundCases int `json:"bound_cases"`
	ExactCases int `json:"exact_cases"`
	Ran        int `json:"ran"`
	// Errors are cases that could not be run (a broken suite).
	Errors []string `json:"errors,omitempty"`
}

// AlarmResult is the outcome of the suite's bound checks on a correct
// implementation: every failing case is a false alarm.
type AlarmResult struct {
	Backend string `json:"backend"` // "emulator" or the variant's name
	// Alarms are the cases that failed a bound check.
	Alarms []Catch `json:"alarms"`
	// ExactMismatches counts cases whose outputs differ from the golden
	// bits: a false alarm only for the correct emulator (a valid variant
	// may round in another order).
	ExactMismatches int      `json:"exact_mismatches"`
	Ran             int      `json:"ran"`
	Errors          []string `json:"errors,omitempty"`
}

// FalseAlarms is the number of false alarms: bound-check failures, plus
// exact mismatches for the correct emulator.
func (a *AlarmResult) FalseAlarms() int {
	n := len(a.Alarms) + len(a.Errors)
	if a.Backend == correctName {
		n += a.ExactMismatches
	}
	return n
}

const correctName = "emulator"

// Options configure Run. Zero fields take the defaults.
type Options struct {
	// Profile is the emulated device (default ascend910b).
	Profile *npu.Profile
	// Cases is the suite (default DefaultSuite).
	Cases []*SuiteCase
	// Faults are the faults to score (default the whole catalogue).
	Faults []kernels.FaultInfo
	// Variants are the valid variants checked for false alarms, besides
	// the correct emulator (default every op's opdb.Info.Variants; NoVariants for none).
	Variants   []kernels.Variant
	NoVariants bool
	// AllCases runs every case for every fault, to count the cases that
	// catch it; by default a fault's run stops at its first bound catch.
	AllCases bool
	// Workers bounds the parallel runs (default GOMAXPROCS).
	Workers int
}

// Result is the mutation score and the false alarms.
type Result struct {
	Profile   string            `json:"profile"`
	Golden    int               `json:"golden_cases"`
	Generated int               `json:"generated_cases"`
	Faults    []FaultResult     `json:"faults"`
	Alarms    []AlarmResult     `json:"alarms"`
	Elapsed   time.Duration     `json:"elapsed_ns"`
	AllCases  bool              `json:"all_cases"`
	Variants  []kernels.Variant `json:"variants"`
}

// Score returns the faults caught by the bound checks, with exact, and
// the total.
func (r *Result) Score() (bound, exact, total int) {
	for _, f := range r.Faults {
		if f.Bound != nil {
			bound++
		}
		if f.Exact != nil {
			exact++
		}
	}
	return bound, exact, len(r.Faults)
}

// FalseAlarms returns the false alarms over the correct emulator and every
// variant.
func (r *Result) FalseAlarms() int {
	n := 0
	for i := range r.Alarms {
		n += r.Alarms[i].FalseAlarms()
	}
	return n
}

// Run scores every fault and checks every variant for false alarms, in
// parallel. It fails only when the suite cannot be built or ctx is done.
func Run(ctx context.Context, opt Options) (*Result, error) {
	start := time.Now()
	prof := npu.Ascend910B()
	if opt.Profile != nil {
		prof = *opt.Profile
	}
	if err := prof.Validate(); err != nil {
		return nil, err
	}
	cases := opt.Cases
	if cases == nil {
		var err error
		if cases, err = DefaultSuite(prof); err != nil {
			return nil, err
		}
	}
	faults := opt.Faults
	if faults == nil {
		faults = opdb.Faults()
	}
	variants := opt.Variants
	if variants == nil && !opt.NoVariants {
		variants = opdb.Variants()
	}
	res := &Result{Profile: prof.Name, Faults: make([]FaultResult, len(faults)), AllCases: opt.AllCases, Variants: variants}
	for _, c := range cases {
		if c.Golden != nil {
			res.Golden++
		} else {
			res.Generated++
		}
	}
	res.Alarms = make([]AlarmResult, 1+len(variants))

	// Jobs: the false-alarm runs first (they run every case), then faults.
	var jobs []func()
	for i := range res.Alarms {
		b, name, run := emulator.New(prof), correctName, cases
		if i > 0 {
			// A variant changes one op's kernel: it runs that op's cases.
			v := variants[i-1]
			b, name, run = emulator.New(prof, emulator.WithVariant(v)), v.Op+"/"+v.Name, casesOf(cases, v.Op)
		}
		jobs = append(jobs, func() { res.Alarms[i] = runAlarms(ctx, b, name, run) })
	}
	for i, f := range faults {
		b := emulator.New(prof, emulator.WithFaults(f.Fault))
		// A fault lives in its op's kernel (its plan reads only that op's
		// faults), so only that op's cases can show it.
		run := casesOf(cases, f.Op)
		jobs = append(jobs, func() { res.Faults[i] = runFault(ctx, b, f, run, opt.AllCases) })
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	work := make(chan func())
	var wg sync.WaitGroup
	// A panic in a fault's run is raised again here once the workers are
	// done (the CLI's guard reports it); they take no new fault meanwhile.
	var crash panicguard.Catcher
	for range min(workers, len(jobs)) {
		wg.Go(func() {
			for j := range work {
				if crash.Caught() {
					continue
				}
				func() {
					defer crash.Catch()
					j()
				}()
			}
		})
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	crash.Rethrow()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// casesOf returns the cases of op.
func casesOf(cases []*SuiteCase, op string) []*SuiteCase {
	var out []*SuiteCase
	for _, c := range cases {
		if c.Prepared.Case.Op == op {
			out = append(out, c)
		}
	}
	return out
}

func runFault(ctx context.Context, b backend.Backend, f kernels.FaultInfo, cases []*SuiteCase, all bool) FaultResult {
	r := FaultResult{FaultInfo: f}
	for _, c := range cases {
		if ctx.Err() != nil {
			break
		}
		v := RunCase(ctx, b, c, true)
		r.Ran++
		if v.Err != nil {
			r.Errors = append(r.Errors, fmt.Sprintf("%s: %v", c.ID, v.Err))
			continue
		}
		if v.CaughtBound() {
			r.BoundCases++
			if r.Bound == nil {
				r.Bound = &Catch{Case: c.ID, Checks: v.Checks, Detail: v.Detail}
			}
		}
		if v.Caught() {
			r.ExactCases++
			if r.Exact == nil {
				checks, detail := v.Checks, v.Detail
				if v.Exact {
					checks = append(append([]string(nil), checks...), exactPolicy)
				}
				if detail == "" {
					detail = v.ExactDetail
				}
				r.Exact = &Catch{Case: c.ID, Checks: checks, Detail: detail}
			}
		}
		if r.Bound != nil && !all {
			break
		}
	}
	return r
}

func runAlarms(ctx context.Context, b backend.Backend, name string, cases []*SuiteCase) AlarmResult {
	r := AlarmResult{Backend: name}
	for _, c := range cases {
		if ctx.Err() != nil {
			break
		}
		v := RunCase(ctx, b, c, true)
		r.Ran++
		switch {
		case v.Err != nil:
			r.Errors = append(r.Errors, fmt.Sprintf("%s: %v", c.ID, v.Err))
		case v.CaughtBound():
			r.Alarms = append(r.Alarms, Catch{Case: c.ID, Checks: v.Checks, Detail: v.Detail})
		}
		if v.Exact {
			r.ExactMismatches++
		}
	}
	return r
}
