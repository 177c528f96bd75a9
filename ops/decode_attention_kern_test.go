package ops

import (
	"github.com/npuverify/npuverify/reference"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// sameF64 is bit equality, any NaN matching any NaN (a NaN's payload
// depends on which operand the hardware propagates).
func sameF64(x, y float64) bool {
	return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
}

// daSample draws a kernel test value: ordinary, ±0, subnormal, huge,
// ±Inf or NaN.
func daSample(rng *rand.Rand) float64 {
	switch rng.IntN(16) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		return float64(rng.IntN(9)-4) * 0x1p-1070 // float64 subnormals
	case 3:
		return (float64(2*rngFloat64(rng)) - 1) * 0x1p1000
	case 4:
		return math.Inf(1 - 2*rng.IntN(2))
	case 5:
		if rng.IntN(4) == 0 {
			return math.NaN()
		}
	}
	return float64(2*rngFloat64(rng)) - 1
}

func daSamples(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = daSample(rng)
	}
	return x
}

// TestDecodeCvtF16MatchesGo: the conversion (assembly where available)
// gives f16ToF64's bits on every fp16 bit pattern, NaNs by NaN-ness, at
// every length mod 4.
func TestDecodeCvtF16MatchesGo(t *testing.T) {
	src := make([]float16.Float16, 1<<16)
	for i := range src {
		src[i] = float16.Frombits(uint16(i))
	}
	for _, n := range []int{1 << 16, 1<<16 - 1, 3, 0} {
		got := make([]float64, n)
		daCvtF16(got, src[len(src)-n:])
		for i, g := range got {
			x := src[len(src)-n+i]
			if w := f16ToF64(x); !sameF64(g, w) {
				t.Fatalf("daCvtF16 n=%d fp16 bits %#04x (useAsm=%v): got %#x / want %#x", n, x.Bits(), daUseAsm, math.Float64bits(g), math.Float64bits(w))
			}
		}
	}
}

// TestDecodeKernelsAsmMatchGo holds daScores, daAccumOA and daAccumT3
// (the assembly where available) to their portable Go versions bit for
// bit (NaNs by NaN-ness) on random sizes (head sizes around the 16-column
// blocks, row counts around the 4-row blocks) and values with ±0,
// subnormals, huge values, ±Inf and NaN.
func TestDecodeKernelsAsmMatchGo(t *testing.T) {
	const seed = 41
	rng := rand.New(rand.NewPCG(seed, 0))
	for trial := range 300 {
		d := []int{1, 3, 4, 15, 16, 17, 31, 32, 33, 48, 128}[rng.IntN(11)]
		n := rng.IntN(14)
		if trial%10 == 0 {
			n = decodeChunk
		}
		qT, k := daSamples(rng, d*daLanes), daSamples(rng, n*d)
		s4, m4 := make([]float64, n*daLanes), make([]float64, n*daLanes)
		ws4, wm4 := make([]float64, n*daLanes), make([]float64, n*daLanes)
		daScores(qT, k, d, s4, m4)
		daScoresGo(qT, k, d, ws4, wm4)
		for i := range s4 {
			if !sameF64(s4[i], ws4[i]) || !sameF64(m4[i], wm4[i]) {
				t.Fatalf("daScores d=%d n=%d trial=%d seed=%d: row %d lane %d: got s %g m %g / want s %g m %g", d, n, trial, seed, i/daLanes, i%daLanes, s4[i], m4[i], ws4[i], wm4[i])
			}
		}
		p, o0, a0 := daSamples(rng, n), daSamples(rng, d), daSamples(rng, d)
		o, a, wo, wa := append([]float64(nil), o0...), append([]float64(nil), a0...), append([]float64(nil), o0...), append([]float64(nil), a0...)
		daAccumOA(p, k, o, a)
		daAccumOAGo(p, k, 0, wo, wa)
		for i := range o {
			if !sameF64(o[i], wo[i]) || !sameF64(a[i], wa[i]) {
				t.Fatalf("daAccumOA d=%d n=%d trial=%d seed=%d: column %d: got o %g a %g / want o %g a %g", d, n, trial, seed, i, o[i], a[i], wo[i], wa[i])
			}
		}
		t3, wt3 := append([]float64(nil), a0...), append([]float64(nil), a0...)
		daAccumT3(p, k, o0, t3)
		daAccumT3Go(p, k, 0, o0, wt3)
		for i := range t3 {
			if !sameF64(t3[i], wt3[i]) {
				t.Fatalf("daAccumT3 d=%d n=%d trial=%d seed=%d: column %d: got %g / want %g", d, n, trial, seed, i, t3[i], wt3[i])
			}
		}
	}
}

// TestFmaxIsMathMax: reference.Max gives math.Max's bits on every pair of special
// and ordinary values.
func TestFmaxIsMathMax(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0x1p-1074, -0x1p-1074, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN(), 2.5, -2.5}
	for _, x := range vals {
		for _, y := range vals {
			if g, w := reference.Max(x, y), math.Max(x, y); math.Float64bits(g) != math.Float64bits(w) {
				t.Fatalf("reference.Max(%g, %g): got %g (%#x) / want %g (%#x)", x, y, g, math.Float64bits(g), w, math.Float64bits(w))
			}
		}
	}
}
