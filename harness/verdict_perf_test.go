package harness

import (
	"testing"

	"github.com/npuverify/npuverify/verify"
)

// TestVerdictPerfChecks: a failed slowdown or efficiency check gives its
// own verdict, below every other finding: a wrong result stays "fail", a
// failed budget of another kind stays "fail", a nondeterministic one
// stays "nondeterministic"; slower wins over inefficient.
func TestVerdictPerfChecks(t *testing.T) {
	slow := Check{Name: CheckSlowdown, Detail: "slower"}
	ineff := Check{Name: CheckEfficiency, Detail: "inefficient"}
	other := Check{Name: "budget cycles", Detail: "over"}
	ok := Check{Name: CheckSlowdown, Pass: true, Detail: "insufficient samples"}
	for _, tc := range []struct {
		name    string
		pass    bool
		checks  []Check
		nondet  []string
		verdict string
	}{
		{"passing check only", true, []Check{ok}, nil, VerdictPass},
		{"slower", true, []Check{slow}, nil, VerdictSlower},
		{"inefficient", true, []Check{ok, ineff}, nil, VerdictInefficient},
		{"slower and inefficient", true, []Check{ineff, slow}, nil, VerdictSlower},
		{"slower but wrong", false, []Check{slow}, nil, VerdictFail},
		{"slower and over another budget", true, []Check{slow, other}, nil, VerdictFail},
		{"slower and nondeterministic", true, []Check{slow}, []string{"output z differs"}, VerdictNondeterministic},
	} {
		o := Outcome{ID: "vector_add/x", Result: &Result{Verify: &verify.Result{Pass: tc.pass}}, Checks: tc.checks, Nondeterministic: tc.nondet}
		if got := o.Verdict(); got != tc.verdict {
			t.Errorf("%s: checks %v, accuracy pass %v: got %s, want %s", tc.name, tc.checks, tc.pass, got, tc.verdict)
		}
	}
}
