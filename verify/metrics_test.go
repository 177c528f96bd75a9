package verify

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if got == want {
		return
	}
	if math.Abs(got-want) > 1e-12*math.Abs(want) {
		t.Errorf("%s = %.17g, want %.17g", what, got, want)
	}
}

func TestComputeHandVector(t *testing.T) {
	// fp16 output. Element by element (ulp_fp16(1) = 2^-10, (2) = 2^-9,
	// (4) = 2^-8, (0) = 2^-24):
	//   i  ref  got          e      rel(guard)  bound  e/bound  ulps
	//   0  1    1            0      0           0      0 (0/0)  0
	//   1  2    2+2^-9       2^-9   2^-10       2^-9   1        1
	//   2  -4   -4-2^-7      2^-7   2^-9        2^-8   2        2
	//   3  0    2^-10        2^-10  2^-10 (abs) 2^-11  2        2^14 -> ">16"
	//   4  +inf +inf         (non-finite, accepted: same class)
	ref := []float64{1, 2, -4, 0, math.Inf(1)}
	gotv := []float64{1, 2 + pow2(-9), -4 - pow2(-7), pow2(-10), math.Inf(1)}
	w := bound.NewExpected(5)
	copy(w.Ref, ref)
	copy(w.Bound, []float64{0, pow2(-9), pow2(-8), pow2(-11), math.NaN()})
	m := Compute(mk(t, tensor.Float16, gotv), w)

	if m.N != 5 || m.Compared != 4 {
		t.Errorf("N, Compared = %d, %d; want 5, 4", m.N, m.Compared)
	}
	near(t, "MaxAbs", m.MaxAbs, pow2(-7))
	near(t, "MaxRel", m.MaxRel, pow2(-9))
	// MERE/MARE divide by |r| + 1e-7: element 3 (r = 0) gives
	// 2^-10/1e-7 = 9765.625 and dominates both.
	near(t, "MARE", m.MARE, pow2(-10)/1e-7)
	near(t, "MERE", m.MERE, (0+pow2(-9)/(2+1e-7)+pow2(-7)/(4+1e-7)+pow2(-10)/1e-7)/4)
	// RMSE = sqrt((0 + 2^-18 + 2^-14 + 2^-20)/4).
	near(t, "RMSE", m.RMSE, math.Sqrt((pow2(-18)+pow2(-14)+pow2(-20))/4))
	// Cosine over the 4 finite pairs: Σgr = 1 + 2(2+2^-9) + 4(4+2^-7)
	// = 21.03515625, Σr² = 21, Σg² = 1 + (2+2^-9)² + (4+2^-7)² + 2^-20.
	sgg := 1 + float64((2+pow2(-9))*(2+pow2(-9))) + float64((4+pow2(-7))*(4+pow2(-7))) + pow2(-20)
	near(t, "Cosine", m.Cosine, 21.03515625/math.Sqrt(21*sgg))
	// rel > 1e-3 only at element 2 (2^-9 ≈ 1.95e-3; 2^-10 ≈ 9.77e-4 is
	// below): 1 of 4 compared. Nothing is above 5e-3.
	near(t, "ErrRatio1e3", m.ErrRatio1e3, 0.25)
	near(t, "ErrRatio5e3", m.ErrRatio5e3, 0)
	wantHist := map[string]int{"0": 1, "1": 1, "2": 1, ">16": 1, "nonfinite": 1}
	if !reflect.DeepEqual(m.UlpHist, wantHist) {
		t.Errorf("UlpHist = %v, want %v", m.UlpHist, wantHist)
	}
	near(t, "Tightness", m.Tightness, 2)
	if m.OutOfBound != 2 || m.NonFiniteMismatch != 0 || m.Ambiguous != 0 {
		t.Errorf("OutOfBound, NonFiniteMismatch, Ambiguous = %d, %d, %d; want 2, 0, 0", m.OutOfBound, m.NonFiniteMismatch, m.Ambiguous)
	}
	// Worst: elements 2 and 3 tie at e/b = 2, 2 has the larger error;
	// then 1 (e/b = 1). Element 0 has no error and is not listed.
	var idx []int
	for _, e := range m.Worst {
		idx = append(idx, e.Index)
	}
	if !reflect.DeepEqual(idx, []int{2, 3, 1}) {
		t.Errorf("Worst indices = %v, want [2 3 1]", idx)
	}
	if e := m.Worst[0]; e.Got != -4-pow2(-7) || e.Ref != -4 || e.Bound != pow2(-8) {
		t.Errorf("Worst[0] = %+v", e)
	}
}

func TestComputeNonFiniteAndAmbiguous(t *testing.T) {
	//   i  ref    alt   bound  got        outcome
	//   0  65504  +inf  32     +inf       ambiguous, took the overflow
	//   1  65504  +inf  32     65504      ambiguous, stayed finite, e = 0
	//   2  1      -     0      NaN        class mismatch
	//   3  NaN    -     NaN    NaN        accepted (own class)
	//   4  1      -     0      1+2^-10    e > 0 = bound: e/b = +Inf
	w := bound.NewExpected(5)
	copy(w.Ref, []float64{65504, 65504, 1, math.NaN(), 1})
	copy(w.Bound, []float64{32, 32, 0, math.NaN(), 0})
	copy(w.Alt, []bound.Special{bound.PosInf, bound.PosInf, 0, 0, 0})
	got := mk(t, tensor.Float16, []float64{math.Inf(1), 65504, math.NaN(), math.NaN(), 1 + pow2(-10)})
	m := Compute(got, w)
	if m.Ambiguous != 2 || m.AmbiguousTaken != 1 {
		t.Errorf("Ambiguous, AmbiguousTaken = %d, %d; want 2, 1", m.Ambiguous, m.AmbiguousTaken)
	}
	if m.NonFiniteMismatch != 1 || m.OutOfBound != 1 || m.Compared != 2 {
		t.Errorf("NonFiniteMismatch, OutOfBound, Compared = %d, %d, %d; want 1, 1, 2", m.NonFiniteMismatch, m.OutOfBound, m.Compared)
	}
	if !math.IsInf(m.Tightness, 1) {
		t.Errorf("Tightness = %v, want +Inf", m.Tightness)
	}
	if h := m.UlpHist; h["nonfinite"] != 3 || h["0"] != 1 || h["1"] != 1 {
		t.Errorf("UlpHist = %v", h)
	}
	if len(m.Worst) != 2 || m.Worst[0].Index != 2 || m.Worst[1].Index != 4 || m.Worst[0].Note == "" {
		t.Errorf("Worst = %+v, want the mismatch at 2 (with a note), then 4", m.Worst)
	}

	// Metrics with +Inf and NaN survive a JSON round trip.
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back Metrics
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	if !math.IsInf(back.Tightness, 1) || !math.IsNaN(back.Worst[0].Got) || back.Worst[0].Alt != 0 ||
		back.Ambiguous != 2 || !reflect.DeepEqual(back.UlpHist, m.UlpHist) || back.Worst[0].Note != m.Worst[0].Note {
		t.Errorf("round trip: %+v from %s", back, b)
	}
}

func TestComputeCosineEdges(t *testing.T) {
	zero := []float64{0, 0}
	if m := Compute(mk(t, tensor.Float32, zero), expected(zero, 0)); m.Cosine != 1 || m.RMSE != 0 {
		t.Errorf("both zero: cosine %v, rmse %v; want 1, 0", m.Cosine, m.RMSE)
	}
	if m := Compute(mk(t, tensor.Float32, zero), expected([]float64{1, 0}, 0)); m.Cosine != 0 {
		t.Errorf("got zero, ref not: cosine %v, want 0", m.Cosine)
	}
	// Opposite vectors: −1; huge fp64 values do not overflow the sums.
	big := []float64{1e300, -1e300}
	m := Compute(mk(t, tensor.Float64, big), expected([]float64{-1e300, 1e300}, 0))
	near(t, "cosine of opposite vectors", m.Cosine, -1)
	near(t, "RMSE of huge values", m.RMSE, 2e300)
}

func TestUlpBuckets(t *testing.T) {
	for u, want := range map[float64]string{0: "0", 0.5: "1", 1: "1", 1.5: "2", 2: "2", 3: "3-4", 4: "3-4", 5: "5-8", 8: "5-8", 9: "9-16", 16: "9-16", 17: ">16"} {
		if got := ulpBucket(u); got != want {
			t.Errorf("ulpBucket(%v) = %q, want %q", u, got, want)
		}
	}
}
