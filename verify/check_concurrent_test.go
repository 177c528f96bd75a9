package verify

import (
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// TestCheckConcurrentMatchesCompute holds Check, which computes the
// metrics of its large outputs at once (computeAll), to Compute on each
// output alone: every output's Metrics bit for bit, and the verdicts to
// those of each output judged alone, on a mix of large outputs (compact
// and ordinary Expected sets, float and integer dtypes, wrong elements
// mixed in: compactCase) and small ones computed in turn.
func TestCheckConcurrentMatchesCompute(t *testing.T) {
	const seed = 33
	got := map[string]*tensor.Tensor{}
	want := map[string]*bound.Expected{}
	for k, c := range []struct {
		d       tensor.DType
		n       int
		compact bool
	}{
		{tensor.Float16, 3 * concurrentOutput, true},
		{tensor.Float32, concurrentOutput, false},
		{tensor.Int8, concurrentOutput + 1, true},
		{tensor.BFloat16, concurrentOutput - 1, true},
		{tensor.Float16, 5000, false},
		{tensor.Int8, 2*concurrentOutput + 7, false},
	} {
		g, compact, full := compactCase(c.d, tensor.Numerics{}, c.n, seed+uint64(k))
		name := fmt.Sprintf("o%d_%s_%d", k, c.d, c.n)
		got[name], want[name] = g, full
		if c.compact {
			want[name] = compact
		}
	}
	pols := []Policy{MustParsePolicy("bound"), MustParsePolicy("allclose"), MustParsePolicy("ulp:2")}
	for run := range 3 { // goroutine scheduling differs from run to run
		r, err := Check(Subject{Op: "t", Seed: seed}, got, want, nil, pols)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range r.Outputs {
			alone, err := Check(Subject{Op: "t", Seed: seed}, map[string]*tensor.Tensor{o.Name: got[o.Name]}, map[string]*bound.Expected{o.Name: want[o.Name]}, nil, pols)
			if err != nil {
				t.Fatal(err)
			}
			m := Compute(got[o.Name], want[o.Name])
			if g, w := fmt.Sprintf("%+v", o.Metrics), fmt.Sprintf("%+v", m); g != w {
				t.Fatalf("verify Check seed=%d run=%d: output %s: metrics differ from Compute alone:\ngot  %s\nwant %s", seed, run, o.Name, g, w)
			}
			if g, w := fmt.Sprintf("%+v", o), fmt.Sprintf("%+v", alone.Outputs[0]); g != w {
				t.Fatalf("verify Check seed=%d run=%d: output %s: result differs from the output judged alone:\ngot  %s\nwant %s", seed, run, o.Name, g, w)
			}
		}
	}
}
