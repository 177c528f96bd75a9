package tensor

import "math"

// The decoders below compute the value of a bit pattern from its sign,
// exponent and fraction fields with nothing but integer arithmetic and
// math.Ldexp, so that expected values in the tests never come from the
// code under test or from x448/float16.

// f16Value decodes an IEEE 754 binary16 bit pattern.
func f16Value(b uint16) float64 {
	sign := 1.0
	if b&0x8000 != 0 {
		sign = -1
	}
	exp := int(b>>10) & 0x1f
	frac := float64(b & 0x3ff)
	switch exp {
	case 0: // zero or subnormal: frac·2^-24
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * math.Ldexp(1024+frac, exp-15-10)
}

// bf16Value decodes a bfloat16 bit pattern (1 sign, 8 exponent, 7 fraction bits).
func bf16Value(b uint16) float64 {
	sign := 1.0
	if b&0x8000 != 0 {
		sign = -1
	}
	exp := int(b>>7) & 0xff
	frac := float64(b & 0x7f)
	switch exp {
	case 0: // zero or subnormal: frac·2^-133
		return sign * math.Ldexp(frac, -126-7)
	case 0xff:
		if frac == 0 {
			return sign * math.Inf(1)
		}
		return math.NaN()
	}
	return sign * math.Ldexp(128+frac, exp-127-7)
}

// isF16NaN and isBF16NaN test the bit pattern: exponent all ones, fraction non-zero.
func isF16NaN(b uint16) bool  { return b&0x7c00 == 0x7c00 && b&0x03ff != 0 }
func isBF16NaN(b uint16) bool { return b&0x7f80 == 0x7f80 && b&0x007f != 0 }

// sameFloat reports whether got and want are the same float64 value,
// telling −0 from +0 and treating any NaN as equal to any NaN.
func sameFloat(got, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Float64bits(got) == math.Float64bits(want)
}

// storeBits stores v into a one-element tensor of dtype d under num and
// returns the stored bit pattern.
func storeBits(d DType, v float64, num Numerics) uint64 {
	t := MustNew(d, 1)
	t.SetFloat64(0, v, num)
	return t.Bits(0)
}
