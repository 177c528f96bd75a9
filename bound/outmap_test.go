package bound

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestOutputMapMatchesOutput: Map is Output, bit for bit, for every dtype
// and numerics profile, on values around every threshold Output
// distinguishes (overflow, subnormal, zero, specials) and on random ones.
func TestOutputMapMatchesOutput(t *testing.T) {
	const seed = 17
	r := rand.New(rand.NewPCG(seed, 1))
	dtypes := []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Float64, tensor.Int8, tensor.Int32}
	var profiles []tensor.Numerics
	for _, o := range []tensor.Overflow{tensor.OverflowInf, tensor.OverflowSaturate} {
		for _, s := range []tensor.Subnormals{tensor.SubnormalKeep, tensor.SubnormalFlush} {
			profiles = append(profiles, tensor.Numerics{Overflow: o, Subnormals: s})
		}
	}
	for _, d := range dtypes {
		var pts []float64
		bounds := []float64{0, 1e-30, 1e-3, 0.5, 1, 1e4, math.Inf(1), math.NaN()}
		if f, ok := d.FloatFormat(); ok {
			// a+b landing exactly on the overflow threshold, and a−b on MinNormal.
			bounds = append(bounds, f.Ulp(f.MaxFinite())/2, f.MinNormal()/2)
			mx, mn := f.MaxFinite(), f.MinNormal()
			for _, x := range []float64{mx, mx + float64(f.Ulp(mx)/2), mn, f.MinSubnormal()} {
				pts = append(pts, x, math.Nextafter(x, 0), math.Nextafter(x, math.Inf(1)))
			}
		}
		pts = append(pts, 0, math.Copysign(0, -1), 1, math.Inf(1), math.Inf(-1), math.NaN(), 127.5, -128.5, 1e300)
		for range 2000 {
			pts = append(pts, math.Ldexp(r.NormFloat64(), r.IntN(80)-40))
		}
		for _, num := range profiles {
			m := NewOutputMap(d, num)
			for _, x := range append(pts, negate(pts)...) {
				for _, b := range append(bounds, math.Abs(x)*r.Float64()*1e-3) {
					gr, gb, ga := m.Map(x, b)
					wr, wb, wa := Output(x, b, d, num)
					if !Identical(gr, wr) || !Identical(gb, wb) || ga != wa {
						t.Fatalf("bound %v %+v seed=%d: OutputMap.Map(%g, %g) = %g, %g, %v, want Output's %g, %g, %v", d, num, seed, x, b, gr, gb, ga, wr, wb, wa)
					}
				}
			}
		}
	}
}

func negate(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = -v
	}
	return out
}
