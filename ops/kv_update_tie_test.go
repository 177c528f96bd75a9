package ops

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// searchDoubleTieRow searches seeded random fp16 rows of d elements for one
// holding a double-rounding tie of the int8 quantiser under num: an
// element whose RN32 quotient is k+½ while the exact quotient is not, and
// whose two codes differ. It returns the row and the element, or i = −1.
func searchDoubleTieRow(seed uint64, d int, num tensor.Numerics) (row []float64, i, tries int) {
	rng := rand.New(rand.NewPCG(seed, 32))
	round := func(x float64) float64 { return num.Round(x, tensor.Int8) }
	row = make([]float64, d)
	for tries = 1; tries <= 200000; tries++ {
		for j := range row {
			row[j] = (tensor.Numerics{}).Round(rng.NormFloat64(), tensor.Float16)
		}
		q, alt, _ := reference.QuantizeRowTies(row, round)
		for j := range row {
			if q[j] != alt[j] {
				return row, j, tries
			}
		}
	}
	return nil, -1, tries
}

// kvTieCase is kv_update (contiguous, int8, one sequence, one head) on
// the fp16 row x with identity projections, so new_k = new_v = x exactly,
// and the outputs a kernel writes with codes for the written cache rows.
func kvTieCase(t *testing.T, x, codes []float64, scale float64) (Params, map[string]*tensor.Tensor, map[string]*tensor.Tensor) {
	t.Helper()
	d := len(x)
	p, err := KVUpdate.Validate(Params{"layout": KVContiguous, "cache_dtype": KVInt8})
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{
		"x":        tensor.MustNew(tensor.Float16, 1, 1, d),
		"w_k":      tensor.MustNew(tensor.Float16, 1, d, d),
		"w_v":      tensor.MustNew(tensor.Float16, 1, d, d),
		"k_cache":  tensor.MustNew(tensor.Int8, 1, 2, 1, d),
		"v_cache":  tensor.MustNew(tensor.Int8, 1, 2, 1, d),
		"k_scale":  tensor.MustNew(tensor.Float32, 1, 2, 1),
		"v_scale":  tensor.MustNew(tensor.Float32, 1, 2, 1),
		"seq_lens": tensor.MustNew(tensor.Int32, 1),
		"seq_ids":  tensor.MustNew(tensor.Int32, 1),
	}
	for i := range d {
		in["x"].SetFloat64(i, x[i], tensor.Numerics{})
		in["w_k"].SetFloat64(i*d+i, 1, tensor.Numerics{})
		in["w_v"].SetFloat64(i*d+i, 1, tensor.Numerics{})
	}
	out := map[string]*tensor.Tensor{
		"new_k": in["x"].Clone(), "new_v": in["x"].Clone(),
		"k_cache": in["k_cache"].Clone(), "v_cache": in["v_cache"].Clone(),
		"k_scale": in["k_scale"].Clone(), "v_scale": in["v_scale"].Clone(),
		"seq_lens": tensor.MustNew(tensor.Int32, 1), "written": tensor.MustNew(tensor.Uint8, 1),
	}
	out["seq_lens"].I32()[0] = 1
	out["written"].U8()[0] = 1
	for _, c := range []string{"k", "v"} {
		out[c+"_scale"].SetFloat64(0, scale, tensor.Numerics{})
		for i := range d {
			out[c+"_cache"].SetFloat64(i, codes[i], tensor.Numerics{})
		}
	}
	return p, in, out
}

// TestKVUpdateDoubleRoundingTie: where RN32(v/scale) lands on k+½ but the
// exact quotient does not, the code of either quotient passes kv_update's
// int8 invariant and its bound, and a third code fails both; elsewhere in
// the row the invariant stays exact (one code off fails). The row is
// found by a seeded search over random fp16 rows of D = 16, under both
// int8 roundings.
func TestKVUpdateDoubleRoundingTie(t *testing.T) {
	const d, seed = 16, 7
	for _, num := range []tensor.Numerics{{}, {Int8Rounding: tensor.RoundHalfAway}} {
		row, i, tries := searchDoubleTieRow(seed, d, num)
		if i < 0 {
			t.Fatalf("kv_update cache_dtype=int8 d=%d seed=%d num=%v: no double-rounding tie in %d random rows", d, seed, num, tries)
		}
		round := func(x float64) float64 { return num.Round(x, tensor.Int8) }
		q, alt, scale := reference.QuantizeRowTies(row, round)
		if tie, exact := reference.QuotientTie(row[i], scale); !tie || exact {
			t.Fatalf("kv_update d=%d seed=%d num=%v: element %d = %g, scale %g: QuotientTie = %v, %v, want a tie that is not exact", d, seed, num, i, row[i], scale, tie, exact)
		}
		exactQ := row[i] / scale // float64; the tie needs no more precision to be told apart
		third := q[i] - (alt[i] - q[i])
		t.Logf("num=%v: row %d element %d: v=%g scale=%g RN32 quotient %g, float64 quotient %.17g, codes %g (RN32) / %g (exact), third %g",
			num, tries, i, row[i], scale, float64(float32(row[i]/scale)), exactQ, q[i], alt[i], third)
		j := (i + 1) % d
		for _, tc := range []struct {
			name string
			at   int
			code float64
			pass bool
		}{
			{"rn32-quotient", i, q[i], true},
			{"exact-quotient", i, alt[i], true},
			{"third-code", i, third, false},
			{"off-by-one-elsewhere", j, q[j] + math.Copysign(1, -q[j]+0.25), false},
		} {
			codes := append([]float64(nil), q...)
			codes[tc.at] = tc.code
			p, in, out := kvTieCase(t, row, codes, scale)
			vs := kvUpdate{}.CheckOutputs(p, in, out, num)
			want, err := KVUpdate.Expect(p, in, num)
			if err != nil {
				t.Fatal(err)
			}
			inBound := want["k_cache"].Accepts(tc.at, tc.code)
			if tc.pass && (len(vs) != 0 || !inBound) {
				t.Errorf("kv_update %s d=%d seed=%d num=%v: %s: element %d code %g: violations %v, within bound %v; want no violation, within bound", p, d, seed, num, tc.name, tc.at, tc.code, vs, inBound)
			}
			if !tc.pass && len(vs) == 0 {
				t.Errorf("kv_update %s d=%d seed=%d num=%v: %s: element %d code %g: no violation; want %s", p, d, seed, num, tc.name, tc.at, tc.code, CheckInt8Exact)
			}
			if tc.name == "third-code" {
				if inBound {
					t.Errorf("kv_update %s d=%d seed=%d num=%v: third code %g at element %d within bound; want outside (codes %g, %g)", p, d, seed, num, tc.code, tc.at, q[i], alt[i])
				}
				if len(vs) > 0 && !strings.Contains(vs[0].Reason, "double-rounding tie") {
					t.Errorf("kv_update %s d=%d seed=%d num=%v: violation %q does not name the double-rounding tie", p, d, seed, num, vs[0].Reason)
				}
			}
		}
	}
}
