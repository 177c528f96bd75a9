package tensor

import "math"

// BF16 is a bfloat16 value held as its bit pattern: the top 16 bits of an
// IEEE 754 binary32 (1 sign, 8 exponent, 7 fraction bits). Conversions
// from wider formats round to nearest even.
type BF16 uint16

// BF16FromFloat32 rounds f to bfloat16, ties to even, keeping subnormals
// and mapping overflow to ±Inf. NaN stays NaN (quiet, sign kept).
func BF16FromFloat32(f float32) BF16 {
	b := math.Float32bits(f)
	if f != f { // NaN: keep sign, force a quiet NaN that survives truncation
		return BF16(b>>16 | 0x0040)
	}
	// Add 0x7FFF plus the lowest kept bit: carries into the kept half exactly
	// when the dropped half is above the midpoint, or at it with an odd kept
	// half. An overflowing carry lands on the Inf pattern, as it should.
	b += 0x7FFF + (b>>16)&1
	return BF16(b >> 16)
}

// BF16FromFloat64 rounds x to bfloat16 in one step, ties to even (not
// through float32, which could round twice).
func BF16FromFloat64(x float64) BF16 {
	if math.IsNaN(x) {
		return BF16FromFloat32(float32(x))
	}
	f, _ := BFloat16.FloatFormat()
	// The rounded value is a bfloat16 value, so the float32 conversion is exact.
	return BF16FromFloat32(float32(f.RoundNearestEven(x)))
}

// Float32 returns the exact float32 value of b.
func (b BF16) Float32() float32 { return math.Float32frombits(uint32(b) << 16) }

// Float64 returns the exact float64 value of b.
func (b BF16) Float64() float64 { return float64(b.Float32()) }

// Bits returns the bit pattern of b.
func (b BF16) Bits() uint16 { return uint16(b) }
