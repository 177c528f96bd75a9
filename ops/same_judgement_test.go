package ops

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// sameJudgement holds got judged against want (an op's Expect) to got
// judged against serial (a plain model of the same acceptable sets): the
// same metrics per output and the same Check result under pols, bit for
// bit in every figure; at trial 0 (the uncorrupted outputs) the result
// must pass. ctx names the case (op, params, seed).
func sameJudgement(t *testing.T, ctx string, trial int, s verify.Subject, got map[string]*tensor.Tensor, want, serial map[string]*bound.Expected, golden map[string]*tensor.Tensor, pols []verify.Policy) {
	t.Helper()
	for _, name := range slices.Sorted(maps.Keys(serial)) {
		gm, sm := verify.Compute(got[name], want[name]), verify.Compute(got[name], serial[name])
		if g, w := fmt.Sprintf("%+v", gm), fmt.Sprintf("%+v", sm); g != w {
			t.Fatalf("%s trial=%d: %s: metrics differ:\ngot  %s\nwant %s", ctx, trial, name, g, w)
		}
	}
	gr, err := verify.Check(s, got, want, golden, pols)
	if err != nil {
		t.Fatalf("%s trial=%d: %v", ctx, trial, err)
	}
	sr, err := verify.Check(s, got, serial, golden, pols)
	if err != nil {
		t.Fatalf("%s trial=%d: %v", ctx, trial, err)
	}
	if g, w := fmt.Sprintf("%+v", *gr), fmt.Sprintf("%+v", *sr); g != w {
		t.Fatalf("%s trial=%d: results differ:\ngot  %s\nwant %s", ctx, trial, g, w)
	}
	if trial == 0 && !gr.Pass {
		t.Fatalf("%s: the reference's own outputs fail: %s", ctx, gr.Failure())
	}
}
