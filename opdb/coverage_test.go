package opdb

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// TestIsMidpoint: sums exactly halfway between two values of the dtype
// are midpoints, values and near misses are not (binade edges included).
func TestIsMidpoint(t *testing.T) {
	for _, tc := range []struct {
		s    float64
		d    tensor.DType
		want bool
	}{
		{1 + math.Ldexp(1, -11), tensor.Float16, true},    // between 1 and 1+2^-10
		{1 + math.Ldexp(1, -12), tensor.Float16, false},   // a quarter ulp
		{1, tensor.Float16, false},                        // a value
		{2 - math.Ldexp(1, -11), tensor.Float16, true},    // between 2−2^-10 and 2
		{2 - math.Ldexp(1, -12), tensor.Float16, false},   // a quarter ulp below 2
		{2 + math.Ldexp(1, -10), tensor.Float16, true},    // between 2 and 2+2^-9
		{-2.5 * math.Ldexp(1, -9), tensor.Float16, false}, // representable
		{1 + math.Ldexp(1, -8), tensor.BFloat16, true},
		{1 + math.Ldexp(1, -24), tensor.Float32, true},
		{1 + math.Ldexp(1, -25), tensor.Float32, false},
	} {
		if got := isMidpoint(tc.s, tc.d); got != tc.want {
			t.Errorf("isMidpoint(%g, %s): got %v, want %v", tc.s, tc.d, got, tc.want)
		}
	}
}

// TestKVTiesCounted: kv_update's ties distribution holds both kinds of
// int8 quantiser tie in written rows, in both layouts, and uniform inputs
// (projections through dense weights, not fixed bit for bit) hold none.
func TestKVTiesCounted(t *testing.T) {
	dims := map[string]int{"b": 8, "s": 6, "h": 2, "d": 16, "l": 40, "bs": 8}
	for _, layout := range []string{ops.KVContiguous, ops.KVPaged} {
		for _, dist := range []string{ops.DistTies, ops.DistUniform} {
			const seed = 3
			p, err := ops.KVUpdate.Validate(ops.Params{"layout": layout, "cache_dtype": ops.KVInt8})
			if err != nil {
				t.Fatal(err)
			}
			in, err := ops.KVUpdate.Generate(p, ops.Gen{Dims: dims, Dist: dist, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for _, double := range []bool{false, true} {
				n, err := kvInt8Ties(double)(p, in)
				if err != nil {
					t.Fatal(err)
				}
				if (n > 0) != (dist == ops.DistTies) {
					t.Errorf("kv_update %s dist=%s seed=%d: %d ties (double-rounding %v); want some exactly for dist %s", p, dist, seed, n, double, ops.DistTies)
				}
			}
		}
	}
}
