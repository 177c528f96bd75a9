package verify

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

func TestBoundPolicy(t *testing.T) {
	d := tensor.Float16
	ref := randRefs(d, 100, -4, 4, 1)
	w := expected(ref, 0)
	for i, r := range ref {
		w.Bound[i] = ulpOf(d, r) // one ulp allowed everywhere
	}

	wantPass(t, judge(t, "bound", Input{Got: mk(t, d, shifted(d, ref, 1, 3, 50)), Want: w}))

	// Two ulps at one element: exactly that element is out of bound.
	v := judge(t, "bound", Input{Got: mk(t, d, shifted(d, ref, 2, 17)), Want: w})
	wantFail(t, v)
	if len(v.Failures) != 1 || v.Failures[0].Index != 17 || v.Metrics.OutOfBound != 1 {
		t.Errorf("failures %+v, out of bound %d; want element 17 only", v.Failures, v.Metrics.OutOfBound)
	}
	near(t, "tightness", v.Metrics.Tightness, 2)

	// NaN where a finite value is expected fails, even with an infinite bound.
	nan := append([]float64(nil), ref...)
	nan[5] = math.NaN()
	w2 := expected(ref, math.Inf(1))
	v = judge(t, "bound", Input{Got: mk(t, d, nan), Want: w2})
	wantFail(t, v)
	if v.Metrics.NonFiniteMismatch != 1 || len(v.Failures) != 1 || v.Failures[0].Index != 5 {
		t.Errorf("NaN: %+v", v)
	}

	// Overflow-ambiguous elements pass either way and are counted.
	amb := expected([]float64{65504, 65504, 1}, 32)
	amb.Alt[0], amb.Alt[1] = bound.PosInf, bound.PosInf
	v = judge(t, "bound", Input{Got: mk(t, d, []float64{math.Inf(1), 65504, 1}), Want: amb})
	wantPass(t, v)
	if v.Metrics.Ambiguous != 2 || v.Metrics.AmbiguousTaken != 1 || !strings.Contains(v.Reason, "2 overflow-ambiguous, 1 took") {
		t.Errorf("ambiguous: %+v", v)
	}
	// ... but not the wrong non-finite class.
	wantFail(t, judge(t, "bound", Input{Got: mk(t, d, []float64{math.Inf(-1), 65504, 1}), Want: amb}))
}

func TestExactPolicy(t *testing.T) {
	d := tensor.Float16
	vals := []float64{1, 0, 2.5, math.NaN()}
	gold := mk(t, d, vals)
	w := expected(vals, 0)
	wantPass(t, judge(t, "exact", Input{Got: gold.Clone(), Want: w, Golden: gold}))
	// The reference is not needed.
	wantPass(t, judge(t, "exact", Input{Got: gold.Clone(), Golden: gold}))

	// −0 against +0: equal values, different bits.
	neg := gold.Clone()
	neg.SetBits(1, 0x8000)
	v := judge(t, "exact", Input{Got: neg, Want: w, Golden: gold})
	wantFail(t, v)
	if len(v.Failures) != 1 || v.Failures[0].Index != 1 || !strings.Contains(v.Failures[0].Note, "0x8000, golden 0x0000") {
		t.Errorf("-0: %+v", v.Failures)
	}
	// Another NaN payload.
	pay := gold.Clone()
	pay.SetBits(3, gold.Bits(3)^1)
	wantFail(t, judge(t, "exact", Input{Got: pay, Want: w, Golden: gold}))

	// No golden, or another dtype or shape: fails with a clear reason.
	v = judge(t, "exact", Input{Got: gold, Want: w})
	wantFail(t, v)
	if !strings.Contains(v.Reason, "no golden") {
		t.Errorf("reason %q", v.Reason)
	}
	v = judge(t, "exact", Input{Got: gold, Want: w, Golden: mk(t, tensor.Float32, vals)})
	if v.Pass || !strings.Contains(v.Reason, "dtype fp16, golden has fp32") {
		t.Errorf("dtype mismatch: %+v", v)
	}
	reshaped := gold.Clone()
	reshaped.Shape = []int{2, 2}
	if v = judge(t, "exact", Input{Got: gold, Golden: reshaped}); v.Pass || !strings.Contains(v.Reason, "shape") {
		t.Errorf("shape mismatch: %+v", v)
	}
}

func TestAllclosePolicy(t *testing.T) {
	d := tensor.Float16
	// r in [1, 1.9): fp16 ulp 2^-10 ≈ 9.77e-4; default tolerance
	// 1e-5 + 1e-3·|r| lies in [1.01e-3, 1.91e-3): one ulp passes, two
	// ulps (1.95e-3) fail.
	ref := randRefs(d, 200, 1, 1.9, 2)
	w := expected(ref, 0)
	wantPass(t, judge(t, "allclose", Input{Got: mk(t, d, shifted(d, ref, 1, 0, 1, 2, 199)), Want: w}))
	two := mk(t, d, shifted(d, ref, 2, 42))
	v := judge(t, "allclose", Input{Got: two, Want: w})
	wantFail(t, v)
	if len(v.Failures) != 1 || v.Failures[0].Index != 42 {
		t.Errorf("failures %+v", v.Failures)
	}
	near(t, "element bound", v.Failures[0].Bound, 1e-5+float64(1e-3*ref[42]))
	// Explicit tolerances replace the defaults: rtol 2e-3 admits 2 ulps,
	// rtol = atol = 0 admits nothing.
	wantPass(t, judge(t, "allclose:rtol=2e-3", Input{Got: two, Want: w}))
	wantFail(t, judge(t, "allclose:rtol=0,atol=0", Input{Got: mk(t, d, shifted(d, ref, 1, 7)), Want: w}))

	// equal_nan, and infinities only equal to themselves.
	spec := expected([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 1}, 0)
	wantPass(t, judge(t, "allclose", Input{Got: mk(t, d, []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1}), Want: spec}))
	v = judge(t, "allclose", Input{Got: mk(t, d, []float64{math.NaN(), math.Inf(-1), math.Inf(1), math.NaN()}), Want: spec})
	wantFail(t, v)
	if len(v.Failures) != 3 {
		t.Errorf("want 3 class mismatches, got %+v", v.Failures)
	}

	// Integer outputs compare exactly by default.
	wantFail(t, judge(t, "allclose", Input{Got: mk(t, tensor.Int8, []float64{1, 2, 4}), Want: expected([]float64{1, 2, 3}, 0)}))
	wantPass(t, judge(t, "allclose", Input{Got: mk(t, tensor.Int8, []float64{1, 2, 3}), Want: expected([]float64{1, 2, 3}, 0)}))
}

func TestULPPolicy(t *testing.T) {
	d := tensor.Float16
	// r in [1.0625, 1.9): ulp 2^-10 throughout, away from powers of two.
	ref := randRefs(d, 64, 1.0625, 1.9, 3)
	w := expected(ref, 0)
	oneEverywhere := make([]int, len(ref))
	for i := range oneEverywhere {
		oneEverywhere[i] = i
	}
	wantPass(t, judge(t, "ulp", Input{Got: mk(t, d, shifted(d, ref, -1, oneEverywhere...)), Want: w}))
	twoAtOne := mk(t, d, shifted(d, ref, 2, 9))
	v := judge(t, "ulp:1", Input{Got: twoAtOne, Want: w})
	wantFail(t, v)
	if len(v.Failures) != 1 || v.Failures[0].Index != 9 || v.Failures[0].Note != "2 ulp" {
		t.Errorf("failures %+v", v.Failures)
	}
	near(t, "element bound", v.Failures[0].Bound, pow2(-10))
	wantPass(t, judge(t, "ulp:2", Input{Got: twoAtOne, Want: w}))

	// Ulps are those of the output dtype: as an fp32 output the same
	// 2^-10 error is 2^13 ulps (fp32 ulp at [1,2) is 2^-23) and fails ulp:16.
	wantFail(t, judge(t, "ulp:16", Input{Got: mk(t, tensor.Float32, shifted(d, ref, 1, 0)), Want: w}))
}

func TestThousandthPolicy(t *testing.T) {
	d := tensor.Float16
	// N = 2000 fp16 elements, threshold 1e-3: the limit is 1e-3·2000 = 2
	// elements failing rel AND 2 failing abs.
	const n = 2000
	ref := randRefs(d, n, 1, 2, 4)
	w := expected(ref, 0)
	wantPass(t, judge(t, "ascend-thousandth", Input{Got: mk(t, d, ref), Want: w}))

	// 8 ulps at r in [1,2) is e ≈ 7.8e-3: fails rel and abs.
	wantPass(t, judge(t, "ascend-thousandth", Input{Got: mk(t, d, shifted(d, ref, 8, 10, 20)), Want: w}))
	v := judge(t, "ascend-thousandth", Input{Got: mk(t, d, shifted(d, ref, 8, 10, 20, 30)), Want: w})
	wantFail(t, v)
	if len(v.Failures) != 3 || !strings.Contains(v.Reason, "at 3 and abs err > 0.001 at 3 of 2000") {
		t.Errorf("3 bad: %+v", v)
	}

	// Rel-only failures (tiny values) or abs-only failures (large values)
	// alone never fail the output.
	small := append([]float64(nil), ref...)
	large := append([]float64(nil), ref...)
	var idx []int
	for i := 0; i < 10; i++ {
		small[i] = pow2(-7) // r = 0.0078125, ulp 2^-17
		large[i] = 1024     // ulp 1
		idx = append(idx, i)
	}
	// small: e = 8·2^-17 ≈ 6.1e-5 (abs ok), rel ≈ 7.8e-3 (fails rel).
	v = judge(t, "ascend-thousandth", Input{Got: mk(t, d, shifted(d, small, 8, idx...)), Want: expected(small, 0)})
	wantPass(t, v)
	if !strings.Contains(v.Reason, "at 10 and abs err > 0.001 at 0") {
		t.Errorf("rel-only reason: %s", v.Reason)
	}
	// large: e = 1 (fails abs), rel ≈ 9.8e-4 (ok).
	wantPass(t, judge(t, "ascend-thousandth", Input{Got: mk(t, d, shifted(d, large, 1, idx...)), Want: expected(large, 0)}))

	// fp32 uses 1e-4: one element at rel/abs 2^-12 ≈ 2.4e-4 in 1000
	// fails (limit 0.1) and passes with n=10 (limit 1).
	ref32 := randRefs(tensor.Float32, 1000, 1, 2, 5)
	got32 := append([]float64(nil), ref32...)
	got32[0] += pow2(-12)
	in32 := Input{Got: mk(t, tensor.Float32, got32), Want: expected(ref32, 0)}
	wantFail(t, judge(t, "ascend-thousandth", in32))
	wantPass(t, judge(t, "ascend-thousandth:n=10", in32))
}

func TestMEREPolicy(t *testing.T) {
	d := tensor.Float32
	th := pow2(-13) // fp32 Th
	ref := randRefs(d, 1000, 1, 2, 6)
	w := expected(ref, 0)
	// A uniform relative error c·Th: the fp32 rounding of g moves it by
	// at most 2^-24 relative and the 1e-7 guard by 1e-7 relative, both far
	// below the 5% margins used here.
	scaled := func(c float64) *tensor.Tensor {
		g := make([]float64, len(ref))
		for i, r := range ref {
			g[i] = tensor.Numerics{}.Round(r*(1+float64(c*th)), d)
		}
		return mk(t, d, g)
	}
	wantPass(t, judge(t, "ascend-mere", Input{Got: scaled(0.95), Want: w}))
	v := judge(t, "ascend-mere", Input{Got: scaled(1.05), Want: w})
	wantFail(t, v)
	if !strings.HasPrefix(v.Reason, "MERE too large") || v.Metrics.MARE >= 10*th {
		t.Errorf("uniform 1.05·Th: %s", v.Reason)
	}

	// MARE: one element at 11·Th (MERE 0.011·Th) fails, at 9·Th passes.
	one := func(c float64) *tensor.Tensor {
		g := append([]float64(nil), ref...)
		g[500] = tensor.Numerics{}.Round(ref[500]*(1+float64(c*th)), d)
		return mk(t, d, g)
	}
	wantPass(t, judge(t, "ascend-mere", Input{Got: one(9), Want: w}))
	v = judge(t, "ascend-mere", Input{Got: one(11), Want: w})
	wantFail(t, v)
	if !strings.HasPrefix(v.Reason, "MARE too large") || len(v.Failures) != 1 || v.Failures[0].Index != 500 {
		t.Errorf("one at 11·Th: %+v", v)
	}

	// fp16 uses Th = 2^-10: 2 ulps everywhere at r in [1, 1.9) is a
	// relative error 2^-9/r > 2^-10 and fails; 1 ulp at half the elements
	// (relative ≤ 2^-10 there, MERE ≤ 2^-11) passes.
	ref16 := randRefs(tensor.Float16, 100, 1, 1.9, 7)
	all := make([]int, len(ref16))
	for i := range all {
		all[i] = i
	}
	wantFail(t, judge(t, "ascend-mere", Input{Got: mk(t, tensor.Float16, shifted(tensor.Float16, ref16, 2, all...)), Want: expected(ref16, 0)}))
	wantPass(t, judge(t, "ascend-mere", Input{Got: mk(t, tensor.Float16, shifted(tensor.Float16, ref16, 1, all[:50]...)), Want: expected(ref16, 0)}))
}

func TestMixedPolicy(t *testing.T) {
	d := tensor.Float16
	// r in [1, 1.5): ulp 2^-10; tolerance 2^-9·(1+|r|) is in [4, 5) ulps,
	// so 5 ulps fail it; the cap max(2^-9, 32 ulp) is 32 ulps.
	const n = 1000
	ref := randRefs(d, n, 1, 1.5, 8)
	w := expected(ref, 0)
	idx := func(k int) []int {
		out := make([]int, k)
		for i := range out {
			out[i] = (n / k) * i
		}
		return out
	}
	wantPass(t, judge(t, "ascend-mixed", Input{Got: mk(t, d, shifted(d, ref, 4, idx(500)...)), Want: w}))
	// 10 of 1000 at 5 ulps: exactly 99% matched passes; 11 fail.
	wantPass(t, judge(t, "ascend-mixed", Input{Got: mk(t, d, shifted(d, ref, 5, idx(10)...)), Want: w}))
	v := judge(t, "ascend-mixed", Input{Got: mk(t, d, shifted(d, ref, 5, idx(11)...)), Want: w})
	wantFail(t, v)
	if !strings.Contains(v.Reason, "989 of 1000") {
		t.Errorf("reason %s", v.Reason)
	}
	// One element over the cap (33 ulps) fails although 99.9% match.
	v = judge(t, "ascend-mixed", Input{Got: mk(t, d, shifted(d, ref, 33, 123)), Want: w})
	wantFail(t, v)
	if len(v.Failures) != 1 || v.Failures[0].Index != 123 || v.Failures[0].Bound != pow2(-5) {
		t.Errorf("cap: %+v", v.Failures)
	}
	wantPass(t, judge(t, "ascend-mixed", Input{Got: mk(t, d, shifted(d, ref, 32, 123)), Want: w}))

	// fp32: (rtol, atol) = (2^-16, 2^-10), cap max(2^-10, 32 ulp).
	ref32 := randRefs(tensor.Float32, 100, 1, 2, 9)
	g := append([]float64(nil), ref32...)
	g[0] += pow2(-11)
	wantPass(t, judge(t, "ascend-mixed", Input{Got: mk(t, tensor.Float32, g), Want: expected(ref32, 0)}))
	g[0] = ref32[0] + pow2(-9)
	wantFail(t, judge(t, "ascend-mixed", Input{Got: mk(t, tensor.Float32, g), Want: expected(ref32, 0)}))

	// Integers must match exactly.
	wantFail(t, judge(t, "ascend-mixed", Input{Got: mk(t, tensor.Int32, []float64{1, 5}), Want: expected([]float64{1, 4}, 0)}))
}

func TestAllcloseAndMixedDiffer(t *testing.T) {
	d := tensor.Float16
	ref := randRefs(d, 1000, 1, 1.5, 10)
	w := expected(ref, 0)
	// One element 2 ulps off (1.95e-3): beyond allclose's fp16 tolerance
	// 1e-5 + 1e-3·|r| < 1.51e-3, inside mixed's 2^-9·(1+|r|) ≥ 3.9e-3.
	in := Input{Got: mk(t, d, shifted(d, ref, 2, 321)), Want: w}
	wantFail(t, judge(t, "allclose", in))
	wantPass(t, judge(t, "ascend-mixed", in))

	// 2% of the elements 5 ulps off (4.9e-3): a loose allclose
	// (rtol = atol = 1e-2) passes every element, mixed needs 99% within
	// its tolerance and fails.
	var idx []int
	for i := 0; i < 20; i++ {
		idx = append(idx, 50*i)
	}
	in = Input{Got: mk(t, d, shifted(d, ref, 5, idx...)), Want: w}
	wantPass(t, judge(t, "allclose:rtol=1e-2,atol=1e-2", in))
	wantFail(t, judge(t, "ascend-mixed", in))
}

func TestPoliciesShareNonFiniteRule(t *testing.T) {
	// Overflow-ambiguous element that took +inf, a NaN reference matched
	// by NaN: accepted by every value policy; a finite got for an inf
	// reference: rejected by every value policy, whatever its tolerance.
	amb := expected([]float64{65504, math.NaN(), 1, 2}, 64)
	amb.Alt[0] = bound.PosInf
	good := mk(t, tensor.Float16, []float64{math.Inf(1), math.NaN(), 1, 2})
	infRef := expected([]float64{math.Inf(1), 1}, 0)
	finite := mk(t, tensor.Float16, []float64{65504, 1})
	for _, p := range []string{"bound", "allclose", "allclose:rtol=1e9,atol=1e9", "ulp:1000000", "ascend-thousandth:n=1000", "ascend-mere", "ascend-mixed"} {
		t.Run(p, func(t *testing.T) {
			wantPass(t, judge(t, p, Input{Got: good, Want: amb}))
			v := judge(t, p, Input{Got: finite, Want: infRef})
			wantFail(t, v)
			if len(v.Failures) == 0 || v.Failures[0].Index != 0 || !strings.Contains(v.Failures[0].Note, "class finite, allowed +inf") {
				t.Errorf("failures %+v", v.Failures)
			}
		})
	}
}

func TestJudgeRejectsBadInput(t *testing.T) {
	got := mk(t, tensor.Float16, []float64{1, 2})
	for _, p := range PolicyNames() {
		if p == "exact" {
			continue
		}
		if v := judge(t, p, Input{Got: got}); v.Pass || !strings.Contains(v.Reason, "no reference") {
			t.Errorf("%s without want: %+v", p, v)
		}
		if v := judge(t, p, Input{Got: got, Want: expected([]float64{1}, 0)}); v.Pass || !strings.Contains(v.Reason, "want 1 elements") {
			t.Errorf("%s with a length mismatch: %+v", p, v)
		}
		if v := judge(t, p, Input{Want: expected([]float64{1}, 0)}); v.Pass || !strings.Contains(v.Reason, "no output") {
			t.Errorf("%s without got: %+v", p, v)
		}
	}
}

// TestBitDiff: equal bits give no elements and a count of 0; otherwise
// every differing element counts (a NaN payload and a signed zero
// included) and the first max are reported by index with both patterns.
func TestBitDiff(t *testing.T) {
	golden := tensor.MustNew(tensor.Float16, 40)
	for i := range golden.Len() {
		golden.SetBits(i, uint64(0x3C00+i))
	}
	golden.SetBits(7, 0x7E01) // a NaN with a payload
	got := golden.Clone()
	if els, n := BitDiff(got, golden, 5); n != 0 || len(els) != 0 {
		t.Fatalf("BitDiff(equal fp16[40]) = %v, %d, want none, 0", els, n)
	}
	for _, i := range []int{3, 7, 20, 39} {
		got.SetBits(i, got.Bits(i)^1)
	}
	got.SetBits(0, 0x8000)
	golden.SetBits(0, 0x0000) // −0 against +0
	els, n := BitDiff(got, golden, 3)
	if n != 5 {
		t.Errorf("BitDiff(fp16[40], 5 elements differ) counts %d, want 5", n)
	}
	var idx []int
	for _, e := range els {
		idx = append(idx, e.Index)
	}
	if want := []int{0, 3, 7}; !slices.Equal(idx, want) {
		t.Errorf("BitDiff(fp16[40], max 3) reports indices %v, want %v", idx, want)
	}
	if len(els) > 1 && !strings.Contains(els[1].Note, "bits 0x3c02, golden 0x3c03") {
		t.Errorf("BitDiff element 3: note %q, want the two bit patterns", els[1].Note)
	}
}
