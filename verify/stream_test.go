package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// TestStreamMatchesCompute holds a Stream fed seeded random blocks (from
// one element to several chunks, ending inside chunks and on their
// boundaries) to Compute on the whole Expected, every field bit for bit,
// on outputs of every kind of element (mixedCase) and sizes around the
// sum chunk. Fed in the wrong amounts, it fails instead of judging.
func TestStreamMatchesCompute(t *testing.T) {
	const seed = 23
	r := rand.New(rand.NewPCG(seed, 0))
	for _, d := range []tensor.DType{tensor.Float16, tensor.Float32, tensor.Float64, tensor.Int8} {
		for _, n := range []int{1, 2, sumChunk - 1, sumChunk, sumChunk + 1, 3*sumChunk + 5, 100003} {
			got, want := mixedCase(r, d, n)
			wantM := fmt.Sprintf("%+v", Compute(got, want))
			for split := range 4 {
				s := NewStream(got)
				var sizes []int
				for lo := 0; lo < n; {
					k := 1 + r.IntN(n-lo)
					switch split {
					case 0: // a few elements
						k = min(k, 1+r.IntN(7))
					case 1: // up to a chunk boundary
						k = min(n, (lo/sumChunk+1)*sumChunk) - lo
					case 2: // within a few chunks
						k = min(k, 1+r.IntN(3*sumChunk))
					}
					if err := s.Add(want.Window(lo, k)); err != nil {
						t.Fatalf("verify Stream %s n=%d seed=%d: Add [%d, %d): %v", d, n, seed, lo, lo+k, err)
					}
					sizes = append(sizes, k)
					lo += k
				}
				m, err := s.Metrics()
				if err != nil {
					t.Fatalf("verify Stream %s n=%d seed=%d blocks %v: Metrics: %v", d, n, seed, sizes, err)
				}
				if g := fmt.Sprintf("%+v", m); g != wantM {
					t.Fatalf("verify Stream %s n=%d split=%d seed=%d blocks %.20v: got %s / want (Compute) %s", d, n, split, seed, sizes, g, wantM)
				}
			}
		}
	}
	got, want := mixedCase(r, tensor.Float32, 10)
	s := NewStream(got)
	if err := s.Add(want.Window(0, 4)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Metrics(); err == nil || !strings.Contains(err.Error(), "4 of 10") {
		t.Errorf("verify Stream n=10: Metrics after 4 elements: got error %v, want one naming 4 of 10", err)
	}
	if err := s.Add(want); err == nil || s.Added() != 4 {
		t.Errorf("verify Stream n=10: Add of 10 more after 4: got error %v, %d added, want an error and 4 added", err, s.Added())
	}
}

// TestCheckMetricsMatchesCheck: judging a Stream's metrics with
// CheckMetrics gives Check's Result on the whole Expected (verdicts,
// reasons, failing elements), for a failing output and a passing one;
// policies that read more than the metrics, and outputs that do not
// match the metrics, are errors.
func TestCheckMetricsMatchesCheck(t *testing.T) {
	const seed = 29
	r := rand.New(rand.NewPCG(seed, 0))
	s := Subject{Op: "gemm", Params: "mode=fp16", Seed: seed}
	bad, badWant := mixedCase(r, tensor.Float16, 3*sumChunk+7)
	good := tensor.MustNew(tensor.Float32, 100)
	goodWant := bound.NewExpected(100)
	for i := range 100 {
		goodWant.Ref[i], goodWant.Bound[i] = float64(i), 0.5
		good.SetFloat64(i, float64(i)+0.25, tensor.Numerics{})
	}
	got := map[string]*tensor.Tensor{"bad": bad, "good": good}
	want := map[string]*bound.Expected{"bad": badWant, "good": goodWant}
	metrics := map[string]Metrics{}
	for name, w := range want {
		st := NewStream(got[name])
		for lo := 0; lo < w.Span(); lo += 5000 {
			if err := st.Add(w.Window(lo, min(5000, w.Span()-lo))); err != nil {
				t.Fatal(err)
			}
		}
		m, err := st.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		metrics[name] = m
	}
	wantRes, err := Check(s, got, want, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	gotRes, err := CheckMetrics(s, got, metrics, nil)
	if err != nil {
		t.Fatalf("%s: CheckMetrics: %v", s, err)
	}
	if g, w := fmt.Sprintf("%+v", gotRes), fmt.Sprintf("%+v", wantRes); g != w || wantRes.Pass {
		t.Fatalf("%s: CheckMetrics = %s / want (Check, failing) %s", s, g, w)
	}
	for _, c := range []struct {
		got      map[string]*tensor.Tensor
		policies []Policy
		want     string
	}{
		{got, []Policy{MustParsePolicy("ulp(n=2)")}, "does not judge by the metrics alone"},
		{map[string]*tensor.Tensor{"bad": bad}, nil, `output "good": missing`},
		{map[string]*tensor.Tensor{"bad": bad, "good": good, "x": good}, nil, `output "x": not in the expected outputs`},
		{map[string]*tensor.Tensor{"bad": good, "good": good}, nil, `output "bad": got fp32[100] with 100 elements, want 24583`},
	} {
		if _, err := CheckMetrics(s, c.got, metrics, c.policies); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: CheckMetrics(%v): got error %v, want one containing %q", s, c.policies, err, c.want)
		}
	}
}

// TestComputeOverflowingError: an fp64 output whose error overflows
// (got and reference finite, their difference not) has MaxAbs and RMSE
// +Inf, whole and streamed, as the single loop says; and where the
// bound of such an element is +Inf, it is within it with e/b = 0
// (ratio's convention), wherever it sits among others (FuzzCompute found
// Compute's tightness 0 and the single loop's NaN there).
func TestComputeOverflowingError(t *testing.T) {
	for _, n := range []int{1, 4, 9, 2051} {
		for _, at := range []int{0, n / 2, n - 1} {
			got := tensor.MustNew(tensor.Float64, n)
			want := bound.NewExpected(n)
			for i := range n {
				got.SetFloat64(i, float64(i), tensor.Numerics{})
				want.Ref[i], want.Bound[i] = float64(i)+0.5, 1
			}
			got.SetFloat64(at, -1.5e308, tensor.Numerics{})
			want.Ref[at], want.Bound[at], want.Alt[at] = math.MaxFloat64, math.Inf(1), bound.PosInf
			tight := 0.5 // the others' 0.5 against 1
			if n == 1 {
				tight = 0
			}
			m, w := Compute(got, want), computeSerial(got, want)
			if m.Tightness != tight || fmt.Sprintf("%+v", m) != fmt.Sprintf("%+v", w) {
				t.Errorf("verify Compute fp64 n=%d, element %d -1.5e308 against MaxFloat64 within +Inf: got %+v / want Tightness %v, as %+v", n, at, m, tight, w)
			}
		}
	}

	got := tensor.MustNew(tensor.Float64, 3)
	want := bound.NewExpected(3)
	for i, v := range [][2]float64{{1e308, -1e308}, {1, 1}, {2, 2.5}} {
		got.SetFloat64(i, v[0], tensor.Numerics{})
		want.Ref[i], want.Bound[i] = v[1], 1
	}
	m := Compute(got, want)
	s := NewStream(got)
	for i := range 3 {
		if err := s.Add(want.Window(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	sm, err := s.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	w := computeSerial(got, want)
	for _, c := range []Metrics{m, sm} {
		if !math.IsInf(c.MaxAbs, 1) || !math.IsInf(c.RMSE, 1) || fmt.Sprintf("%+v", c) != fmt.Sprintf("%+v", w) {
			t.Errorf("verify Compute fp64 [1e308 1 2] against [-1e308 1 2.5]: got %+v / want MaxAbs, RMSE +Inf, as %+v", c, w)
		}
	}
}
