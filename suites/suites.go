// Package suites holds the Ginkgo specs that check an operator
// implementation, written against a backend the way gonum's testblas is
// written against a BLAS: any backend can be handed to them. The emulator
// runs them in CI; a real kernel runs them through the exec backend.
//
// Specs carry labels: UT (one op, one concern), ST (through backends,
// golden files, the CLI), perf (cost-model budgets), op:<name> and
// dtype:<name>. Every failure message starts with op, params and seed, and
// ends with got / want / bound.
package suites

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/suites/matchers"
)

// Backend yields the implementation under test. It is called when a spec
// runs, not when specs are declared, so the suite's BeforeSuite can set it
// up.
type Backend func() backend.Backend

// runWithinBound runs c on b and asserts every output is within its bound
// and every input came back untouched.
func runWithinBound(ctx context.Context, b backend.Backend, c ops.Case) *harness.Result {
	GinkgoHelper()
	res, err := harness.Run(ctx, b, c, harness.Options{})
	Expect(err).NotTo(HaveOccurred(), "%s: run on backend %s", c.Subject(), b.Name())
	for name, got := range res.Outputs {
		Expect(got).To(matchers.BeWithinBound(res.Expected[name], c.Subject()), "output %q", name)
	}
	Expect(res.Verify.Pass).To(BeTrue(), "%s", res.Verify.Failure())
	return res
}

// caseName is a readable, unique spec and case name.
func caseName(format string, args ...any) string { return fmt.Sprintf(format, args...) }
