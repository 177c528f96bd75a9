package verify

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// TestBoundPolicyExactElements: at exact elements the bound policy accepts
// only the profile's rounding; a wrong tie (inside the half-ulp bound) and
// a zero of the wrong sign are counted in NotRounded, listed with a note
// giving the error in ulps, and fail the output, while tightness still
// reports e/b.
func TestBoundPolicyExactElements(t *testing.T) {
	d, num := tensor.Float16, tensor.Numerics{}
	tie := 1 + pow2(-11) // between 1 and 1 + 2^-10: to even, 1
	exact := []float64{tie, 0, 2, 3}
	w := bound.NewExpected(len(exact))
	for i, r := range exact {
		w.SetExact(i, r, d, num)
	}
	wantPass(t, judge(t, "bound", Input{Got: mk(t, d, []float64{1, 0, 2, 3}), Want: w}))

	negZero := math.Copysign(0, -1)
	v := judge(t, "bound", Input{Got: mk(t, d, []float64{1 + pow2(-10), negZero, 2, 3 + pow2(-9)}), Want: w})
	wantFail(t, v)
	m := v.Metrics
	if m.NotRounded != 2 || m.OutOfBound != 1 || len(v.Failures) != 3 {
		t.Fatalf("fp16 ties: got %d not rounded, %d out of bound, failures %+v; want 2, 1 and 3 failures", m.NotRounded, m.OutOfBound, v.Failures)
	}
	// Worst first: the element out of bound, then the not-rounded ones.
	if v.Failures[0].Index != 3 || v.Failures[0].Note != "" {
		t.Errorf("fp16 ties: first failure %+v, want element 3 (out of bound) first", v.Failures[0])
	}
	notes := map[int]string{}
	for _, f := range v.Failures[1:] {
		notes[f.Index] = f.Note
	}
	if notes[0] != "not the correctly rounded 1 (1 ulp from it)" || notes[1] != "not the correctly rounded 0 (sign of zero)" {
		t.Errorf("fp16 ties: notes %v, want the rounded value and the error in ulps", notes)
	}
	if !strings.Contains(v.Reason, "1 of 4 elements out of bound") || !strings.Contains(v.Reason, "2 exact elements not correctly rounded") {
		t.Errorf("fp16 ties: reason %q", v.Reason)
	}
	near(t, "tightness", m.Tightness, 2) // 3 + 2^-9 is 2^-9 from 3, whose half ulp is 2^-10

	// Metrics survive JSON.
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Metrics
	if err := json.Unmarshal(b, &back); err != nil || back.NotRounded != 2 || !strings.Contains(string(b), `"not_rounded":2`) {
		t.Errorf("metrics JSON %s: got not_rounded %d (%v), want 2", b, back.NotRounded, err)
	}

	// A malformed exact set is a contract failure, not a verdict.
	bad := *w
	bad.Rounded = bad.Rounded[:2]
	if _, err := Check(Subject{Op: "vector_add"}, map[string]*tensor.Tensor{"z": mk(t, d, []float64{1, 0, 2, 3})},
		map[string]*bound.Expected{"z": &bad}, nil, nil); err == nil || !strings.Contains(err.Error(), "2 rounded values") {
		t.Errorf("malformed exact set: got error %v, want one naming the rounded values", err)
	}
}
