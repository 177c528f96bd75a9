package verify

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// OutputResult holds the metrics and every policy's verdict for one output.
type OutputResult struct {
	Name     string       `json:"name"`
	DType    tensor.DType `json:"dtype"`
	Shape    []int        `json:"shape"`
	Metrics  Metrics      `json:"metrics"`
	Verdicts []Verdict    `json:"verdicts"` // in the order the policies were given
}

// Pass reports whether every verdict passed.
func (o *OutputResult) Pass() bool {
	for _, v := range o.Verdicts {
		if !v.Pass {
			return false
		}
	}
	return true
}

// Result is the outcome of Check.
type Result struct {
	Subject Subject        `json:"subject"`
	Outputs []OutputResult `json:"outputs"` // sorted by name
	Pass    bool           `json:"pass"`
}

// Check judges every output named in want with every policy (the `bound`
// policy when policies is empty) and returns all verdicts; it never stops
// at the first failure. Metrics are computed once per output.
//
// It returns an error, prefixed with the subject, when an output of want
// is missing from got (or nil), when got has an output want does not
// describe, when an Expected is malformed, or when an output's length
// differs from its Expected's: those are contract failures, not accuracy
// verdicts. golden may be nil or lack outputs (exact then fails, saying
// so); golden entries for unknown outputs are ignored.
func Check(s Subject, got map[string]*tensor.Tensor, want map[string]*bound.Expected, golden map[string]*tensor.Tensor, policies []Policy) (*Result, error) {
	if len(policies) == 0 {
		policies = []Policy{DefaultPolicy()}
	}
	if err := checkArgs(s, got, want, policies); err != nil {
		return nil, err
	}
	return checkValid(s, got, want, golden, policies), nil
}

// checkValid is Check for arguments checkArgs accepted.
func checkValid(s Subject, got map[string]*tensor.Tensor, want map[string]*bound.Expected, golden map[string]*tensor.Tensor, policies []Policy) *Result {
	names := sortedKeys(want)
	metrics := computeAll(names, got, want)
	return judgeAll(s, names, got, want, golden, metrics, policies, judgeInput)
}

// CheckVerdicts is Check for a judge that needs the verdicts, not the
// metrics of outputs that pass (a fuzzer's body). When every policy is
// `bound` and every output is Accepted, each gets a passing verdict whose
// Metrics hold N and nothing else (its Reason says so), having computed
// no metric; otherwise it returns what Check does, so that every failure
// it reports is Check's, word for word, and any other policy is judged
// as Check judges it. The verdicts are Check's in either case
// (TestCheckVerdictsMatchesCheck). Its errors are Check's.
func CheckVerdicts(s Subject, got map[string]*tensor.Tensor, want map[string]*bound.Expected, golden map[string]*tensor.Tensor, policies []Policy) (*Result, error) {
	if len(policies) == 0 {
		policies = []Policy{DefaultPolicy()}
	}
	if err := checkArgs(s, got, want, policies); err != nil {
		return nil, err
	}
	for _, p := range policies {
		if _, ok := p.(boundPolicy); !ok {
			return checkValid(s, got, want, golden, policies), nil
		}
	}
	names := sortedKeys(want)
	for _, name := range names {
		if !Accepted(got[name], want[name]) {
			return checkValid(s, got, want, golden, policies), nil
		}
	}
	metrics := make([]Metrics, len(names))
	for k, name := range names {
		metrics[k] = Metrics{N: got[name].Len(), UlpHist: map[string]int{}, Cosine: 1, FirstBad: -1}
	}
	return judgeAll(s, names, got, want, golden, metrics, policies, acceptedVerdict), nil
}

// acceptedVerdict is the bound policy's verdict on an Accepted output
// whose metrics were not computed (m holds N alone).
func acceptedVerdict(p Policy, _ Input, m *Metrics) Verdict {
	return Verdict{Policy: p.Name(), Pass: true, Reason: fmt.Sprintf("all %d elements within bound (metrics not computed)", m.N), Metrics: *m}
}

// checkArgs returns Check's error for its arguments, nil when it can
// judge them.
func checkArgs(s Subject, got map[string]*tensor.Tensor, want map[string]*bound.Expected, policies []Policy) error {
	var errs []string
	for i, p := range policies {
		if p == nil {
			errs = append(errs, fmt.Sprintf("policy %d is nil", i))
		}
	}
	for _, name := range sortedKeys(got) {
		if _, ok := want[name]; !ok {
			errs = append(errs, fmt.Sprintf("output %q: not in the expected outputs (%s)", name, strings.Join(sortedKeys(want), ", ")))
		}
	}
	for _, name := range sortedKeys(want) {
		t, w := got[name], want[name]
		switch {
		case t == nil:
			errs = append(errs, fmt.Sprintf("output %q: missing", name))
		case w == nil:
			errs = append(errs, fmt.Sprintf("output %q: no expected set", name))
		default:
			if reason := validate(Input{Got: t, Want: w}, true); reason != "" {
				errs = append(errs, fmt.Sprintf("output %q: %s", name, reason))
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(s.String() + ": " + strings.Join(errs, "; "))
	}
	return nil
}

// judgeInput is one policy's verdict on in, given its metrics m.
func judgeInput(p Policy, in Input, m *Metrics) Verdict {
	if j, ok := p.(judger); ok {
		return run(j, in, m)
	}
	v := p.Judge(in)
	if v.Policy == "" {
		v.Policy = p.Name()
	}
	return v
}

// judgeMetrics is a metricsJudger's verdict from the metrics m alone.
func judgeMetrics(p Policy, in Input, m *Metrics) Verdict {
	v := p.(metricsJudger).judge(in, m)
	v.Policy, v.Metrics = p.Name(), *m
	return v
}

// judgeAll judges each output of names, whose metrics are metrics[k], with
// every policy by judge.
func judgeAll(s Subject, names []string, got map[string]*tensor.Tensor, want map[string]*bound.Expected, golden map[string]*tensor.Tensor, metrics []Metrics, policies []Policy, judge func(Policy, Input, *Metrics) Verdict) *Result {
	res := &Result{Subject: s, Pass: true}
	for k, name := range names {
		in := Input{Got: got[name], Want: want[name], Golden: golden[name]}
		m := metrics[k]
		out := OutputResult{Name: name, DType: in.Got.DType, Shape: append([]int(nil), in.Got.Shape...), Metrics: m}
		for _, p := range policies {
			out.Verdicts = append(out.Verdicts, judge(p, in, &m))
		}
		if !out.Pass() {
			res.Pass = false
		}
		res.Outputs = append(res.Outputs, out)
	}
	return res
}

// metricsJudger is a policy whose verdict reads nothing but the output's
// Metrics (judge ignores the Input).
type metricsJudger interface {
	judger
	metricsOnly()
}

// MetricsOnly reports whether p judges an output by its Metrics alone
// (the bound policy), so that it can judge an output whose Expected was
// never whole: one a Stream computed the metrics of (CheckMetrics).
func MetricsOnly(p Policy) bool {
	_, ok := p.(metricsJudger)
	return ok
}

// CheckMetrics is Check for outputs whose Metrics were computed already,
// a block at a time (Stream): it judges every output with every policy
// (the bound policy when policies is empty). Its errors are Check's for
// an output metrics describes but got lacks (or the reverse) or whose
// length differs from its Metrics.N, and a policy that is not
// MetricsOnly.
func CheckMetrics(s Subject, got map[string]*tensor.Tensor, metrics map[string]Metrics, policies []Policy) (*Result, error) {
	if len(policies) == 0 {
		policies = []Policy{DefaultPolicy()}
	}
	var errs []string
	for i, p := range policies {
		if !MetricsOnly(p) {
			errs = append(errs, fmt.Sprintf("policy %d (%v) does not judge by the metrics alone", i, p))
		}
	}
	for _, name := range sortedKeys(got) {
		if _, ok := metrics[name]; !ok {
			errs = append(errs, fmt.Sprintf("output %q: not in the expected outputs (%s)", name, strings.Join(sortedKeys(metrics), ", ")))
		}
	}
	names := sortedKeys(metrics)
	ms := make([]Metrics, len(names))
	for k, name := range names {
		t, m := got[name], metrics[name]
		switch {
		case t == nil:
			errs = append(errs, fmt.Sprintf("output %q: missing", name))
		case t.Len() != m.N:
			errs = append(errs, fmt.Sprintf("output %q: got %s with %d elements, want %d elements", name, t, t.Len(), m.N))
		}
		ms[k] = m
	}
	if len(errs) > 0 {
		return nil, errors.New(s.String() + ": " + strings.Join(errs, "; "))
	}
	return judgeAll(s, names, got, nil, nil, ms, policies, judgeMetrics), nil
}

// AddFailure records a failed check that is not an accuracy policy, such
// as "inputs-unchanged" (the backend modified an input), under name (an
// output or an input): it appends a failing Verdict{Policy: check,
// Reason: reason} to the entry of Outputs with that name, creating the
// entry in name order when there is none (without dtype, shape or
// metrics), and marks r failed. Failure reports it like any verdict.
func (r *Result) AddFailure(name, check, reason string) {
	r.Pass = false
	v := Verdict{Policy: check, Reason: reason}
	i := sort.Search(len(r.Outputs), func(i int) bool { return r.Outputs[i].Name >= name })
	if i < len(r.Outputs) && r.Outputs[i].Name == name {
		r.Outputs[i].Verdicts = append(r.Outputs[i].Verdicts, v)
		return
	}
	r.Outputs = slices.Insert(r.Outputs, i, OutputResult{Name: name, Verdicts: []Verdict{v}})
}

// Failure renders the failure report, or "" when r passed:
//
//	gemm mode=fp16 seed=7 [edge]: 1 of 2 verdicts failed
//	output "out", policy bound: 3 of 64 elements out of bound (tightness 2.5)
//	  [17] (2,1) got=1.5, want=1.25, bound=0.000977
//
// The first line names the subject (op, params, seed, case); each failing
// (output, policy) pair follows with its reason and its worst elements,
// each element line ending with got / want / bound.
func (r *Result) Failure() string {
	if r == nil || r.Pass {
		return ""
	}
	total, failed := 0, 0
	for _, o := range r.Outputs {
		for _, v := range o.Verdicts {
			total++
			if !v.Pass {
				failed++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d of %d verdicts failed\n", r.Subject, failed, total)
	for _, o := range r.Outputs {
		for _, v := range o.Verdicts {
			if v.Pass {
				continue
			}
			if o.DType.Valid() {
				fmt.Fprintf(&b, "output %q (%s%v), ", o.Name, o.DType, o.Shape)
			} else {
				fmt.Fprintf(&b, "%q, ", o.Name)
			}
			fmt.Fprintf(&b, "policy %s: %s", v.Policy, v.Details(o.Shape))
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Details renders the verdict's reason and its failing elements, one per
// line, each line ending in a newline; element lines are indented by two
// spaces and end with got / want / bound (see FormatElement).
func (v Verdict) Details(shape []int) string {
	var b strings.Builder
	b.WriteString(v.Reason)
	b.WriteByte('\n')
	for _, e := range v.Failures {
		b.WriteString("  ")
		b.WriteString(FormatElement(e, shape))
		b.WriteByte('\n')
	}
	return b.String()
}

// FormatElement renders e as
//
//	[17] (2,1) note: got=1.5, want=1.25, bound=0.000977
//
// with the coordinates only for rank ≥ 2 shapes and the note only when
// set. want is the reference, followed by "or +inf|nan" when other
// non-finite classes are also accepted there.
func FormatElement(e Element, shape []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d]", e.Index)
	if c := coords(e.Index, shape); c != "" {
		b.WriteString(" " + c)
	}
	if e.Note != "" {
		b.WriteString(" " + e.Note + ":")
	}
	want := FormatValue(e.Ref)
	if extra := e.Alt &^ bound.Of(e.Ref); extra != 0 {
		want += " or " + extra.String()
	}
	fmt.Fprintf(&b, " got=%s, want=%s, bound=%s", FormatValue(e.Got), want, formatBound(e.Bound))
	return b.String()
}

// coords renders the row-major coordinates of flat index i, "(2,1)", for
// shapes of rank ≥ 2, and "" otherwise.
func coords(i int, shape []int) string {
	if len(shape) < 2 {
		return ""
	}
	c := make([]string, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] <= 0 {
			return ""
		}
		c[d] = strconv.Itoa(i % shape[d])
		i /= shape[d]
	}
	return "(" + strings.Join(c, ",") + ")"
}

// FormatValue renders x exactly and briefly: the shortest decimal that
// reads back as x, as a float32 when x is a float32 value (every fp16,
// bf16 and fp32 value is), so fp16 0.1 prints as 0.099975586.
func FormatValue(x float64) string {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "+Inf"
	case math.IsInf(x, -1):
		return "-Inf"
	}
	if float64(float32(x)) == x {
		return strconv.FormatFloat(x, 'g', -1, 32)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// formatBound renders a tolerance with 4 significant digits.
func formatBound(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return FormatValue(x)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// concurrentOutput is the fewest elements an output has for Check to
// compute its metrics concurrently with the other outputs'.
const concurrentOutput = 1 << 16

// computeAll returns Compute(got[name], want[name]) for each name. The
// large outputs' metrics are computed at once (the last on the calling
// goroutine): each Compute has stretches that one core runs, the sums
// added in index order while the terms are computed, which another
// output's work then fills. Each output's metrics are what Compute
// returns alone; small outputs (a fuzzer's) are computed in turn,
// without goroutines.
func computeAll(names []string, got map[string]*tensor.Tensor, want map[string]*bound.Expected) []Metrics {
	ms := make([]Metrics, len(names))
	var wg sync.WaitGroup
	last := -1
	for k, name := range names {
		if g := got[name]; g == nil || g.Len() < concurrentOutput {
			ms[k] = Compute(got[name], want[name])
			continue
		}
		if j := last; j >= 0 {
			wg.Go(func() { ms[j] = Compute(got[names[j]], want[names[j]]) })
		}
		last = k
	}
	if last >= 0 {
		ms[last] = Compute(got[names[last]], want[names[last]])
	}
	wg.Wait()
	return ms
}
