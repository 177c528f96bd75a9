package npu

import (
	"math"

	"github.com/x448/float16"
)

// f32sToF16 sets z[i] = f32ToF16(s[i]), with the conversion written
// inline so the loop runs without calls. With arith, s holds results of
// arithmetic and a NaN becomes the fp16 default NaN (nan.go), tested only
// in the rare Inf/NaN/overflow branch; otherwise (a conversion) a NaN
// keeps its sign and payload, quieted and truncated.
func f32sToF16(z []float16.Float16, s []float32, arith bool) {
	s = s[:len(z)]
	for i, f := range s {
		u := math.Float32bits(f)
		sign := uint16(u>>16) & 0x8000
		a := u & 0x7FFFFFFF
		switch {
		case a >= 0x47800000:
			if arith && a > 0x7F800000 {
				z[i] = DefaultNaN16Bits
				continue
			}
			z[i] = float16.Fromfloat32(f)
		case a < 0x38800000:
			z[i] = float16.Float16(sign | uint16(math.Float32bits(math.Float32frombits(a)+0.5)-half32))
		default:
			z[i] = float16.Float16(sign | uint16((a+uint32(rebias&0xFFFFFFFF)+(a>>13)&1)>>13))
		}
	}
}

const (
	half32 = 126 << 23 // bits of 0.5
	// rebias subtracts 112<<23 from fp32 bits (fp32 → fp16 exponent bias,
	// wrapping) and adds just under half an fp16 ulp; adding the kept lsb
	// on top makes the rounding half to even.
	rebias = 0xFFF - 112<<23
)

// f32ToF16 rounds f to fp16, ties to even, with overflow to ±Inf: the same
// function as float16.Fromfloat32 (checked exhaustively by
// TestF32ToF16Exhaustive with NPUVERIFY_EXHAUSTIVE=1, and on every
// rounding-relevant bit pattern by the default tests), but branch-light so
// the vector hot loops stay fast. Finite normal results add the rounding
// bias to the fp32 bits; subnormal results let an fp32 addition (round to
// nearest even) align the bits; Inf, NaN and overflow defer to float16.
func f32ToF16(f float32) float16.Float16 {
	u := math.Float32bits(f)
	sign := uint16(u>>16) & 0x8000
	a := u & 0x7FFFFFFF
	switch {
	case a >= 0x47800000: // |f| ≥ 2^16, Inf or NaN: overflow or special
		return float16.Fromfloat32(f)
	case a < 0x38800000: // |f| < 2^-14: fp16 subnormal or zero
		// 0.5 + |f| in fp32 has ulp 2^-24, the fp16 subnormal spacing, so
		// the fp32 addition rounds |f| to fp16 (ties to even) and leaves
		// the result's fraction bits in the low bits.
		s := math.Float32bits(math.Float32frombits(a) + 0.5)
		return float16.Float16(sign | uint16(s-half32))
	default:
		odd := (a >> 13) & 1
		a += uint32(rebias&0xFFFFFFFF) + odd
		return float16.Float16(sign | uint16(a>>13))
	}
}
