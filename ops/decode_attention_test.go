package ops_test

import (
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// TestAscendAttentionRatio: the standard |d| ≤ 2^-8·max(1, |r|) as a ratio.
func TestAscendAttentionRatio(t *testing.T) {
	e := bound.NewExpected(3)
	e.Ref[0], e.Ref[1], e.Ref[2] = 0.5, 8, -2
	got, err := tensor.FromFloat64(tensor.Float16, []int{3}, []float64{0.5 + 1.0/256, 8 + 8.0/512, -2}, tensor.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	// element 0: |d| = 2^-8 against 2^-8·1 → 1; element 1: 2^-6 against 2^-5 → 0.5.
	if r := ops.AscendAttentionRatio(got, e); r != 1 {
		t.Errorf("AscendAttentionRatio: got %g, want 1", r)
	}
}

// TestDecodeBoundTightness: the decode bound stays within a few fp16 ulps
// of O(1) outputs, tight enough that a wrong kv head's output falls outside.
func TestDecodeBoundTightness(t *testing.T) {
	p, err := ops.DecodeAttention.Validate(ops.Params{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := ops.DecodeAttention.Generate(p, ops.Gen{Dist: ops.DistUniform, Seed: 3,
		Dims: map[string]int{"b": 3, "s": 3, "hq": 2, "h": 2, "d": 16, "l": 32}})
	if err != nil {
		t.Fatal(err)
	}
	e, err := ops.DecodeAttention.Expect(p, in, tensor.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	out := e["out"]
	worst := 0.0
	for i := range out.Len() {
		worst = max(worst, out.Bound[i])
	}
	// fp16 output of O(1) values: the bound must stay within a few fp16 ulps.
	if worst > 1.0/256 {
		t.Errorf("decode_attention %s seed=3: got a worst bound %g, want ≤ 2^-8 (a bound this loose hides wrong heads)", p, worst)
	}
}
