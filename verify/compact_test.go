package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// compactCase builds, from seed, n exact values of dtype d's sums (values
// of every magnitude, zeros of both signs, ties, subnormals, values near
// overflow, ±Inf and NaN), the compact Expected of them under num, the
// same Expected materialized, and a got tensor that is mostly the correct
// rounding with wrong ties, the other zero, values some ulps off, NaN and
// Inf mixed in.
func compactCase(d tensor.DType, num tensor.Numerics, n int, seed uint64) (got *tensor.Tensor, compact, full *bound.Expected) {
	r := rand.New(rand.NewPCG(seed, 3))
	f, isFloat := d.FloatFormat()
	rs := make([]float64, n)
	for i := range rs {
		v := tensor.Numerics{}.Round(r.NormFloat64()*math.Ldexp(1, r.IntN(8)), d)
		if isFloat {
			switch k := r.IntN(60); {
			case k == 0:
				v = math.Copysign(0, -1)
			case k == 1:
				v = 0
			case k == 2: // a tie
				v += float64(f.Ulp(v) / 2)
			case k == 3:
				v = f.MinSubnormal() * float64(r.IntN(9)-4)
			case k == 4:
				v = math.Copysign(f.MaxFinite()+float64(f.Ulp(f.MaxFinite())*float64(r.IntN(3))/2), r.NormFloat64())
			case k == 5:
				v = math.Inf(1 - 2*r.IntN(2))
			case k == 6:
				v = math.NaN()
			case k == 7:
				v = f.MinNormal() * (1 - float64(float64(r.IntN(3))/8))
			}
		} else if r.IntN(20) == 0 {
			v = float64(r.IntN(600) - 300) // saturates
		}
		rs[i] = v
	}
	src := func(off int, dst []float64) { copy(dst, rs[off:off+len(dst)]) }
	compact = bound.NewExactFrom(n, d, num, src)
	full = bound.NewExpected(n)
	for i, v := range rs {
		full.SetExact(i, v, d, num)
	}
	got = tensor.MustNew(d, n)
	for i := range rs {
		g := full.Rounded[i]
		switch k := r.IntN(50); {
		case k == 0 && isFloat:
			g = math.NaN()
		case k == 1 && isFloat:
			g = math.Inf(1)
		case k == 2: // the other zero, or the other side of a tie
			if g == 0 {
				g = -g
			} else if isFloat {
				g = tensor.Numerics{}.Round(g+f.Ulp(g), d)
			} else {
				g++
			}
		case k == 3:
			g = full.Ref[i] * (1 + float64(float64(r.IntN(5)-2)/64))
		}
		got.SetFloat64(i, g, tensor.Numerics{})
	}
	return got, compact, full
}

// TestComputeCompactMatchesSerial holds Compute on a compact Expected
// (read a window at a time, over all cores) to the single loop on the
// same Expected materialized, every field bit for bit, for every output
// dtype of an exact op and every profile, at sizes that split over
// cores.
func TestComputeCompactMatchesSerial(t *testing.T) {
	const seed = 31
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
		for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
			for _, n := range []int{0, 1, 2047, 2049, 70001} {
				got, compact, full := compactCase(d, num, n, seed)
				gotM, wantM := Compute(got, compact), computeSerial(got, full)
				if fmt.Sprintf("%+v", gotM) != fmt.Sprintf("%+v", wantM) {
					t.Fatalf("verify Compute compact %s %v n=%d seed=%d: got %+v / want %+v", d, num, n, seed, gotM, wantM)
				}
			}
		}
	}
}

// TestPoliciesCompactMatchFull judges the same output with every policy
// against a compact Expected and its materialized twin: the verdicts
// (pass, reason, failing elements, metrics) must be identical.
func TestPoliciesCompactMatchFull(t *testing.T) {
	const seed = 32
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
		num := tensor.Numerics{}
		got, compact, full := compactCase(d, num, 5000, seed)
		golden := got.Clone()
		for _, spelling := range []string{"bound", "allclose", "ulp:2", "ascend-thousandth", "ascend-mere", "ascend-mixed", "ascend-dual"} {
			p := MustParsePolicy(spelling)
			gv := p.Judge(Input{Got: got, Want: compact, Golden: golden})
			wv := p.Judge(Input{Got: got, Want: full, Golden: golden})
			if fmt.Sprintf("%+v", gv) != fmt.Sprintf("%+v", wv) {
				t.Fatalf("verify %s %s %v n=5000 seed=%d: compact verdict %+v / full verdict %+v", spelling, d, num, seed, gv, wv)
			}
		}
		gr, err := Check(Subject{Op: "t"}, map[string]*tensor.Tensor{"z": got}, map[string]*bound.Expected{"z": compact}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		wr, err := Check(Subject{Op: "t"}, map[string]*tensor.Tensor{"z": got}, map[string]*bound.Expected{"z": full}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if gr.Failure() != wr.Failure() || gr.Pass {
			t.Fatalf("verify Check %s seed=%d: compact failure %q / full failure %q (want the same, failing)", d, seed, gr.Failure(), wr.Failure())
		}
	}
}
