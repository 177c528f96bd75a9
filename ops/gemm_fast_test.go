package ops_test

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// goldenGEMMCases returns gemm's golden cases (recipes included) by name,
// as golden.DefaultCases lists them. From opdb, not golden: golden imports
// the backend and the harness, which the test binary would otherwise
// compile again against this package's internal test files.
func goldenGEMMCases(t *testing.T) []ops.Case {
	t.Helper()
	info, err := opdb.Lookup("gemm")
	if err != nil {
		t.Fatal(err)
	}
	cs := info.GoldenCases()
	if len(cs) == 0 {
		t.Fatal("gemm: opdb lists no golden case")
	}
	slices.SortFunc(cs, func(a, b ops.Case) int { return cmp.Compare(a.Name, b.Name) })
	return cs
}

// TestGEMMFastPathAgrees holds gemm's Expect (fast path where it applies)
// to the interval path on every element, bit for bit (ref, bound, special
// classes), on every golden gemm case — recipes included, under their own
// profile — and every case of the gemm UT suite, each also under the four
// overflow × subnormal profiles. It also counts the elements that took
// the fast path, so that a fast path that never applies cannot pass.
func TestGEMMFastPathAgrees(t *testing.T) {
	cases := append(goldenGEMMCases(t), gemmSuiteCases()...)
	fast := 0
	for _, c := range cases {
		p, err := ops.GEMM.Validate(c.Params)
		if err != nil {
			t.Fatalf("gemm %s params %v seed %d: validate: %v", c.Name, c.Params, c.Seed, err)
		}
		in, err := ops.GEMM.Generate(p, c.Gen())
		if err != nil {
			t.Fatalf("gemm %s params %v seed %d: generate: %v", c.Name, c.Params, c.Seed, err)
		}
		profiles := gemmDigestProfiles
		if c.Recipe {
			profiles = nil // large: its own profile only
		}
		own := tensor.Numerics{}
		if c.Numerics != nil {
			own = *c.Numerics
		}
		for _, num := range append([]tensor.Numerics{own}, profiles...) {
			got, err := ops.GEMM.Expect(p, in, num)
			if err != nil {
				t.Fatalf("gemm %s params %v seed %d numerics %s: %v", c.Name, c.Params, c.Seed, num, err)
			}
			want, err := ops.GEMMExpectInterval(p, in, num)
			if err != nil {
				t.Fatalf("gemm %s params %v seed %d numerics %s: interval path: %v", c.Name, c.Params, c.Seed, num, err)
			}
			g, w := got["out"], want["out"]
			for i := range w.Ref {
				if !sameExpected(g, w, i) {
					t.Fatalf("gemm %s params %v seed %d numerics %s: element %d: got ref=%v bound=%v alt=%v / want (interval path) ref=%v bound=%v alt=%v",
						c.Name, c.Params, c.Seed, num, i, g.Ref[i], g.Bound[i], g.Alt[i], w.Ref[i], w.Bound[i], w.Alt[i])
				}
			}
			cnt, err := ops.GEMMFastElements(p, in, num)
			if err != nil {
				t.Fatalf("gemm %s params %v seed %d numerics %s: %v", c.Name, c.Params, c.Seed, num, err)
			}
			fast += cnt
		}
	}
	t.Logf("gemm fast path: %d elements compared", fast)
	if fast == 0 {
		t.Error("gemm fast path: no element took it (a plain evaluation: alpha=1, beta=0, float accumulator)")
	}
}

// sameExpected reports whether element i of g and w has the same bits.
func sameExpected(g, w *bound.Expected, i int) bool {
	return math.Float64bits(g.Ref[i]) == math.Float64bits(w.Ref[i]) &&
		math.Float64bits(g.Bound[i]) == math.Float64bits(w.Bound[i]) && g.Alt[i] == w.Alt[i]
}
