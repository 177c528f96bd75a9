package harness

import (
	"fmt"
	"math"
	"time"

	"github.com/npuverify/npuverify/ops"
)

// Outcome is one case's outcome as a runner over many cases (golden.Check)
// produces it and the report and the CLI render it: the one record of what
// happened to a case, whether it was judged or not.
type Outcome struct {
	// ID names the case, e.g. "vector_add/fp16_uniform_n17".
	ID string
	// Case is the case as given (zero when it could not even be read,
	// e.g. a case.json that does not parse).
	Case ops.Case
	// Policies are the names of the policies applied, in order.
	Policies []string
	// Result is the harness result; nil when Err is set.
	Result *Result
	// Checks are verdicts beyond the accuracy policies (a golden case's
	// performance budgets); a failed one fails the case.
	Checks []Check
	// Err is why the case could not be judged: an *InputError (a broken
	// case or input) or anything else, a backend failure.
	Err error
	// Elapsed is the wall time of the case.
	Elapsed time.Duration
	// Runs is how many times the case ran (check --repeat); 0 or 1 for once.
	Runs int
	// Nondeterministic describes each output whose bits differed between
	// runs of the case (empty when it ran once or every run agreed). It is
	// a finding of its own, not an accuracy failure: every run may be
	// inside the bound and still disagree with the others.
	Nondeterministic []string
}

// Check is a verdict beyond the accuracy policies, e.g. a performance
// budget. Its JSON form is part of the report's.
type Check struct {
	Name   string `json:"name"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

// The verdicts of an Outcome.
const (
	VerdictPass         = "pass"
	VerdictFail         = "fail"
	VerdictInputError   = "input error"
	VerdictBackendError = "backend error"
	// VerdictNondeterministic is a case whose every run passed but whose
	// outputs differed bitwise between runs (Nondeterministic).
	VerdictNondeterministic = "nondeterministic"
	// VerdictSlower is a case whose outputs passed but whose kernel times
	// are slower than a baseline's beyond the allowance, statistically
	// (a failed CheckSlowdown; check --baseline).
	VerdictSlower = "slower"
	// VerdictInefficient is a case whose outputs passed but whose kernel
	// is further from the device's roofline than allowed (a failed
	// CheckEfficiency; check --min-efficiency).
	VerdictInefficient = "inefficient"
)

// The performance checks on kernel times: a failed one gives its own
// verdict (VerdictSlower, VerdictInefficient) rather than VerdictFail, so
// that a slow but correct kernel is told apart from a wrong one.
const (
	CheckSlowdown   = "slowdown"
	CheckEfficiency = "efficiency"
)

// Verdict is VerdictPass, VerdictFail, VerdictInputError,
// VerdictBackendError, VerdictNondeterministic, VerdictSlower or
// VerdictInefficient, in this precedence: a case that could not be judged,
// then one that failed a check, then one that passed but disagreed with
// itself between runs, then a correct one that is slower than its
// baseline, then one too far from its roofline. An error that is not an
// InputError counts as the backend's: the case could not be judged, and
// nothing says the case is at fault.
func (o *Outcome) Verdict() string {
	switch {
	case o.Err != nil && !IsInput(o.Err):
		return VerdictBackendError
	case o.Err != nil || o.Result == nil:
		return VerdictInputError
	case !o.Result.Pass():
		return VerdictFail
	}
	slower, inefficient := false, false
	for _, k := range o.Checks {
		switch {
		case k.Pass:
		case k.Name == CheckSlowdown:
			slower = true
		case k.Name == CheckEfficiency:
			inefficient = true
		default:
			return VerdictFail
		}
	}
	switch {
	case len(o.Nondeterministic) > 0:
		return VerdictNondeterministic
	case slower:
		return VerdictSlower
	case inefficient:
		return VerdictInefficient
	}
	return VerdictPass
}

// Pass reports whether the case was judged and every verdict and check
// passed.
func (o *Outcome) Pass() bool { return o.Verdict() == VerdictPass }

// Ran is the case as it ran: the result's copy (params validated, defaults
// filled) when there is one, else Case.
func (o *Outcome) Ran() ops.Case {
	if o.Result != nil {
		return o.Result.Case
	}
	return o.Case
}

// Tightness is the largest bound tightness over the case's outputs (NaN
// when there is no result).
func (o *Outcome) Tightness() float64 {
	if o.Result == nil || o.Result.Verify == nil {
		return math.NaN()
	}
	t := 0.0
	for _, out := range o.Result.Verify.Outputs {
		t = math.Max(t, out.Metrics.Tightness)
	}
	return t
}

// Failure renders why the case failed ("" when it passed): the error, or
// the verifier's failure report followed by one line per failed check and
// one per output that differed between runs, each naming the case.
func (o *Outcome) Failure() string {
	if o.Pass() {
		return ""
	}
	if o.Err != nil {
		return fmt.Sprintf("%s: %v", o.ID, o.Err)
	}
	if o.Result == nil {
		return fmt.Sprintf("%s: not run", o.ID)
	}
	s := o.Result.Verify.Failure()
	for _, k := range o.Checks {
		if !k.Pass {
			if s != "" {
				s += "\n"
			}
			s += fmt.Sprintf("%s: %s: %s: %s", Subject(o.Ran()), o.ID, k.Name, k.Detail)
		}
	}
	for _, d := range o.Nondeterministic {
		if s != "" {
			s += "\n"
		}
		s += fmt.Sprintf("%s: %s: nondeterministic: %s", Subject(o.Ran()), o.ID, d)
	}
	return s
}
