package suites

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/npuverify/npuverify/ops"
)

// The environment the suites read, besides NPUVERIFY_BACKEND and LongEnv.
const (
	// OpsEnv names the ops the backend under test implements
	// (NPUVERIFY_OPS=vector_add,gemm): a kernel for some ops is held to
	// those alone, and the specs of every other op are not run.
	OpsEnv = "NPUVERIFY_OPS"
	// DirEnv overrides the directory relative paths in NPUVERIFY_BACKEND
	// resolve against (see UserDir).
	DirEnv = "NPUVERIFY_DIR"
)

// The labels the specs carry, fixed names and prefixes: a label filter
// (go test ./suites -ginkgo.label-filter='…') selects by them, and
// docs/testing-your-kernel.md lists them (a test holds the page and the
// spec tree to these lists).
const (
	LabelUT            = "UT"             // one op, one concern
	LabelST            = "ST"             // through backends, golden files, the CLI
	LabelPerf          = "perf"           // cost-model budgets (the emulator's)
	LabelLongSweep     = "long"           // the long sweep, run with NPUVERIFY_LONG=1
	LabelEmulator      = "emulator"       // tests the emulator itself, whatever the backend
	LabelOpIndependent = "op-independent" // about no op in particular
	PrefixOp           = "op:"            // the op a spec is about: exactly one per spec, or op-independent
	PrefixDType        = "dtype:"         // the dtype a spec is about
	PrefixMode         = "mode:"          // the op's mode (gemm's fp16_fp32acc, …)
)

// LabelNames are the fixed label names, LabelPrefixes the label prefixes,
// in the order the documentation lists them.
var (
	LabelNames    = []string{LabelUT, LabelST, LabelPerf, LabelLongSweep, LabelEmulator, LabelOpIndependent}
	LabelPrefixes = []string{PrefixOp, PrefixDType, PrefixMode}
)

// ParseOps parses an OpsEnv value: op names separated by commas (blanks
// around them ignored). Empty means every op (nil). An unknown name is an
// error listing the valid ones.
func ParseOps(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var names []string
	for _, f := range strings.Split(s, ",") {
		name := strings.TrimSpace(f)
		if name == "" {
			continue
		}
		if !slices.Contains(ops.Names(), name) {
			return nil, fmt.Errorf("%s: unknown op %q: valid ops are %s", OpsEnv, name, strings.Join(ops.Names(), ", "))
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s=%q names no op: valid ops are %s", OpsEnv, s, strings.Join(ops.Names(), ", "))
	}
	return names, nil
}

// Scope is what a run of the suites holds the backend to.
type Scope struct {
	// Backend is the backend's name.
	Backend string
	// Emulator is set when the backend is the emulator: the emulator-only
	// specs (label emulator) run only then.
	Emulator bool
	// Ops are the ops the backend implements; nil is every op.
	Ops []string
}

// Skipped returns the ops out of scope, in ops.Names order.
func (s Scope) Skipped() []string {
	if s.Ops == nil {
		return nil
	}
	var out []string
	for _, name := range ops.Names() {
		if !slices.Contains(s.Ops, name) {
			out = append(out, name)
		}
	}
	return out
}

// LabelFilter returns the Ginkgo label filter that runs the specs in
// scope, combined with user (the -ginkgo.label-filter given, "" for
// none): the specs of the ops in Ops and the op-independent ones, not
// the emulator-only ones unless the backend is the emulator. "" when the
// scope filters nothing.
func (s Scope) LabelFilter(user string) string {
	var parts []string
	if user != "" {
		parts = append(parts, "("+user+")")
	}
	if s.Ops != nil {
		alts := []string{"!/^" + PrefixOp + "/"}
		for _, name := range s.Ops {
			alts = append(alts, PrefixOp+name)
		}
		parts = append(parts, "("+strings.Join(alts, " || ")+")")
	}
	if !s.Emulator {
		parts = append(parts, "!"+LabelEmulator)
	}
	return strings.Join(parts, " && ")
}

// Banner is the one line a run of the suites starts with: the backend,
// the ops it is held to and what is skipped, and why.
func (s Scope) Banner() string {
	var b strings.Builder
	fmt.Fprintf(&b, "npuverify suites: backend %s", s.Backend)
	if s.Ops == nil {
		b.WriteString(" implements every op")
	} else {
		fmt.Fprintf(&b, " implements %s; skipping %s (%s)", strings.Join(s.Ops, ", "), orNone(s.Skipped()), OpsEnv)
	}
	if !s.Emulator {
		fmt.Fprintf(&b, "; skipping the emulator-only specs (label %s)", LabelEmulator)
	}
	return b.String()
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "no op"
	}
	return strings.Join(names, ", ")
}

// UserDir returns the directory the user ran the suites from, against
// which relative paths in NPUVERIFY_BACKEND resolve: DirEnv when set,
// else the working directory of the process that started this one (go
// test runs a suite's binary in the package's directory and sets PWD to
// it too, but is itself started where the user stands; the ginkgo CLI
// and a shell running the binary are too), else "" (the suite's own
// directory). Reading the parent's directory needs /proc (Linux).
func UserDir() string {
	if d := os.Getenv(DirEnv); d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			return abs
		}
		return d
	}
	if runtime.GOOS != "linux" {
		return ""
	}
	d, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(os.Getppid()), "cwd"))
	if err != nil || !filepath.IsAbs(d) {
		return ""
	}
	return d
}

// OpLabel returns the op a spec is about (its op: label) and whether it
// has exactly one, or is op-independent.
func OpLabel(labels []string) (op string, ok bool) {
	n := 0
	for _, l := range labels {
		if v, found := strings.CutPrefix(l, PrefixOp); found {
			op = v
			n++
		}
	}
	indep := slices.Contains(labels, LabelOpIndependent)
	switch {
	case n == 1 && !indep:
		return op, true
	case n == 0 && indep:
		return "", true
	}
	return "", false
}

// LabelProblems returns, for each spec of r, what is wrong with its
// labels: not exactly one op: label (nor op-independent), an op: label
// naming no op, or a label that is neither in LabelNames nor has a
// prefix of LabelPrefixes (the documentation would not list it).
func LabelProblems(r types.Report) []string {
	var out []string
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		labels := sr.Labels()
		op, ok := OpLabel(labels)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%q: labels %v: want exactly one %s<name> label or %q", sr.FullText(), labels, PrefixOp, LabelOpIndependent))
		case op != "" && !slices.Contains(ops.Names(), op):
			out = append(out, fmt.Sprintf("%q: label %s%s names no op (valid: %s)", sr.FullText(), PrefixOp, op, strings.Join(ops.Names(), ", ")))
		}
		for _, l := range labels {
			if !slices.Contains(LabelNames, l) && !slices.ContainsFunc(LabelPrefixes, func(p string) bool { return strings.HasPrefix(l, p) }) {
				out = append(out, fmt.Sprintf("%q: label %q is not in suites.LabelNames nor has a prefix of suites.LabelPrefixes", sr.FullText(), l))
			}
		}
	}
	return out
}

// Tally counts the specs of one op (or the op-independent ones) by how
// they ended.
type Tally struct {
	Op                                  string // "" for the op-independent specs
	Ran, Passed, Failed, Skipped, Total int
}

// Summarize tallies r's specs per op, in ops.Names order, the
// op-independent ones last; ops with no spec are left out.
func Summarize(r types.Report) []Tally {
	by := map[string]*Tally{}
	for _, sr := range r.SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		op, _ := OpLabel(sr.Labels())
		t := by[op]
		if t == nil {
			t = &Tally{Op: op}
			by[op] = t
		}
		t.Total++
		switch {
		case sr.State.Is(types.SpecStatePassed):
			t.Ran++
			t.Passed++
		case sr.State.Is(types.SpecStateFailureStates):
			t.Ran++
			t.Failed++
		default:
			t.Skipped++
		}
	}
	var out []Tally
	for _, name := range append(ops.Names(), "") {
		if t := by[name]; t != nil {
			out = append(out, *t)
			delete(by, name)
		}
	}
	for _, t := range by { // an op: label naming no op (LabelProblems reports it)
		out = append(out, *t)
	}
	return out
}

// RenderSummary renders the run's summary: per op, the specs run against
// the backend, passed, failed and skipped (filtered out or skipped while
// running), and a total line naming the backend.
func RenderSummary(backendName string, tallies []Tally) string {
	var b strings.Builder
	fmt.Fprintf(&b, "npuverify suites summary, backend %s:\n", backendName)
	fmt.Fprintf(&b, "  %-18s %6s %6s %6s %7s\n", "op", "ran", "passed", "failed", "skipped")
	var sum Tally
	for _, t := range tallies {
		name := t.Op
		if name == "" {
			name = "(" + LabelOpIndependent + ")"
		}
		fmt.Fprintf(&b, "  %-18s %6d %6d %6d %7d\n", name, t.Ran, t.Passed, t.Failed, t.Skipped)
		sum.Ran += t.Ran
		sum.Passed += t.Passed
		sum.Failed += t.Failed
		sum.Skipped += t.Skipped
	}
	fmt.Fprintf(&b, "  %-18s %6d %6d %6d %7d\n", "total", sum.Ran, sum.Passed, sum.Failed, sum.Skipped)
	return b.String()
}
