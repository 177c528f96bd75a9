package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// unchangedCase builds, from seed, a base tensor of n values of d (runs
// of one value, zeros of both signs, subnormals, MaxFinite, ±Inf and NaN
// runs like a cache's poisoned tail), the compact Expected of it stored
// back unchanged under num with a few spans overridden (some elements
// exact), the same Expected materialized, and a got tensor that is
// mostly the base with the spans written, and some elements changed: the
// other zero, an ulp off, NaN, Inf, another NaN.
func unchangedCase(t *testing.T, d tensor.DType, num tensor.Numerics, n int, seed uint64) (got *tensor.Tensor, compact, full *bound.Expected) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 5))
	f, isFloat := d.FloatFormat()
	base := tensor.MustNew(d, n)
	val := func() float64 {
		v := r.NormFloat64() * math.Ldexp(1, r.IntN(8)-4)
		if !isFloat {
			return float64(r.IntN(256) - 128)
		}
		switch k := r.IntN(40); {
		case k <= 2:
			v = finiteEdge(r, f, k)
		case k == 3:
			v = math.Copysign(f.MaxFinite(), r.NormFloat64())
		case k == 4:
			v = math.Inf(1 - 2*r.IntN(2))
		case k == 5:
			v = math.NaN()
		}
		return v
	}
	for i := 0; i < n; {
		run := 1
		if r.IntN(10) == 0 {
			run = r.IntN(3000)
		}
		v := val()
		if isFloat && r.IntN(4) == 0 {
			v = math.NaN() // a poisoned run
		}
		for ; run > 0 && i < n; run, i = run-1, i+1 {
			base.SetFloat64(i, v, tensor.Numerics{})
		}
	}
	compact = bound.NewUnchanged(base, num)
	got = base.Clone()
	for range r.IntN(6) {
		if n == 0 {
			break
		}
		off := r.IntN(n)
		sn := 1 + r.IntN(min(n-off, 3000))
		o, err := compact.Override(off, sn)
		if err != nil {
			continue // overlaps one already there
		}
		for j := range sn {
			x := val()
			if r.IntN(3) == 0 {
				o.SetExact(j, x, d, num)
			} else {
				o.Ref[j], o.Bound[j], o.Alt[j] = bound.Output(x, f.Ulp(x)*float64(r.IntN(3)), d, num)
			}
			g := x
			if r.IntN(8) == 0 {
				g = val()
			}
			got.SetFloat64(off+j, g, tensor.Numerics{})
		}
	}
	for range n / 50 {
		i := r.IntN(n)
		g := got.Float64(i)
		switch k := r.IntN(5); {
		case k == 0 && g == 0:
			g = -g
		case k == 1 && isFloat:
			g = math.NaN()
		case k == 2 && isFloat:
			g = math.Inf(1)
		case k == 3:
			g = tensor.Numerics{}.Round(g+ulpOf(d, g), d)
		default:
			g = val()
		}
		got.SetFloat64(i, g, tensor.Numerics{})
	}
	full = bound.NewUnchanged(base, num)
	_, _, spans, _ := compact.UnchangedBase()
	for _, s := range spans {
		o, _ := full.Override(s.Off, s.N)
		c, _ := compact.Override(s.Off, s.N)
		*o = *c
	}
	full.Materialize()
	return got, compact, full
}

// TestComputeUnchangedMatchesSerial holds Compute on an Expected made by
// bound.NewUnchanged (the base compared bit for bit outside the spans,
// over all cores) to the single loop on the same Expected materialized,
// every field bit for bit, for the dtypes of caches and scales and
// every profile, at sizes that split over cores.
func TestComputeUnchangedMatchesSerial(t *testing.T) {
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8, tensor.Int32} {
		for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
			for _, n := range []int{0, 1, 2047, 2049, 70001} {
				for seed := uint64(40); seed < 43; seed++ {
					got, compact, full := unchangedCase(t, d, num, n, seed)
					gotM, wantM := Compute(got, compact), computeSerial(got, full)
					if fmt.Sprintf("%+v", gotM) != fmt.Sprintf("%+v", wantM) {
						t.Fatalf("verify Compute unchanged %s %v n=%d seed=%d: got %+v / want %+v", d, num, n, seed, gotM, wantM)
					}
					// A correct output: the base with the spans' rounded values.
					ok := got.Clone()
					for i := range n {
						if !(compact.Accepts(i, ok.Float64(i))) {
							ok.SetFloat64(i, compact.RefAt(i), tensor.Numerics{})
							if compact.IsExact(i) {
								ok.SetFloat64(i, compact.RoundedAt(i), tensor.Numerics{})
							}
						}
					}
					gotM, wantM = Compute(ok, compact), computeSerial(ok, full)
					if fmt.Sprintf("%+v", gotM) != fmt.Sprintf("%+v", wantM) {
						t.Fatalf("verify Compute unchanged (accepted output) %s %v n=%d seed=%d: got %+v / want %+v", d, num, n, seed, gotM, wantM)
					}
				}
			}
		}
	}
}

// TestPoliciesUnchangedMatchFull judges the same output with every
// policy against an Expected made by bound.NewUnchanged and its
// materialized twin: the verdicts must be identical.
func TestPoliciesUnchangedMatchFull(t *testing.T) {
	const seed = 44
	for _, d := range []tensor.DType{tensor.Float16, tensor.Float32, tensor.Int8} {
		for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
			got, compact, full := unchangedCase(t, d, num, 20000, seed)
			golden := got.Clone()
			for _, spelling := range []string{"bound", "allclose", "ulp:2", "ascend-thousandth", "ascend-mere", "ascend-mixed", "ascend-dual"} {
				p := MustParsePolicy(spelling)
				gv := p.Judge(Input{Got: got, Want: compact, Golden: golden})
				wv := p.Judge(Input{Got: got, Want: full, Golden: golden})
				if fmt.Sprintf("%+v", gv) != fmt.Sprintf("%+v", wv) {
					t.Fatalf("verify %s %s %v n=20000 seed=%d: compact verdict %+v / full verdict %+v", spelling, d, num, seed, gv, wv)
				}
			}
		}
	}
}

// finiteEdge returns finite edge value k (0, 1 or 2) of f that the cases
// mix in: −0, +0, or a small multiple of the least subnormal.
func finiteEdge(r *rand.Rand, f tensor.Format, k int) float64 {
	switch k {
	case 0:
		return math.Copysign(0, -1)
	case 1:
		return 0
	}
	return f.MinSubnormal() * float64(r.IntN(9)-4)
}
