package npu

import (
	"math"
	"os"
	"testing"

	"github.com/x448/float16"
)

// TestF32ToF16 checks f32ToF16 against float16.Fromfloat32 on every
// combination of the upper 19 bits (sign, exponent, the fraction bits
// fp16 keeps) with the low 13 bits that decide rounding: zero, the
// smallest sticky bit, just below, at and above the half-way point, all
// ones.
func TestF32ToF16(t *testing.T) {
	lows := []uint32{0x0000, 0x0001, 0x0800, 0x0FFF, 0x1000, 0x1001, 0x17FF, 0x1FFF}
	for hi := uint32(0); hi < 1<<19; hi++ {
		for _, lo := range lows {
			u := hi<<13 | lo
			f := math.Float32frombits(u)
			if got, want := f32ToF16(f), float16.Fromfloat32(f); got != want {
				t.Fatalf("f32ToF16 bits=%#08x (%g): got %#04x want %#04x", u, f, got.Bits(), want.Bits())
			}
		}
	}
}

// TestF32ToF16Exhaustive checks f32ToF16 and f32sToF16 on all 2^32 inputs; it takes tens of seconds
// and runs only with NPUVERIFY_EXHAUSTIVE=1.
func TestF32ToF16Exhaustive(t *testing.T) {
	if os.Getenv("NPUVERIFY_EXHAUSTIVE") == "" {
		t.Skip("set NPUVERIFY_EXHAUSTIVE=1 to check all 2^32 fp32 inputs")
	}
	src := make([]float32, 1<<16)
	dst := make([]float16.Float16, len(src))
	for hi := uint64(0); hi < 1<<16; hi++ {
		for lo := range src {
			src[lo] = math.Float32frombits(uint32(hi<<16 | uint64(lo)))
		}
		f32sToF16(dst, src, false)
		for i, f := range src {
			want := float16.Fromfloat32(f)
			if got := f32ToF16(f); got != want || dst[i] != want {
				t.Fatalf("f32ToF16 bits=%#08x (%g): got %#04x (slice %#04x) want %#04x",
					math.Float32bits(f), f, got.Bits(), dst[i].Bits(), want.Bits())
			}
		}
	}
}

// TestF32sToF16 checks the slice conversion against f32ToF16 on the same
// rounding-relevant patterns.
func TestF32sToF16(t *testing.T) {
	lows := []uint32{0x0000, 0x0001, 0x0800, 0x0FFF, 0x1000, 0x1001, 0x17FF, 0x1FFF}
	src := make([]float32, 0, 1<<19*len(lows))
	for hi := uint32(0); hi < 1<<19; hi++ {
		for _, lo := range lows {
			src = append(src, math.Float32frombits(hi<<13|lo))
		}
	}
	dst := make([]float16.Float16, len(src))
	f32sToF16(dst, src, false)
	for i, f := range src {
		if want := float16.Fromfloat32(f); dst[i] != want {
			t.Fatalf("f32sToF16 bits=%#08x (%g): got %#04x want %#04x", math.Float32bits(f), f, dst[i].Bits(), want.Bits())
		}
	}
	// As the rounding of arithmetic results: the same, except that every
	// NaN becomes the fp16 default NaN.
	f32sToF16(dst, src, true)
	for i, f := range src {
		want := float16.Fromfloat32(f)
		if f != f {
			want = DefaultNaN16Bits
		}
		if dst[i] != want {
			t.Fatalf("f32sToF16 arith bits=%#08x (%g): got %#04x want %#04x", math.Float32bits(f), f, dst[i].Bits(), want.Bits())
		}
	}
}
