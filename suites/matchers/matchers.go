// Package matchers holds custom Gomega matchers for npuverify outputs.
//
// Each matcher judges an actual *tensor.Tensor and, on failure, reports
// in the harness's format: the first line is the subject (op, params,
// seed, case), the element lines end with got / want / bound (or the bit
// patterns for MatchGoldenBits).
//
//	Expect(out["z"]).To(matchers.BeWithinBound(want["z"], subject))
//	Expect(out["z"]).To(matchers.MatchGoldenBits(golden["z"], subject))
//	Expect(out["z"]).To(matchers.SatisfyPolicy(verify.MustParsePolicy("ascend-mere"), want["z"], nil, subject))
package matchers

import (
	"fmt"
	"strings"

	"github.com/onsi/gomega/types"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// BeWithinBound succeeds when every element of the actual *tensor.Tensor
// is accepted by want (the `bound` policy: within Expected.Bound, or an
// allowed non-finite class). A length mismatch is an error, not a
// failure, so it fails negated assertions too.
func BeWithinBound(want *bound.Expected, s verify.Subject) types.GomegaMatcher {
	return &policyMatcher{policy: verify.DefaultPolicy(), want: want, subject: s, what: "be within bound", needWant: true}
}

// SatisfyPolicy succeeds when policy p passes the actual *tensor.Tensor
// against want (and golden, for `exact`; either may be nil when p does not
// use it).
func SatisfyPolicy(p verify.Policy, want *bound.Expected, golden *tensor.Tensor, s verify.Subject) types.GomegaMatcher {
	return &policyMatcher{policy: p, want: want, golden: golden, subject: s, what: "satisfy policy " + policyName(p)}
}

// MatchGoldenBits succeeds when the actual *tensor.Tensor has golden's
// dtype, shape and every bit pattern (−0 ≠ +0, NaN payloads compared).
func MatchGoldenBits(golden *tensor.Tensor, s verify.Subject) types.GomegaMatcher {
	return &goldenMatcher{golden: golden, subject: s}
}

func policyName(p verify.Policy) string {
	if p == nil {
		return "<nil>"
	}
	return p.Name()
}

// tensorOf extracts the actual value.
func tensorOf(matcher string, actual any) (*tensor.Tensor, error) {
	t, ok := actual.(*tensor.Tensor)
	if !ok || t == nil {
		return nil, fmt.Errorf("%s expects a non-nil *tensor.Tensor, got %T", matcher, actual)
	}
	return t, nil
}

// policyMatcher backs BeWithinBound and SatisfyPolicy.
type policyMatcher struct {
	policy   verify.Policy
	want     *bound.Expected
	golden   *tensor.Tensor
	subject  verify.Subject
	what     string // "be within bound"
	needWant bool

	got     *tensor.Tensor // set by Match
	verdict verify.Verdict
}

func (m *policyMatcher) Match(actual any) (bool, error) {
	name := "SatisfyPolicy"
	if m.needWant {
		name = "BeWithinBound"
	}
	got, err := tensorOf(name, actual)
	if err != nil {
		return false, err
	}
	if m.policy == nil {
		return false, fmt.Errorf("%s: %s: nil policy", name, m.subject)
	}
	if m.needWant && m.want == nil {
		return false, fmt.Errorf("%s: %s: nil expected set", name, m.subject)
	}
	if m.want != nil && m.want.Len() != got.Len() {
		return false, fmt.Errorf("%s: %s: got %s with %d elements, want %d elements", name, m.subject, got, got.Len(), m.want.Len())
	}
	m.got = got
	m.verdict = m.policy.Judge(verify.Input{Got: got, Want: m.want, Golden: m.golden})
	return m.verdict.Pass, nil
}

func (m *policyMatcher) FailureMessage(any) string { return m.message(false) }

func (m *policyMatcher) NegatedFailureMessage(any) string { return m.message(true) }

// message is the one failure-message builder: subject, expectation,
// reason, then elements ending with got / want / bound. Negated (the
// output passed but should not have), it lists the elements closest to
// failing: the verdict's own elements, or the worst by err/bound.
func (m *policyMatcher) message(negated bool) string {
	var b strings.Builder
	b.WriteString(m.subject.String())
	b.WriteByte('\n')
	to := "to " + m.what
	if negated {
		to = "not " + to
	}
	fmt.Fprintf(&b, "Expected %s %s\n", describe(m.got), to)
	v := m.verdict
	if negated {
		b.WriteString("but it does: ")
		if len(v.Failures) == 0 {
			v.Failures = v.Metrics.Worst
		}
	}
	b.WriteString(v.Details(shapeOf(m.got)))
	return strings.TrimSuffix(b.String(), "\n")
}

// goldenMatcher backs MatchGoldenBits.
type goldenMatcher struct {
	golden  *tensor.Tensor
	subject verify.Subject

	got   *tensor.Tensor // set by Match
	diffs []verify.Element
	ndiff int
}

func (m *goldenMatcher) Match(actual any) (bool, error) {
	got, err := tensorOf("MatchGoldenBits", actual)
	if err != nil {
		return false, err
	}
	if m.golden == nil {
		return false, fmt.Errorf("MatchGoldenBits: %s: nil golden tensor", m.subject)
	}
	m.got = got
	m.diffs, m.ndiff = nil, 0
	if got.DType != m.golden.DType || !got.SameShape(m.golden.Shape) {
		return false, nil
	}
	m.diffs, m.ndiff = verify.BitDiff(got, m.golden, verify.WorstCount)
	return m.ndiff == 0, nil
}

func (m *goldenMatcher) FailureMessage(any) string { return m.message(false) }

func (m *goldenMatcher) NegatedFailureMessage(any) string { return m.message(true) }

func (m *goldenMatcher) message(negated bool) string {
	var b strings.Builder
	b.WriteString(m.subject.String())
	b.WriteByte('\n')
	to := "to match golden bits of " + describe(m.golden)
	if negated {
		to = "not " + to
	}
	fmt.Fprintf(&b, "Expected %s %s\n", describe(m.got), to)
	switch {
	case negated:
		fmt.Fprintf(&b, "but all %d elements are bit-identical", m.got.Len())
	case m.got.DType != m.golden.DType:
		fmt.Fprintf(&b, "dtype %s, golden has %s", m.got.DType, m.golden.DType)
	case !m.got.SameShape(m.golden.Shape):
		fmt.Fprintf(&b, "shape %v, golden has %v", m.got.Shape, m.golden.Shape)
	default:
		fmt.Fprintf(&b, "%d of %d elements differ (first %d by index):", m.ndiff, m.got.Len(), len(m.diffs))
		digits := 2 * m.got.DType.Size()
		for _, e := range m.diffs {
			fmt.Fprintf(&b, "\n  [%d] got=0x%0*x (%s), want=0x%0*x (%s)", e.Index,
				digits, m.got.Bits(e.Index), verify.FormatValue(e.Got),
				digits, m.golden.Bits(e.Index), verify.FormatValue(e.Ref))
		}
	}
	return b.String()
}

func describe(t *tensor.Tensor) string {
	if t == nil {
		return "<nil tensor>"
	}
	return t.String()
}

func shapeOf(t *tensor.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}
