package sgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// value draws a float32 of the given kind: "fp16" (an fp16 value: exact
// products), "fp32" (any finite fp32, subnormals and huge values
// included: inexact, overflowing and underflowing products), "special"
// (any bit pattern: Inf, NaN, signalling NaN); ±0 one time in eight.
func value(r *rand.Rand, kind string) float32 {
	if r.IntN(8) == 0 {
		return math.Float32frombits(uint32(r.IntN(2)) << 31)
	}
	switch kind {
	case "fp16":
		e := r.IntN(40) - 24 // subnormal fp16 up to 2^15
		return float32(math.Ldexp(float64(r.IntN(2048)-1024), e-10))
	case "fp32":
		for {
			v := math.Float32frombits(r.Uint32())
			if !math.IsInf(float64(v), 0) && v == v {
				return v
			}
		}
	case "small":
		return float32(r.IntN(9) - 4)
	}
	return math.Float32frombits(r.Uint32())
}

// TestFMA32MatchesHardware compares the portable fma32 with one
// VFMADD231SS on random operands, finite and special, and on the cases
// that stress its rounding: sums at fp32 midpoints, overflow at the
// threshold, signed zeros.
func TestFMA32MatchesHardware(t *testing.T) {
	if !hasAsm {
		t.Skip("no AVX2+FMA")
	}
	const seed = 11
	r := rand.New(rand.NewPCG(seed, 1))
	kinds := []string{"fp16", "fp32", "special", "small"}
	check := func(a, b, c float32, payload bool) {
		t.Helper()
		got, want := fma32(a, b, c), fma32AVX2(a, b, c)
		if math.Float32bits(got) != math.Float32bits(want) && (payload || got == got || want == want) {
			t.Fatalf("fma32 seed=%d a=%#08x b=%#08x c=%#08x: got %#08x (%g) / want %#08x (%g) (VFMADD231SS)",
				seed, math.Float32bits(a), math.Float32bits(b), math.Float32bits(c), math.Float32bits(got), got, math.Float32bits(want), want)
		}
	}
	for range 2_000_000 {
		a, b, c := value(r, kinds[r.IntN(4)]), value(r, kinds[r.IntN(4)]), value(r, kinds[r.IntN(4)])
		check(a, b, c, a == a && b == b)
		// A product and an addend that meet at an fp32 midpoint: c's
		// ulp halved, times ±(1 + tiny) to straddle it.
		x := math.Float32frombits(r.Uint32() & 0x7F7FFFFF)
		h := float32(math.Ldexp(1, math.Ilogb(float64(x))-24))
		check(h, 1+float32(math.Ldexp(float64(r.IntN(3)-1), -23)), x, true)
		check(-h, 1+float32(math.Ldexp(float64(r.IntN(3)-1), -23)), x, true)
	}
	m := float32(math.MaxFloat32)
	h := float32(math.Ldexp(1, 103)) // half an ulp of MaxFloat32
	for _, c := range [][3]float32{
		{h, 1, m}, {h, 1 - 0x1p-24, m}, {h, 1 + 0x1p-23, m}, {-h, 1, -m}, {-h, 1 - 0x1p-24, -m},
		{0, 1, float32(math.Copysign(0, -1))}, {float32(math.Copysign(0, -1)), 1, float32(math.Copysign(0, -1))},
		{0x1p-100, 0x1p-100, 0}, {-0x1p-100, 0x1p-100, 0}, {0x1p-75, 0x1p-75, float32(math.Copysign(0, -1))},
	} {
		check(c[0], c[1], c[2], true)
	}
}

// matrices draws A [m × k] (row stride lda), B [k × n] (row stride ldb)
// and C [m × n] (row stride ldc) of the given kinds, strides padded at
// random; the padding holds NaN so that a read of it shows.
func matrices(r *rand.Rand, m, n, k int, kindAB, kindC string) (a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	lda, ldb, ldc = k+r.IntN(3), n+r.IntN(3), n+r.IntN(3)
	fill := func(rows, cols, ld int, kind string) []float32 {
		s := make([]float32, max(0, (rows-1)*ld+cols))
		for i := range s {
			s[i] = float32(math.NaN())
			if i%ld < cols {
				s[i] = value(r, kind)
			}
		}
		return s
	}
	return fill(m, k, lda, kindAB), lda, fill(k, n, ldb, kindAB), ldb, fill(m, n, ldc, kindC), ldc
}

// TestAccumulateMatchesSequential checks Accumulate (assembly where the
// CPU has it) and AccumulatePortable against the sequential model written
// plainly (fma32 per element, k ascending) on random shapes, edge sizes
// off the 6×16 register block included, with fp16-valued, any finite
// fp32 and special (Inf, NaN, signalling NaN, −0, subnormal) operands and
// accumulators: the same bits, NaN payloads included when A and B are
// finite (NaN-ness only otherwise, see the package comment), and the
// padding between rows untouched.
func TestAccumulateMatchesSequential(t *testing.T) {
	const seed = 5
	r := rand.New(rand.NewPCG(seed, 2))
	kinds := []string{"fp16", "fp32", "special", "small"}
	for trial := range 600 {
		m, n, k := 1+r.IntN(30), 1+r.IntN(50), r.IntN(70)
		if trial%5 == 0 {
			m, n = mr*(1+r.IntN(4)), nr*(1+r.IntN(3))
		}
		kindAB, kindC := kinds[r.IntN(4)], kinds[r.IntN(4)]
		a, lda, b, ldb, c0, ldc := matrices(r, m, n, k, kindAB, kindC)
		payload := kindAB != "special"
		want := append([]float32(nil), c0...)
		for i := range m {
			for j := range n {
				acc := want[i*ldc+j]
				for kk := range k {
					acc = fma32(a[i*lda+kk], b[kk*ldb+j], acc)
				}
				want[i*ldc+j] = acc
			}
		}
		for _, run := range []struct {
			name string
			f    func(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int)
		}{{"Accumulate", Accumulate}, {"AccumulatePortable", AccumulatePortable}} {
			got := append([]float32(nil), c0...)
			run.f(m, n, k, a, lda, b, ldb, got, ldc)
			for i := range got {
				g, w := math.Float32bits(got[i]), math.Float32bits(want[i])
				if g != w && (payload || got[i] == got[i] || want[i] == want[i] || i%ldc >= n) {
					t.Fatalf("%s M=%d N=%d K=%d lda=%d ldb=%d ldc=%d A,B=%s C=%s seed=%d trial %d: C[%d,%d]: got %#08x (%g) / want %#08x (%g) (sequential fma32)",
						run.name, m, n, k, lda, ldb, ldc, kindAB, kindC, seed, trial, i/ldc, i%ldc, g, got[i], w, want[i])
				}
			}
		}
	}
}

// TestKernelsIdentical runs the assembly and the portable micro-kernel on
// the same full 6×16 tiles (fp32 values anywhere in the range, specials
// in C) and requires the same bits.
func TestKernelsIdentical(t *testing.T) {
	if !hasAsm {
		t.Skip("no AVX2+FMA")
	}
	const seed = 7
	r := rand.New(rand.NewPCG(seed, 3))
	for trial := range 300 {
		k := 1 + r.IntN(100) // accumulate never runs a kernel on k = 0
		a, lda, b, _, c0, ldc := matrices(r, mr, nr, k, []string{"fp16", "fp32", "small"}[trial%3], "special")
		bp := make([]float32, k*nr)
		packB(bp, b, nr, k, nr)
		got, want := append([]float32(nil), c0...), append([]float32(nil), c0...)
		kernelAsm(k, a, lda, bp, got, ldc)
		kernelPortable(k, a, lda, bp, want, ldc)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("micro-kernel K=%d seed=%d trial %d: C[%d,%d]: got %#08x (asm) / want %#08x (portable)", k, seed, trial, i/ldc, i%ldc, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
}

func BenchmarkKernel6x16(b *testing.B) {
	for _, k := range []int{64, 256} {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			a := make([]float32, mr*k)
			bp := make([]float32, k*nr)
			c := make([]float32, mr*nr)
			for i := range a {
				a[i] = 1
			}
			for b.Loop() {
				kernelAsm(k, a, k, bp, c, nr)
			}
			b.ReportMetric(2*mr*nr*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkAccumulate is the single-threaded C += A·B at the shapes of
// the emulated gemm's Mmad at 1024³ (128×176, k 64, A and B rows 1024
// apart) and a square 256.
func BenchmarkAccumulate(b *testing.B) {
	for _, s := range [][4]int{{128, 176, 64, 1024}, {256, 256, 256, 256}} {
		m, n, k, ld := s[0], s[1], s[2], s[3]
		b.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(b *testing.B) {
			a, bb, c := make([]float32, m*ld), make([]float32, k*ld), make([]float32, m*n)
			for b.Loop() {
				Accumulate(m, n, k, a, ld, bb, ld, c, n)
			}
			b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
