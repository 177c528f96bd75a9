package report

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/verify"
)

// UB reuse is judged from the cost model's counters: pass above 80 %,
// fail at or below, n/a when compute reads no UB, reads each loaded byte
// once (an element-wise pass has no reuse to gain) or there is no cost.
func TestJudgeUBReuse(t *testing.T) {
	var target Target
	for _, tg := range Targets {
		if tg.Metric == "UB reuse" {
			target = tg
		}
	}
	if target.Metric == "" || target.NotModelled != "" {
		t.Fatalf("checklist: got UB reuse target %+v / want a modelled target", target)
	}
	for _, tt := range []struct {
		name         string
		cost         *Cost
		status, want string
	}{
		{"no cost", nil, StatusNA, "no cost model"},
		{"no reads", &Cost{UBReuse: verify.Float(math.NaN()), UBLoadBytes: 64}, StatusNA, "no compute reads UB"},
		{"streaming", &Cost{UBReuse: 0, UBLoadBytes: 160, UBReadBytes: 160}, StatusNA, "compute reads each UB byte once, as loaded: no reuse to gain"},
		{"reloads", &Cost{UBReuse: 0.25, UBLoadBytes: 120, UBReadBytes: 160}, StatusFail, ""},
		{"edge", &Cost{UBReuse: 0.8, UBLoadBytes: 20, UBReadBytes: 100}, StatusFail, ""},
		{"epilogue", &Cost{UBReuse: verify.Float(6.0 / 7), UBLoadBytes: 2, UBReadBytes: 14}, StatusPass, ""},
	} {
		it := judge(&Case{ID: "x/" + tt.name, Op: "x", Cost: tt.cost}, target)
		if it.Status != tt.status || it.Reason != tt.want {
			t.Errorf("judge UB reuse, case %s (cost %+v): got %s %q / want %s %q", tt.name, tt.cost, it.Status, it.Reason, tt.status, tt.want)
		}
	}
}
