package perf

import (
	"math"
	"strings"
	"testing"
)

// seq returns lo, lo+step, ... (n values).
func seq(lo, step float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo + step*float64(i)
	}
	return v
}

// TestMannWhitneyExact checks p-values derived by hand from the exact
// distribution of U. Under the null hypothesis every one of the C(n+m, n)
// ways to place the x sample among the pooled ranks is equally likely, and
// the number of placements with U = u is the number of partitions of u
// into at most n parts each at most m. The two-sided p doubles the tail.
func TestMannWhitneyExact(t *testing.T) {
	for _, tc := range []struct {
		name string
		x, y []float64
		u, p float64
	}{
		// Complete separation, y above x: U = n·m; one placement in each
		// tail (U = 0 and U = n·m), p = 2/C(n+m, n).
		{"n=m=3 separated", seq(1, 1, 3), seq(10, 1, 3), 9, 2.0 / 20},
		{"n=m=4 separated", seq(1, 1, 4), seq(10, 1, 4), 16, 2.0 / 70},
		{"n=m=5 separated", seq(1, 1, 5), seq(10, 1, 5), 25, 2.0 / 252},
		// x below y but for one pair: U = 24, U' = 1. Placements with U' ≤ 1:
		// partitions of 0 and of 1 → 2; p = 2·2/252.
		{"n=m=5 one pair out of order", []float64{1, 2, 3, 4, 11}, []float64{10, 12, 13, 14, 15}, 24, 4.0 / 252},
		// U' = 2: partitions of 0, 1, 2 (2, 1+1) → 4; p = 2·4/252.
		{"n=m=5 two pairs out of order", []float64{1, 2, 3, 4, 12}, []float64{10, 11, 13, 14, 15}, 23, 8.0 / 252},
		// U' = 3: 1 + 1 + 2 + 3 (3, 2+1, 1+1+1) = 7 → p = 14/252 > Alpha.
		{"n=m=5 three pairs out of order", []float64{1, 2, 3, 4, 13}, []float64{10, 11, 12, 14, 15}, 22, 14.0 / 252},
		// Unequal sizes n=3, m=5, separated: p = 2/C(8,3) = 2/56.
		{"n=3 m=5 separated", seq(1, 1, 3), seq(10, 1, 5), 15, 2.0 / 56},
		// Ties: x = {1,2,3}, y = {3,4,5}. Doubled midranks 2,4,7,7,10,12
		// (the two 3s share rank 3.5); x's doubled sum is 13, its mean
		// n(N+1) = 21, distance 8. Of the 20 triples, sums ≤ 13: {2,4,7}
		// twice; sums ≥ 29: {7,10,12} twice → p = 4/20. U of y: 2 + ½ + 3
		// + 3 = 8.5.
		{"n=m=3 with a tie", []float64{1, 2, 3}, []float64{3, 4, 5}, 8.5, 4.0 / 20},
		// Every value tied: every placement has the mean sum, p = 1.
		{"all tied", []float64{7, 7, 7, 7, 7}, []float64{7, 7, 7, 7, 7}, 12.5, 1},
		// Interleaved 1..10 (x odd, y even): U of y = 15, mean 12.5; not
		// evidence of anything (p ≥ ½ whatever the exact figure).
	} {
		u, p, err := MannWhitney(tc.x, tc.y)
		if err != nil {
			t.Fatalf("%s: x=%v y=%v: %v", tc.name, tc.x, tc.y, err)
		}
		if u != tc.u || math.Abs(p-tc.p) > 1e-12*tc.p {
			t.Errorf("%s: x=%v y=%v: got U=%v p=%.6g, want U=%v p=%.6g", tc.name, tc.x, tc.y, u, p, tc.u, tc.p)
		}
		// The test is two-sided: swapping the samples keeps p.
		_, q, _ := MannWhitney(tc.y, tc.x)
		if math.Abs(q-p) > 1e-12 {
			t.Errorf("%s: swapped samples: got p=%.6g, want %.6g", tc.name, q, p)
		}
	}
	_, p, _ := MannWhitney(seq(1, 2, 5), seq(2, 2, 5))
	if p < 0.5 {
		t.Errorf("interleaved samples: got p=%.4g, want ≥ 0.5", p)
	}
}

// TestMannWhitneyNormal checks the normal approximation (n+m > 50).
func TestMannWhitneyNormal(t *testing.T) {
	// n = m = 30, separated, no ties: U = 900, mean 450, σ² = 30·30/12·61
	// = 4575; z = (450 − ½)/√4575 ≈ 6.6456, p = erfc(z/√2) ≈ 3.0e-11.
	_, p, err := MannWhitney(seq(1, 1, 30), seq(100, 1, 30))
	if err != nil {
		t.Fatal(err)
	}
	want := math.Erfc((450 - 0.5) / math.Sqrt(4575) / math.Sqrt2)
	if math.Abs(p-want) > 1e-9*want || p > 3.1e-11 || p < 2.9e-11 {
		t.Errorf("n=m=30 separated: got p=%.6g, want %.6g (≈ 3.0e-11)", p, want)
	}
	// Ties: x = 30 × {1}, y = 15 × {1} + 15 × {2}. Ties: 45 ones (t = 45)
	// and 15 twos; N = 60. U of y = 15·30·½ + 15·30 = 675, mean 450;
	// σ² = 900/12·(61 − (45³−45 + 15³−15)/(60·59)) = 75·(61 − 94440/3540)
	// = 75·34.322… = 2574.15…; z = 224.5/50.736… ≈ 4.4248, p ≈ 9.6e-6.
	x := seq(1, 0, 30)
	y := append(seq(1, 0, 15), seq(2, 0, 15)...)
	u, p, _ := MannWhitney(x, y)
	s2 := 75 * (61 - float64(45*45*45-45+15*15*15-15)/(60*59))
	want = math.Erfc((675 - 450 - 0.5) / math.Sqrt(s2) / math.Sqrt2)
	if u != 675 || math.Abs(p-want) > 1e-9*want || p > 1e-5 || p < 9e-6 {
		t.Errorf("n=m=30 with ties: got U=%v p=%.6g, want U=675 p=%.6g (≈ 9.6e-6)", u, p, want)
	}
	// The tie correction matters: without it σ² = 4575 and p ≈ 9e-4.
	if naive := math.Erfc(224.5 / math.Sqrt(4575) / math.Sqrt2); p > naive/10 {
		t.Errorf("n=m=30 with ties: got p=%.3g, not the tie-corrected figure (uncorrected %.3g)", p, naive)
	}
}

func TestMannWhitneyErrors(t *testing.T) {
	if _, _, err := MannWhitney(nil, []float64{1}); err == nil {
		t.Error("empty sample: got no error, want one")
	}
	if _, _, err := MannWhitney([]float64{math.NaN()}, []float64{1}); err == nil {
		t.Error("NaN sample: got no error, want one")
	}
}

// jitter is base·(1 + small deterministic spread): n distinct samples
// within ±2 % of base, the noise of a timer.
func jitter(base float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = base * (1 + 0.04*(float64((i*7)%n)/float64(n)-0.5))
	}
	return v
}

func TestCompare(t *testing.T) {
	const us = 1e-6
	for _, tc := range []struct {
		name      string
		base, cur []float64
		max       float64
		want      string
	}{
		{"same times", jitter(10*us, 10), jitter(10*us, 10), 0.1, StateUnchanged},
		{"30 % slower, 10 samples each", jitter(10*us, 10), jitter(13*us, 10), 0.1, StateSlower},
		{"30 % slower, 5 samples each", jitter(10*us, 5), jitter(13*us, 5), 0.1, StateSlower},
		{"30 % slower, 2 samples each", jitter(10*us, 2), jitter(13*us, 2), 0.1, StateInsufficient},
		{"30 % slower, 4 current samples", jitter(10*us, 10), jitter(13*us, 4), 0.1, StateInsufficient},
		// Significant (the samples separate completely) but under the
		// noise floor.
		{"5 % slower, max 10 %", jitter(10*us, 10), jitter(10.5*us, 10), 0.1, StateUnchanged},
		{"5 % slower, max 1 %", jitter(10*us, 10), jitter(10.5*us, 10), 0.01, StateSlower},
		{"30 % faster", jitter(13*us, 10), jitter(10*us, 10), 0.1, StateUnchanged},
		// The median is 33 % slower (12 → 16) but the samples overlap:
		// U = 16 of 25, p = 2·P(U ≤ 9) far above Alpha.
		{"overlapping", []float64{10, 11, 12, 20, 21}, []float64{9, 15, 16, 22, 23}, 0.1, StateUnchanged},
	} {
		c, err := Compare(tc.base, tc.cur, tc.max)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.State != tc.want {
			t.Errorf("%s: base=%v cur=%v max=%g: got %s (%s), want %s", tc.name, tc.base, tc.cur, tc.max, c.State, c, tc.want)
		}
		if !strings.Contains(c.String(), strings.Fields(tc.want)[0]) && tc.want != StateUnchanged {
			t.Errorf("%s: detail %q does not name the state %q", tc.name, c, tc.want)
		}
	}
	c, _ := Compare(jitter(10*us, 10), jitter(13*us, 10), 0.1)
	if math.Abs(c.Change-0.3) > 0.01 || !(c.P < Alpha) {
		t.Errorf("30 %% slower: got change %.4g p %.4g, want change 0.3 ± 0.01 and p < %g", c.Change, c.P, Alpha)
	}
	// A timer coarser than the kernel reports 0 (the exec protocol allows
	// it): from a zero median any rise is an infinite change.
	if c, err := Compare(make([]float64, 5), jitter(1e-9, 5), 0.1); err != nil || c.State != StateSlower || !math.IsInf(c.Change, 1) {
		t.Errorf("baseline 5 × 0 s, current ≈ 1 ns: got %+v, %v; want slower by +Inf", c, err)
	}
	if c, err := Compare(make([]float64, 5), make([]float64, 5), 0.1); err != nil || c.State != StateUnchanged || c.Change != 0 {
		t.Errorf("baseline and current 5 × 0 s: got %+v, %v; want unchanged, change 0", c, err)
	}
	for _, bad := range [][]float64{{-1}, {math.Inf(1)}, {math.NaN()}} {
		if _, err := Compare(jitter(1, 5), bad, 0.1); err == nil {
			t.Errorf("current times %v: got no error, want one", bad)
		}
	}
}

// BenchmarkMannWhitneyExact is the test at the largest exact size (25
// samples a side), the cost check pays per case at most.
func BenchmarkMannWhitneyExact(b *testing.B) {
	x, y := jitter(10, 25), jitter(11, 25)
	for b.Loop() {
		if _, _, err := MannWhitney(x, y); err != nil {
			b.Fatal(err)
		}
	}
}
