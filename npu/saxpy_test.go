package npu

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSaxpyMatchesPortable holds saxpy (eight lanes at a time where the
// CPU has AVX) to saxpyGo, every element bit for bit but a NaN's payload
// (MmadSparse makes every NaN the default NaN afterwards), on lengths 0
// to 40 and 1024 with random fp32 values, the products of fp16 values
// MmadSparse multiplies among them, and ±0, ±Inf, NaN, subnormals and the
// largest finite value.
func TestSaxpyMatchesPortable(t *testing.T) {
	const seed = 61
	r := rand.New(rand.NewPCG(seed, 0))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 65504, 0x1p-24}
	val := func() float32 {
		if r.IntN(6) == 0 {
			return special[r.IntN(len(special))]
		}
		return float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
	}
	for n := range 41 {
		for _, size := range []int{n, 1024} {
			if size == 1024 && n > 0 {
				continue
			}
			for round := range 20 {
				c, y := make([]float32, size), make([]float32, size)
				for j := range c {
					c[j], y[j] = val(), val()
				}
				x := val()
				want := append([]float32(nil), c...)
				saxpyGo(want, x, y)
				saxpy(c, x, y)
				for j := range c {
					g, w := c[j], want[j]
					if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
						t.Fatalf("npu saxpy seed=%d n=%d round %d (AVX %v): c[%d] + %g·%g = %g (%#x) / want %g (%#x)",
							seed, size, round, useSaxpyAVX, j, x, y[j], g, math.Float32bits(g), w, math.Float32bits(w))
					}
				}
			}
		}
	}
}
