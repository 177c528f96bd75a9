//go:build amd64 && !purego

package gemm32

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFMA32MatchesHardware compares the portable fma32 with one
// VFMADD231SS on random operands, finite and special, and on the cases
// that stress its rounding: sums at fp32 midpoints, overflow at the
// threshold, signed zeros. A NaN must be the default NaN (the package's
// convention), whatever NaN the hardware made.
func TestFMA32MatchesHardware(t *testing.T) {
	if !hasAsm {
		t.Skip("no AVX2+FMA")
	}
	const seed = 11
	r := rand.New(rand.NewPCG(seed, 1))
	kinds := []string{"fp16", "fp32", "special", "small"}
	check := func(a, b, c float32) {
		t.Helper()
		got, want := fma32(a, b, c), fma32AVX2(a, b, c)
		if want != want {
			want = defaultNaN
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("fma32 seed=%d a=%#08x b=%#08x c=%#08x: got %#08x (%g) / want %#08x (%g) (VFMADD231SS)",
				seed, math.Float32bits(a), math.Float32bits(b), math.Float32bits(c), math.Float32bits(got), got, math.Float32bits(want), want)
		}
	}
	for range 2_000_000 {
		a, b, c := value(r, kinds[r.IntN(4)]), value(r, kinds[r.IntN(4)]), value(r, kinds[r.IntN(4)])
		check(a, b, c)
		// A product and an addend that meet at an fp32 midpoint: c's
		// ulp halved, times ±(1 + tiny) to straddle it.
		x := math.Float32frombits(r.Uint32() & 0x7F7FFFFF)
		h := float32(math.Ldexp(1, math.Ilogb(float64(x))-24))
		check(h, 1+float32(math.Ldexp(float64(r.IntN(3)-1), -23)), x)
		check(-h, 1+float32(math.Ldexp(float64(r.IntN(3)-1), -23)), x)
	}
	m := float32(math.MaxFloat32)
	h := float32(math.Ldexp(1, 103)) // half an ulp of MaxFloat32
	for _, c := range [][3]float32{
		{h, 1, m}, {h, 1 - 0x1p-24, m}, {h, 1 + 0x1p-23, m}, {-h, 1, -m}, {-h, 1 - 0x1p-24, -m},
		{0, 1, float32(math.Copysign(0, -1))}, {float32(math.Copysign(0, -1)), 1, float32(math.Copysign(0, -1))},
		{0x1p-100, 0x1p-100, 0}, {-0x1p-100, 0x1p-100, 0}, {0x1p-75, 0x1p-75, float32(math.Copysign(0, -1))},
	} {
		check(c[0], c[1], c[2])
	}
}

// TestKernelsIdentical runs each assembly fp32 micro-kernel the CPU has
// (AVX2, AVX-512) and the portable one on the same full 6×16 tiles (fp32
// values anywhere in the range, specials in C) and requires the same bits.
func TestKernelsIdentical(t *testing.T) {
	if !hasAsm {
		t.Skip("no AVX2+FMA")
	}
	for _, name := range fp32Kernels() {
		restore := useFP32Kernel(name)
		kernelsIdentical(t, name)
		restore()
	}
}

// kernelsIdentical is TestKernelsIdentical with kernelAsm the kernel name.
// With AVX-512 it also holds the kernel of two tiles at once
// (kernelAsmPair) to the portable one on each of its halves.
func kernelsIdentical(t *testing.T, name string) {
	const seed = 7
	r := rand.New(rand.NewPCG(seed, 3))
	pair := kernelAsmPair()
	for trial := range 300 {
		k := 1 + r.IntN(100) // accumulate never runs a kernel on k = 0
		rows, asm, what := mr, microKernel[float32](kernelAsm), name
		if pair != nil && trial%2 == 1 {
			rows, asm, what = 2*mr, pair, name+" two tiles"
		}
		a, lda, b, _, c0, ldc := matrices(r, rows, nr, k, []string{"fp16", "fp32", "small"}[trial%3], "special")
		bp := make([]float32, k*nr)
		packB(bp, b, nr, k, nr)
		got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
		asm(k, a, lda, bp, got, ldc)
		for i0 := 0; i0 < rows; i0 += mr {
			kernelPortable(k, a[i0*lda:], lda, bp, want[i0*ldc:], ldc)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("micro-kernel %s K=%d seed=%d trial %d: C[%d,%d]: got %#08x (asm) / want %#08x (portable)", what, k, seed, trial, i/ldc, i%ldc, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}
