package npu

import (
	"math"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestHoldsNegZeroOrSNaN holds holdsNegZeroOrSNaN, with and without its
// AVX2 scan (where the CPU has AVX2), and its Go loop to the definition
// (−0, or a NaN whose quiet bit is clear): every combination of sign,
// exponent, quiet bit and the next two payload bits, with four patterns
// of the payload's low 20 bits, alone among 1s at every position of 17
// values (two groups of eight and a Go tail); and the two it must find
// and four it must not at every position of 1 to 40 values.
func TestHoldsNegZeroOrSNaN(t *testing.T) {
	defer func(v bool) { useScanAVX2 = v }(useScanAVX2)
	modes := []bool{false}
	if cpu.X86.HasAVX2 && useScanAVX2 {
		modes = append(modes, true)
	}
	want := func(u uint32) bool {
		v := math.Float32frombits(u)
		return u == 0x80000000 || v != v && u&0x00400000 == 0
	}
	vec := make([]float32, 40)
	check := func(avx2 bool, u uint32, n int) {
		t.Helper()
		w := want(u)
		for p := range n {
			for i := range vec[:n] {
				vec[i] = 1
			}
			vec[p] = math.Float32frombits(u)
			if got := holdsNegZeroOrSNaN(vec[:n]); got != w {
				t.Fatalf("holdsNegZeroOrSNaN (AVX2 %v) on %d values, %#08x at %d, the rest 1: got %v, want %v", avx2, n, u, p, got, w)
			}
		}
	}
	for _, avx2 := range modes {
		useScanAVX2 = avx2
		for hi := range uint32(1 << 12) {
			for _, lo := range []uint32{0, 1, 0xAAAAA, 0xFFFFF} {
				u := hi<<20 | lo
				if got, w := holdsNegZeroOrSNaNGo([]float32{math.Float32frombits(u)}), want(u); got != w {
					t.Fatalf("holdsNegZeroOrSNaNGo([%#08x]) = %v, want %v", u, got, w)
				}
				check(avx2, u, 17)
			}
		}
		for _, u := range []uint32{0x80000000, 0xFF800001, 0, 0x7F800000, 0x7FC00000, 0x80000001} {
			for n := 1; n <= len(vec); n++ {
				check(avx2, u, n)
			}
		}
		if holdsNegZeroOrSNaN(nil) {
			t.Errorf("holdsNegZeroOrSNaN (AVX2 %v) of no values = true, want false", avx2)
		}
	}
}

// BenchmarkHoldsNegZeroOrSNaN is the scan of a 128×256 accumulator tile
// that holds neither (the whole tile read), with and without AVX2.
func BenchmarkHoldsNegZeroOrSNaN(b *testing.B) {
	defer func(v bool) { useScanAVX2 = v }(useScanAVX2)
	c := make([]float32, 128*256)
	for i := range c {
		c[i] = float32(i%1000) - 500.5
	}
	hasAVX2 := cpu.X86.HasAVX2 && useScanAVX2
	for _, avx2 := range []bool{false, true} {
		name := "go"
		if avx2 {
			if !hasAVX2 {
				continue
			}
			name = "avx2"
		}
		b.Run(name, func(b *testing.B) {
			useScanAVX2 = avx2
			b.SetBytes(int64(4 * len(c)))
			for b.Loop() {
				if holdsNegZeroOrSNaN(c) {
					b.Fatal("found one")
				}
			}
		})
	}
}
