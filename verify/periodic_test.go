package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// periodicCase builds what a fuzzer's vector_add gives Compute: exact
// values that are sums of two raw bit patterns of d (every class: zeros,
// subnormals, NaN, ±Inf, values near overflow) repeating with a short
// period, so that the element of the largest relative error, and the
// worst elements' keys, recur every few elements; a sixth of the sums
// cancel to zero. faults picks the got:
// 0 the correct rounding everywhere; 1 one ulp off (bits ± 1) at one
// element of the period, so equal-key rejected elements recur; 2 bits ± 1,
// NaN, ±Inf or a zero of either sign at random elements.
func periodicCase(d tensor.DType, num tensor.Numerics, n, period int, faults int, seed uint64) (got *tensor.Tensor, compact, full *bound.Expected) {
	r := rand.New(rand.NewPCG(seed, 17))
	x, y := tensor.MustNew(d, period), tensor.MustNew(d, period)
	for i := range period {
		x.SetBits(i, r.Uint64())
		y.SetBits(i, r.Uint64())
	}
	shift := r.IntN(period)
	for i := range period {
		switch r.IntN(8) {
		case 0, 1: // cancellation: sums of ±0
			y.SetFloat64(i, -x.Float64((i+period-shift)%period), tensor.Numerics{})
		case 2: // ±Inf, rare among random bits (NaN is not)
			x.SetFloat64(i, math.Inf(1-2*r.IntN(2)), tensor.Numerics{})
		}
	}
	rs := make([]float64, n)
	for i := range rs {
		rs[i] = x.Float64(i%period) + y.Float64((i+shift)%period)
	}
	src := func(off int, dst []float64) { copy(dst, rs[off:off+len(dst)]) }
	compact = bound.NewExactFrom(n, d, num, src)
	full = bound.NewExpected(n)
	got = tensor.MustNew(d, n)
	bad := r.IntN(period)
	for i, v := range rs {
		full.SetExact(i, v, d, num)
		got.SetFloat64(i, full.Rounded[i], tensor.Numerics{})
		if faults == 1 && i%period == bad || faults == 2 && r.IntN(97) == 0 {
			switch b := got.Bits(i); {
			case faults == 2 && r.IntN(2) == 0: // another class, or the other zero
				got.SetFloat64(i, []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}[r.IntN(5)], tensor.Numerics{})
			case b&1 == 0:
				got.SetBits(i, b+1)
			default:
				got.SetBits(i, b-1)
			}
		}
	}
	return got, compact, full
}

// TestComputePeriodicMatchesSerial holds Compute on compact Expecteds to
// the single loop on the same Expecteds materialized, with the AVX2 forms
// and with the portable ones forced, on periodic outputs (periodicCase):
// the inline paths' tests for the relative error and the worst elements
// decide an element's fate there at every recurrence, so a test that
// takes an element addBlock would not leave alone shows as a differing
// field.
func TestComputePeriodicMatchesSerial(t *testing.T) {
	defer func(v bool) { useAVX2 = v }(useAVX2)
	vec := useAVX2
	for seed := uint64(1); seed <= 12; seed++ {
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
			for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
				for _, period := range []int{1, 3, 8, 17, 32} {
					for faults := range 3 {
						n := []int{5, 2500, 4099}[seed%3]
						got, compact, full := periodicCase(d, num, n, period, faults, seed)
						serial := fmt.Sprintf("%+v", computeSerial(got, full))
						for _, v := range []bool{false, vec} {
							useAVX2 = v
							if c := fmt.Sprintf("%+v", Compute(got, compact)); c != serial {
								t.Fatalf("verify Compute periodic %s %v n=%d period=%d faults=%d seed=%d (AVX2 %v): got %s / want (single loop) %s",
									d, num, n, period, faults, seed, v, c, serial)
							}
						}
					}
				}
			}
		}
	}
}
