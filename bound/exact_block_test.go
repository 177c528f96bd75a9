package bound

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestSetExactBlockMatches holds SetExactBlock to SetExact element by
// element, bit for bit, for every dtype and profile, on values around
// every threshold of each format (zero, subnormals, MinNormal, MaxFinite,
// the overflow threshold, ±Inf, NaN) and seeded random values.
func TestSetExactBlockMatches(t *testing.T) {
	const seed = 7
	r := rand.New(rand.NewPCG(seed, 0))
	for _, d := range tensor.DTypes() {
		f, isFloat := d.FloatFormat()
		var xs []float64
		if isFloat {
			thr := f.MaxFinite() + float64(f.Ulp(f.MaxFinite())/2)
			for _, v := range []float64{0, f.MinSubnormal(), f.MinNormal(), f.MaxFinite(), thr, math.Inf(1), math.NaN(), 1, 1 + float64(f.Ulp(1)/2)} {
				xs = append(xs, v, -v, math.Nextafter(v, 0), math.Nextafter(v, math.Inf(1)), -math.Nextafter(v, math.Inf(1)))
			}
		}
		for range 20000 {
			xs = append(xs, math.Ldexp(r.NormFloat64(), r.IntN(300)-150), r.NormFloat64()*1000, math.Float64frombits(r.Uint64()))
		}
		for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate}, {Subnormals: tensor.SubnormalFlush}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
			got, want := NewExpected(len(xs)), NewExpected(len(xs))
			got.SetExact(0, xs[0], d, num)
			got.SetExactBlock(1, xs[1:], d, num)
			for i, v := range xs {
				want.SetExact(i, v, d, num)
			}
			same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
			for i, v := range xs {
				if !same(got.Ref[i], want.Ref[i]) || !same(got.Bound[i], want.Bound[i]) || got.Alt[i] != want.Alt[i] ||
					got.Exact[i] != want.Exact[i] || !same(got.Rounded[i], want.Rounded[i]) {
					t.Fatalf("bound SetExactBlock %s %v seed=%d: element %d (r=%g): got ref %g bound %g alt %v rounded %g / want ref %g bound %g alt %v rounded %g",
						d, num, seed, i, v, got.Ref[i], got.Bound[i], got.Alt[i], got.Rounded[i], want.Ref[i], want.Bound[i], want.Alt[i], want.Rounded[i])
				}
			}
		}
	}
}

// TestHasShortForm holds HasShortForm to what the short form needs: a
// floating format whose precision leaves bits of a float64 to round off
// (p < 53), so fp16, bf16 and fp32, and no integer dtype or float64.
func TestHasShortForm(t *testing.T) {
	for d := tensor.DType(0); d < 16; d++ {
		f, isFloat := d.FloatFormat()
		want := isFloat && f.P < 53
		if got := HasShortForm(d); got != want {
			t.Errorf("HasShortForm(%v) = %v, want %v (floating %v, precision %d)", d, got, want, isFloat, f.P)
		}
	}
}
