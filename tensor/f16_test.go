package tensor

import (
	"math"
	"slices"
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
	x, tab := everyF16()
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

// TestFloat64sGrouped holds Float64sGrouped to f16Table on every fp16
// pattern, in groups of eight at strides of 8, 9 and 24 from offsets
// that do and do not fall on a group, with dst's values between the
// groups and after the last left untouched; and to storing nothing and
// reporting false for the dtypes and group sizes it has no direct
// conversion for, and for overlapping groups.
func TestFloat64sGrouped(t *testing.T) {
	const n = 1 << 16
	x, tab := everyF16()
	const guard = 0x7FF8_DEAD_BEEF_0001 // a NaN no conversion produces
	for _, off := range []int{0, 3, 8} {
		for _, stride := range []int{8, 9, 24} {
			runs := (n - off) / 8
			dst := make([]float64, (runs-1)*stride+8+stride)
			for i := range dst {
				dst[i] = math.Float64frombits(guard)
			}
			if !x.Float64sGrouped(off, 8, runs, stride, dst) {
				if useF16C {
					t.Fatalf("tensor Float64sGrouped fp16 off=%d stride=%d: false, want the F16C conversion", off, stride)
				}
				continue
			}
			for i, v := range dst {
				r, c := i/stride, i%stride
				want := uint64(guard)
				if r < runs && c < 8 {
					want = math.Float64bits(tab[uint16(off+r*8+c)])
				}
				if math.Float64bits(v) != want {
					t.Fatalf("tensor Float64sGrouped fp16 off=%d group=8 runs=%d stride=%d: dst[%d] = %#x, want %#x", off, runs, stride, i, math.Float64bits(v), want)
				}
			}
		}
	}
	dst := make([]float64, 64)
	for _, c := range []struct {
		d     DType
		group int
	}{{Float16, 4}, {Float16, 16}, {BFloat16, 8}, {Float32, 8}, {Float64, 8}, {Int8, 8}} {
		y := MustNew(c.d, 64)
		for i := range 64 {
			y.SetFloat64(i, 1, Numerics{})
		}
		if y.Float64sGrouped(0, c.group, 2, c.group, dst) || x.Float64sGrouped(0, 8, 2, 7, dst) {
			t.Errorf("tensor Float64sGrouped %s group=%d (or fp16 at a stride of 7): true, want false (no direct conversion)", c.d, c.group)
		}
		if slices.ContainsFunc(dst, func(v float64) bool { return v != 0 }) {
			t.Fatalf("tensor Float64sGrouped %s group=%d: stored values, want none", c.d, c.group)
		}
	}
}

// everyF16 returns a tensor of the 2^16 fp16 patterns, element i holding
// pattern i, and the table of their float64 values.
func everyF16() (*Tensor, *[1 << 16]float64) {
	x := MustNew(Float16, 1<<16)
	for i := range 1 << 16 {
		x.SetBits(i, uint64(i))
	}
	return x, f16Table()
}

// TestAddFloat64sFrom holds AddFloat64sFrom to its definition, bit for
// bit: every fp16 pattern of x (NaN payloads, subnormals, ±0, ±Inf)
// against a rotated copy of every pattern in y, so that NaN meets NaN of
// another payload, at offsets and lengths around the eight-value step;
// the sum is one float64 addition of the table's exact values, x's
// first. Tensors of any other dtype are left to the caller, dst
// untouched.
func TestAddFloat64sFrom(t *testing.T) {
	const n = 1 << 16
	x, tab := everyF16()
	y := MustNew(Float16, n)
	const rot = 0x7E01 // odd: NaN against NaN, ±Inf against NaN, and a cancelling pair at every step
	for i := range n {
		y.SetBits(i, uint64((i+rot)%n))
	}
	check := func(off, k int) {
		dst := make([]float64, k)
		if !x.AddFloat64sFrom(y, off, dst) {
			if useF16C {
				t.Fatalf("tensor AddFloat64sFrom fp16 off=%d len=%d: not taken with F16C", off, k)
			}
			return
		}
		for i, v := range dst {
			a, b := uint16(off+i), uint16((off+i+rot)%n)
			want := tab[a] + tab[b]
			if math.Float64bits(v) != math.Float64bits(want) {
				t.Fatalf("tensor AddFloat64sFrom fp16 (F16C %v) off=%d len=%d: %#04x + %#04x: got %#x / want %#x", useF16C, off, k, a, b, math.Float64bits(v), math.Float64bits(want))
			}
		}
	}
	for _, off := range []int{0, 1, 3, 7, 0x7BF8} {
		for k := range 18 {
			check(off, k)
		}
	}
	for _, off := range []int{0, 1, 5} {
		check(off, n-off)
		check(off, n-off-4)
	}
	f := MustNew(Float32, 16)
	dst := []float64{42}
	if f.AddFloat64sFrom(f, 0, dst) || x.AddFloat64sFrom(f, 0, dst) || dst[0] != 42 {
		t.Errorf("tensor AddFloat64sFrom fp32: taken or dst written (dst[0] = %g), want false and 42", dst[0])
	}
}
