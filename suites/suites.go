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
	"os"
	"slices"
	"strings"

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

// LongEnv, set to anything, runs the long sweep: the samples labelled
// opdb.LabelLong, which the default run skips.
const LongEnv = "NPUVERIFY_LONG"

// skipUnlessLong skips the running spec unless LongEnv is set.
func skipUnlessLong() {
	if os.Getenv(LongEnv) == "" {
		Skip("long sweep: set " + LongEnv + "=1")
	}
}

// opSpecs maps an op to the specs specific to it (properties a sample
// table cannot state), declared inside the op's Describe; each op's file
// (suites/<op>.go), where it has one, adds its entry.
var opSpecs = map[string]func(Backend){}

// registerOp adds op's own specs; it is called once per op, from the op's
// own file.
func registerOp(op string, describe func(Backend)) bool {
	if _, dup := opSpecs[op]; dup {
		panic("suites: duplicate specs for " + op)
	}
	opSpecs[op] = describe
	return true
}

// DescribeOps declares the UT specs of every op registered in opdb
// against b, the way OpInfo's generic tests loop over op_db: every sample
// of the op's record (opdb.Info.Samples) is within its bound on b, grouped
// in a Context per "mode:" or "dtype:" label, the long sweep in a table of
// its own; then the op's own specs, if it has any. An op without samples
// gets one failing spec naming it, so the gap shows in the suite run as
// well as in the conformance test. Aim the suites at a kernel that
// implements some ops with Ginkgo's --label-filter (op:<name>, dtype:…).
func DescribeOps(b Backend) bool {
	for _, info := range opdb.All() {
		name := info.Name()
		Describe(name, Label("UT", "op:"+name), func() {
			var samples []ops.Case
			if info.Samples != nil {
				samples = info.Samples()
			}
			if len(samples) == 0 {
				It("has samples", func() {
					Fail(fmt.Sprintf("%s: its record has no samples (opdb.Info.Samples)", name))
				})
			}
			describeSamples(b, samples)
			if own, ok := opSpecs[name]; ok {
				own(b)
			}
		})
	}
	return true
}

// describeSamples declares one table per group of samples (in the order
// the groups first appear) and one for the long sweep.
func describeSamples(b Backend, samples []ops.Case) {
	var order []string
	groups := map[string][]TableEntry{}
	labels := map[string][]string{}
	var long []TableEntry
	for _, c := range samples {
		if slices.Contains(c.Labels, opdb.LabelLong) {
			long = append(long, Entry(c.Name, c))
			continue
		}
		g, ls := sampleGroup(c)
		if _, seen := groups[g]; !seen {
			order = append(order, g)
			labels[g] = ls
		}
		groups[g] = append(groups[g], Entry(c.Name, c))
	}
	within := func(ctx context.Context, c ops.Case) { runWithinBound(ctx, b(), c) }
	for _, g := range order {
		if g == "" {
			DescribeTable("is within bound", within, groups[g])
			continue
		}
		Context(g, Label(labels[g]...), func() {
			DescribeTable("is within bound", within, groups[g])
		})
	}
	if len(long) > 0 {
		DescribeTable("long sweep", Label("long"), func(ctx context.Context, c ops.Case) {
			skipUnlessLong()
			runWithinBound(ctx, b(), c)
		}, long)
	}
}

// sampleGroup returns the group a sample is reported under (the value of
// its first "mode:" label, else of its first "dtype:" label, else "") and
// the group's Ginkgo labels (every "mode:" and "dtype:" label).
func sampleGroup(c ops.Case) (string, []string) {
	var group string
	var ls []string
	for _, prefix := range []string{"mode:", "dtype:"} {
		for _, l := range c.Labels {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				if group == "" {
					group = v
				}
				ls = append(ls, l)
			}
		}
	}
	return group, ls
}
