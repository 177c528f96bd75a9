package verify

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// mk builds a 1-D tensor of dtype d holding exactly vals (it fails the
// test if a value is not representable, so tests never judge values they
// did not mean).
func mk(t *testing.T, d tensor.DType, vals []float64) *tensor.Tensor {
	t.Helper()
	tt, err := tensor.FromFloat64(d, []int{len(vals)}, vals, tensor.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if g := tt.Float64(i); g != v && !(math.IsNaN(g) && math.IsNaN(v)) {
			t.Fatalf("value %v at %d is not a %s value (stored %v)", v, i, d, g)
		}
	}
	return tt
}

// expected builds an Expected with the given refs and a constant bound.
func expected(ref []float64, b float64) *bound.Expected {
	w := bound.NewExpected(len(ref))
	copy(w.Ref, ref)
	for i := range w.Bound {
		w.Bound[i] = b
	}
	return w
}

// randRefs returns n values of dtype d, uniform in [lo, hi) then rounded,
// from a fixed seed.
func randRefs(d tensor.DType, n int, lo, hi float64, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = tensor.Numerics{}.Round(lo+float64((hi-lo)*r.Float64()), d)
	}
	return out
}

// shifted returns a copy of ref with element i moved by k ulps of d.
func shifted(d tensor.DType, ref []float64, k float64, idx ...int) []float64 {
	out := append([]float64(nil), ref...)
	for _, i := range idx {
		out[i] += float64(k * ulpOf(d, out[i]))
	}
	return out
}

func pow2(k int) float64 { return math.Ldexp(1, k) }

func judge(t *testing.T, spelling string, in Input) Verdict {
	t.Helper()
	p, err := ParsePolicy(spelling)
	if err != nil {
		t.Fatal(err)
	}
	v := p.Judge(in)
	if v.Policy != p.Name() {
		t.Errorf("verdict policy %q, want %q", v.Policy, p.Name())
	}
	return v
}

func wantPass(t *testing.T, v Verdict) {
	t.Helper()
	if !v.Pass {
		t.Errorf("%s failed, want pass: %s", v.Policy, v.Details(nil))
	}
}

func wantFail(t *testing.T, v Verdict) {
	t.Helper()
	if v.Pass {
		t.Errorf("%s passed, want failure: %s", v.Policy, v.Reason)
	}
	if v.Reason == "" {
		t.Errorf("%s failed without a reason", v.Policy)
	}
}
