//go:build amd64 && !amd64.v3

package bound

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestLibmMatchesMath holds log1p and expm1 to math.Log1p and math.Expm1
// bit for bit where Go's own portable code is compiled without fused
// multiply-adds (amd64 below v3, which has no assembly for either): the
// copies differ only in rounding every product on its own, which changes
// nothing there. On targets that fuse, math's bits may differ and ours may
// not; the gemm bound digests (ops) pin the values everywhere.
func TestLibmMatchesMath(t *testing.T) {
	const seed = 7
	r := rand.New(rand.NewPCG(seed, 0))
	args := []float64{0, math.Copysign(0, -1), -1, -0.5, 1, math.Inf(1), math.Inf(-1), math.NaN(), 0x1p-54, 0x1p-53, 0x1p-29, 0x1p-24, 0x1p-11, 0x1p-8, 0x1p-20, 709.78, 710, -40, 38.8, 1.04, 0.3465}
	for range 2_000_000 {
		// Log-uniform magnitudes over the ranges the branches split on,
		// both signs (log1p's domain check takes the negative ones below −1).
		x := math.Ldexp(1+r.Float64(), r.IntN(120)-100)
		if r.IntN(2) == 0 {
			x = -x
		}
		args = append(args, x)
	}
	for n := 1; n <= 1<<16; n++ {
		for _, u := range []float64{0x1p-53, 0x1p-24, 0x1p-11, 0x1p-8} {
			args = append(args, float64(n)*math.Log1p(u))
		}
	}
	bad := 0
	for _, x := range args {
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"log1p", log1p(x), math.Log1p(x)}, {"expm1", expm1(x), math.Expm1(x)}} {
			if math.Float64bits(f.got) != math.Float64bits(f.want) && !(math.IsNaN(f.got) && math.IsNaN(f.want)) {
				if bad++; bad <= 10 {
					t.Errorf("%s(%x) seed=%d: got %x / want %x (math)", f.name, math.Float64bits(x), seed, math.Float64bits(f.got), math.Float64bits(f.want))
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d values differ", bad, 2*len(args))
	}
}
