package tensor

import (
	"math"
	"testing"

	"github.com/x448/float16"
)

// TestF16CMatchesTable converts every fp16 bit pattern (NaN payloads,
// subnormals, ±0, ±Inf) with Float64sFrom, which uses F16C where the CPU
// has it (useF16C), at every offset and length modulo the vector width,
// and holds each result bit for bit to the table and to float16's own
// conversion.
func TestF16CMatchesTable(t *testing.T) {
	const n = 1 << 16
	x := MustNew(Float16, n)
	for i := range n {
		x.SetBits(i, uint64(i))
	}
	tab := f16Table()
	// Short ranges, all tail, over subnormals, ±1 and the largest finite
	// values of both signs, then long ones ending in the NaNs.
	for _, at := range []int{0x0001, 0x3BFC, 0xBBFC, 0x7BF8, 0xFBF8, 0x8001} {
		for k := range 9 {
			dst := make([]float64, k)
			x.Float64sFrom(at, dst)
			for i, v := range dst {
				b := uint16(at + i)
				if math.Float64bits(v) != math.Float64bits(tab[b]) {
					t.Fatalf("tensor Float64sFrom fp16 (F16C %v) off=%d len=%d: pattern %#04x: got %#x / want %#x", useF16C, at, k, b, math.Float64bits(v), math.Float64bits(tab[b]))
				}
			}
		}
	}
	for _, off := range []int{0, 1, 2, 3, 5} {
		for _, k := range []int{n - off, n - off - 1, n - off - 2, n - off - 3} {
			dst := make([]float64, k)
			x.Float64sFrom(off, dst)
			for i, v := range dst {
				b := uint16(off + i)
				want := float64(float16.Frombits(b).Float32())
				if math.Float64bits(v) != math.Float64bits(tab[b]) || math.Float64bits(v) != math.Float64bits(want) {
					t.Fatalf("tensor Float64sFrom fp16 (F16C %v) off=%d len=%d: pattern %#04x: got %#x / want %#x", useF16C, off, k, b, math.Float64bits(v), math.Float64bits(want))
				}
			}
		}
	}
}

// TestWidenMatchesPortable holds Float64sFrom on bf16 and fp32 tensors
// (AVX2 where the CPU has it, useAVX2) to the one-at-a-time conversions
// bit for bit: every bf16 pattern, and fp32 patterns with every exponent,
// signaling and quiet NaN payloads and subnormals, at several offsets and
// at every length modulo the vector width.
func TestWidenMatchesPortable(t *testing.T) {
	const n = 1 << 16
	b := MustNew(BFloat16, n)
	f := MustNew(Float32, n)
	r := uint32(1)
	for i := range n {
		b.SetBits(i, uint64(i))
		r ^= r << 13 // xorshift: the low bits random, the high bits every sign and exponent
		r ^= r >> 17
		r ^= r << 5
		f.SetBits(i, uint64(uint32(i)<<16|r&0xFFFF))
	}
	for _, x := range []*Tensor{b, f} {
		for _, off := range []int{0, 1, 3, 7} {
			for k := n - off - 8; k <= n-off; k++ {
				got, want := make([]float64, k), make([]float64, k)
				x.Float64sFrom(off, got)
				if x.DType == BFloat16 {
					bf16ToF64Go(want, x.BF16s()[off:off+k])
				} else {
					f32ToF64Go(want, x.F32()[off:off+k])
				}
				for i := range got {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("tensor Float64sFrom %s (AVX2 %v) off=%d len=%d: element %d, pattern %#x: got %#x / want %#x",
							x, useAVX2, off, k, i, x.Bits(off+i), math.Float64bits(got[i]), math.Float64bits(want[i]))
					}
				}
			}
		}
	}
}

// TestF16ToF32sMatchesFloat32 widens every fp16 bit pattern with
// F16ToF32s (F16C where the CPU has it) at several offsets and at every
// length modulo the vector width, and holds each result bit for bit to
// float16's own conversion, and to the portable loop.
func TestF16ToF32sMatchesFloat32(t *testing.T) {
	const n = 1 << 16
	src := make([]float16.Float16, n)
	for i := range src {
		src[i] = float16.Frombits(uint16(i))
	}
	check := func(off, k int) {
		t.Helper()
		got, port := make([]float32, k), make([]float32, k)
		F16ToF32s(got, src[off:off+k])
		widenF16Go(port, src[off:off+k])
		for i := range got {
			p := src[off+i]
			want := math.Float32bits(p.Float32())
			if g := math.Float32bits(got[i]); g != want || math.Float32bits(port[i]) != want {
				t.Fatalf("F16ToF32s (F16C %v) off=%d len=%d: pattern %#04x = %#08x (portable %#08x), want %#08x", useF16C, off, k, p.Bits(), g, math.Float32bits(port[i]), want)
			}
		}
	}
	for _, off := range []int{0, 1, 3, 7} {
		for k := n - off - 8; k <= n-off; k++ {
			check(off, k)
		}
	}
	// Short runs, all tail, over subnormals, ±1 and the largest finite
	// values of both signs.
	for _, at := range []int{0x0001, 0x3BFC, 0xBBFC, 0x7BF8, 0xFBF8, 0x8001} {
		for k := range 17 {
			check(at, k)
		}
	}
}
