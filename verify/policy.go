package verify

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// Policy is a named accuracy standard (docs/accuracy.md). Implementations are
// immutable values, safe for concurrent use.
type Policy interface {
	// Name is the canonical spelling including options, e.g.
	// "allclose(rtol=0.001,atol=1e-05)"; ParsePolicy(p.Name()) returns an
	// equivalent policy.
	Name() string
	// Judge applies the policy to one output.
	Judge(in Input) Verdict
}

// Input is what a policy judges: one output.
type Input struct {
	Got  *tensor.Tensor
	Want *bound.Expected
	// Golden holds the expected bits for `exact`, and the trusted outputs
	// (the emulator's, on the same inputs) whose error metrics
	// `ascend-dual` compares with; nil when there is none (both then fail,
	// saying so). Other policies ignore it.
	Golden *tensor.Tensor
}

// Verdict is a policy's judgement of one output.
type Verdict struct {
	Policy string `json:"policy"` // the policy's Name()
	Pass   bool   `json:"pass"`
	// Reason is one line: why the output failed, or a summary of why it
	// passed.
	Reason string `json:"reason"`
	// Failures are up to WorstCount elements that violate the policy,
	// worst first (exact: the first differing elements by index). Element
	// Bound is what the policy allowed there.
	Failures []Element `json:"failures,omitempty"`
	Metrics  Metrics   `json:"metrics"`
}

// judger is implemented by every policy of this package: judge gets an
// input already validated by validate, and the output's metrics.
type judger interface {
	Policy
	needsWant() bool
	judge(in Input, m *Metrics) Verdict
}

// validate returns why in cannot be judged, or "".
func validate(in Input, needWant bool) string {
	if in.Got == nil {
		return "no output tensor"
	}
	w := in.Want
	if w == nil {
		if needWant {
			return "no reference (bound.Expected) for this output"
		}
		return ""
	}
	if err := w.Check(); err != nil {
		return err.Error()
	}
	if in.Got.Len() != w.Len() {
		return fmt.Sprintf("got %s with %d elements, want %d elements", in.Got, in.Got.Len(), w.Len())
	}
	return ""
}

// run validates in, computes metrics unless m is given, and judges.
func run(p judger, in Input, m *Metrics) Verdict {
	if reason := validate(in, p.needsWant()); reason != "" {
		var mm Metrics
		if in.Got != nil {
			mm = Metrics{N: in.Got.Len(), UlpHist: map[string]int{}, Cosine: 1}
		}
		return Verdict{Policy: p.Name(), Reason: reason, Metrics: mm}
	}
	if m == nil {
		mm := Compute(in.Got, in.Want)
		m = &mm
	}
	v := p.judge(in, m)
	v.Policy = p.Name()
	v.Metrics = *m
	return v
}

// policySpec describes one policy for ParsePolicy and PolicyNames.
type policySpec struct {
	name    string
	usage   string
	options []string // allowed option keys; options[0] may be given bare ("ulp:2")
	make    func(opt map[string]float64) (Policy, error)
}

var specs = []policySpec{
	{name: "bound", usage: "bound", make: func(map[string]float64) (Policy, error) { return boundPolicy{}, nil }},
	{name: "exact", usage: "exact", make: func(map[string]float64) (Policy, error) { return exactPolicy{}, nil }},
	{name: "allclose", usage: "allclose[:rtol=R,atol=A]", options: []string{"rtol", "atol"},
		make: func(opt map[string]float64) (Policy, error) {
			p := allclosePolicy{}
			p.rtol, p.hasRtol = opt["rtol"]
			p.atol, p.hasAtol = opt["atol"]
			return p, nil
		}},
	{name: "ulp", usage: "ulp[:N]", options: []string{"n"},
		make: func(opt map[string]float64) (Policy, error) {
			n, ok := opt["n"]
			if !ok {
				n = DefaultULP
			}
			return ulpPolicy{n: n}, nil
		}},
	{name: "ascend-thousandth", usage: "ascend-thousandth[:n=N]", options: []string{"n"},
		make: func(opt map[string]float64) (Policy, error) {
			n, ok := opt["n"]
			if !ok {
				n = 1
			}
			if n == 0 {
				return nil, fmt.Errorf("policy ascend-thousandth: n must be > 0")
			}
			return thousandthPolicy{n: n}, nil
		}},
	{name: "ascend-mere", usage: "ascend-mere", make: func(map[string]float64) (Policy, error) { return merePolicy{}, nil }},
	{name: "ascend-mixed", usage: "ascend-mixed", make: func(map[string]float64) (Policy, error) { return mixedPolicy{}, nil }},
	{name: "ascend-dual", usage: "ascend-dual", make: func(map[string]float64) (Policy, error) { return dualPolicy{}, nil }},
}

// DefaultULP is N for a bare "ulp": one unit in the last place of the
// output dtype, which a faithfully rounded result meets.
const DefaultULP = 1

// PolicyNames lists the policy names ParsePolicy accepts, default first.
func PolicyNames() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.name
	}
	return out
}

func policyUsages() string {
	u := make([]string, len(specs))
	for i, s := range specs {
		u[i] = s.usage
	}
	return strings.Join(u, ", ")
}

// DefaultPolicy returns the `bound` policy.
func DefaultPolicy() Policy { return boundPolicy{} }

// ParsePolicy parses a policy spelling:
//
//	bound                         (default; also the empty string)
//	exact
//	allclose | allclose:rtol=R,atol=A   (either option may be left out:
//	                                     it then takes the dtype default)
//	ulp | ulp:N | ulp:n=N         (N ≥ 0, default DefaultULP)
//	ascend-thousandth | ascend-thousandth:n=N   (N > 0, default 1)
//	ascend-mere
//	ascend-mixed
//	ascend-dual                   (needs the trusted outputs: Input.Golden)
//
// Options may also be written in parentheses, as Name() renders them:
// "allclose(rtol=0.001,atol=1e-05)". Values are decimal numbers or powers
// of two written 2^K (e.g. atol=2^-16), finite and ≥ 0. Unknown names,
// unknown or repeated options and bad values are errors that list what
// is valid.
func ParsePolicy(s string) (Policy, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return boundPolicy{}, nil
	}
	name, opts := s, ""
	hasOpts := false
	if i := strings.IndexAny(s, ":("); i >= 0 {
		name, opts, hasOpts = s[:i], s[i+1:], true
		if s[i] == '(' {
			if !strings.HasSuffix(opts, ")") {
				return nil, fmt.Errorf("policy %q: missing closing parenthesis", s)
			}
			opts = strings.TrimSuffix(opts, ")")
		}
	}
	name = strings.TrimSpace(name)
	var spec *policySpec
	for i := range specs {
		if specs[i].name == name {
			spec = &specs[i]
		}
	}
	if spec == nil {
		return nil, fmt.Errorf("unknown policy %q (want one of %s)", name, policyUsages())
	}
	opt := map[string]float64{}
	if hasOpts {
		if len(spec.options) == 0 {
			return nil, fmt.Errorf("policy %s takes no options, got %q", name, opts)
		}
		for _, kv := range strings.Split(opts, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			k, v, found := strings.Cut(kv, "=")
			if !found {
				k, v = spec.options[0], kv
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !contains(spec.options, k) {
				return nil, fmt.Errorf("policy %s: unknown option %q (want %s; usage %s)", name, k, strings.Join(spec.options, ", "), spec.usage)
			}
			if _, dup := opt[k]; dup {
				return nil, fmt.Errorf("policy %s: option %s given twice", name, k)
			}
			x, err := parseNumber(v)
			if err != nil {
				return nil, fmt.Errorf("policy %s: option %s: %v", name, k, err)
			}
			opt[k] = x
		}
	}
	return spec.make(opt)
}

// MustParsePolicy is ParsePolicy for spellings known to be valid (tests,
// package-level defaults); it panics on an error.
func MustParsePolicy(s string) Policy {
	p, err := ParsePolicy(s)
	if err != nil {
		panic(err)
	}
	return p
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseNumber parses a finite non-negative decimal or 2^K.
func parseNumber(v string) (float64, error) {
	var x float64
	if e, ok := strings.CutPrefix(v, "2^"); ok {
		k, err := strconv.Atoi(e)
		if err != nil {
			return 0, fmt.Errorf("bad power of two %q", v)
		}
		x = math.Ldexp(1, k)
	} else {
		var err error
		if x, err = strconv.ParseFloat(v, 64); err != nil {
			return 0, fmt.Errorf("bad number %q", v)
		}
	}
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0, fmt.Errorf("%q must be a finite number ≥ 0", v)
	}
	return math.Abs(x), nil // -0 → 0
}

// num renders an option value canonically ("0.001", "1e-05").
func num(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// optionsName renders "name(k=v,...)" for the given ordered options, or
// just name when there are none.
func optionsName(name string, kv ...string) string {
	if len(kv) == 0 {
		return name
	}
	parts := make([]string, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, kv[i]+"="+kv[i+1])
	}
	return name + "(" + strings.Join(parts, ",") + ")"
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
