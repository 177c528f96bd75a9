package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSetFloat64sMatchesSetFloat64: the bulk store gives every element the
// bits SetFloat64 gives it, for every dtype under every corner of the
// numerics profile (the IEEE profile takes setRounded's direct path,
// every other profile goes through Round), on values that round up, round
// to even, overflow, fall below the subnormals, and are special.
func TestSetFloat64sMatchesSetFloat64(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 0))
	vals := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		1, -1, 0.5, 1.5, 2.5, -2.5, 127.5, 128.5, -128.5, 255.5, 256, 1e300, -1e300, 1e-300,
		65504, 65519.99, 65520, 3.4e38, 3.5e38, 5.9604644775390625e-08, 2.98e-08, 6.1e-05}
	for len(vals) < 3000 {
		// Random significands at random scales: ties and near-ties of every
		// narrow format come up among them.
		vals = append(vals, math.Ldexp(rng.Float64()*2-1, rng.IntN(300)-150))
	}
	var profiles []Numerics
	for _, o := range []Overflow{OverflowInf, OverflowSaturate} {
		for _, s := range []Subnormals{SubnormalKeep, SubnormalFlush} {
			for _, r := range []Rounding{RoundHalfEven, RoundHalfAway} {
				profiles = append(profiles, Numerics{Overflow: o, Subnormals: s, Int8Rounding: r})
			}
		}
	}
	for _, d := range DTypes() {
		for _, num := range profiles {
			for _, off := range []int{0, 3} {
				bulk, each := MustNew(d, len(vals)+off), MustNew(d, len(vals)+off)
				bulk.SetFloat64s(off, vals, num)
				for i, v := range vals {
					each.SetFloat64(off+i, v, num)
				}
				bad := 0
				for i := range bulk.Len() {
					if got, want := bulk.Bits(i), each.Bits(i); got != want && bad < maxErrors {
						bad++
						t.Errorf("%s %s seed=%d: SetFloat64s(%d, …)[%d] (value %g) = bits %#x, want %#x (SetFloat64)", d, num, seed, off, i, vals[max(0, i-off)], got, want)
					}
				}
			}
		}
	}
}
