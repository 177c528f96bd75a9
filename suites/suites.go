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
	"github.com/npuverify/npuverify/opdb"
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
	Expect(err).NotTo(HaveOccurred(), "%s: run on backend %s", harness.Subject(c), b.Name())
	for name, got := range res.Outputs {
		Expect(got).To(matchers.BeWithinBound(res.Expected[name], harness.Subject(c)), "output %q", name)
	}
	Expect(res.Verify.Pass).To(BeTrue(), "%s", res.Verify.Failure())
	return res
}

// caseName is a readable, unique spec and case name.
func caseName(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// opSpecs maps an op to the declaration of its UT specs against a
// backend; each op's suite file (suites/<op>.go) adds its own entry.
var opSpecs = map[string]func(Backend) bool{}

// registerOp adds op's spec declaration; it is called once per op, from
// the op's own file.
func registerOp(op string, describe func(Backend) bool) bool {
	if _, dup := opSpecs[op]; dup {
		panic("suites: duplicate specs for " + op)
	}
	opSpecs[op] = describe
	return true
}

// HasSpecs reports whether op has UT specs in this package (the opdb
// conformance test requires it of every registered op).
func HasSpecs(op string) bool { _, ok := opSpecs[op]; return ok }

// DescribeOps declares the UT specs of every op registered in opdb
// against b, the way OpInfo's generic tests loop over op_db. An op
// without specs gets one failing spec naming it, so the gap shows in the
// suite run as well as in the conformance test.
func DescribeOps(b Backend) bool {
	for _, name := range opdb.Names() {
		if describe, ok := opSpecs[name]; ok {
			describe(b)
			continue
		}
		Describe(name, Label("UT", "op:"+name), func() {
			It("has UT specs", func() {
				Fail(fmt.Sprintf("%s: no specs in package suites (add suites/%s.go)", name, name))
			})
		})
	}
	return true
}
