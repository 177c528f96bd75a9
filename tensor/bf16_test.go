package tensor

import (
	"math"
	"testing"
)

// TestBF16FromFloat32 checks bit-pattern vectors in the style of
// x448/float16's tests: every expected pattern is written out by hand.
func TestBF16FromFloat32(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   uint32 // float32 bits
		want uint16 // bfloat16 bits
	}{
		{"+0", 0x00000000, 0x0000},
		{"-0", 0x80000000, 0x8000},
		{"1.0", 0x3f800000, 0x3f80},
		{"-1.0", 0xbf800000, 0xbf80},
		{"2.0", 0x40000000, 0x4000},
		{"pi", 0x40490fdb, 0x4049},  // dropped half 0x0fdb < 0x8000
		{"1/3", 0x3eaaaaab, 0x3eab}, // dropped 0xaaab > 0x8000: up
		{"tie to even, stays even", 0x3f808000, 0x3f80},
		{"tie to even, odd rounds up", 0x3f818000, 0x3f82},
		{"just above tie", 0x3f808001, 0x3f81},
		{"just below tie", 0x3f807fff, 0x3f80},
		{"carry into exponent", 0x3fffffff, 0x4000}, // 1.99999988 → 2
		{"bf16 max", 0x7f7f0000, 0x7f7f},
		{"below overflow tie", 0x7f7f7fff, 0x7f7f},
		{"overflow tie rounds to inf", 0x7f7f8000, 0x7f80},
		{"fp32 max rounds to inf", 0x7f7fffff, 0x7f80},
		{"-fp32 max rounds to -inf", 0xff7fffff, 0xff80},
		{"+inf", 0x7f800000, 0x7f80},
		{"-inf", 0xff800000, 0xff80},
		{"bf16 min normal", 0x00800000, 0x0080},
		{"bf16 min subnormal", 0x00010000, 0x0001},
		{"bf16 largest subnormal", 0x007f0000, 0x007f},
		{"largest subnormal rounds up to min normal", 0x007fc000, 0x0080},
		{"fp32 min subnormal rounds to 0", 0x00000001, 0x0000},
		{"half bf16 min subnormal ties to 0", 0x00008000, 0x0000},
		{"above half bf16 min subnormal", 0x00008001, 0x0001},
		{"subnormal tie to even", 0x00018000, 0x0002},
		{"-min subnormal", 0x80010000, 0x8001},
		// NaNs: stay NaN, keep the sign and the top payload, come out quiet.
		{"quiet NaN", 0x7fc00000, 0x7fc0},
		{"quiet NaN, payload", 0x7fc10000, 0x7fc1},
		{"-quiet NaN", 0xffc00000, 0xffc0},
		{"signaling NaN, payload only in dropped bits", 0x7f800001, 0x7fc0},
		{"signaling NaN, top payload", 0x7fa00000, 0x7fe0},
		{"-signaling NaN", 0xff800001, 0xffc0},
		{"all-ones NaN does not carry into the sign", 0x7fffffff, 0x7fff},
	} {
		got := uint16(BF16FromFloat32(math.Float32frombits(tc.in)))
		if got != tc.want {
			t.Errorf("BF16FromFloat32(%#08x) [%s] = %#04x, want %#04x", tc.in, tc.name, got, tc.want)
		}
		if isBF16NaN(tc.want) && got&0x0040 == 0 {
			t.Errorf("BF16FromFloat32(%#08x) [%s] = %#04x, not a quiet NaN", tc.in, tc.name, got)
		}
	}
}

func TestBF16Accessors(t *testing.T) {
	for _, tc := range []struct {
		b    BF16
		want float64
	}{
		{0x3f80, 1},
		{0xc040, -3},
		{0x7f7f, math.Ldexp(2-math.Ldexp(1, -7), 127)},
		{0x0001, math.Ldexp(1, -133)},
		{0x8000, math.Copysign(0, -1)},
		{0xff80, math.Inf(-1)},
	} {
		if got := tc.b.Float64(); !sameFloat(got, tc.want) {
			t.Errorf("BF16(%#04x).Float64() = %x, want %x", uint16(tc.b), got, tc.want)
		}
		if got := tc.b.Float32(); !sameFloat(float64(got), tc.want) {
			t.Errorf("BF16(%#04x).Float32() = %x, want %x", uint16(tc.b), got, tc.want)
		}
		if got := tc.b.Bits(); got != uint16(tc.b) {
			t.Errorf("BF16(%#04x).Bits() = %#04x", uint16(tc.b), got)
		}
	}
	if got := BF16(0x7fc1).Float64(); !math.IsNaN(got) {
		t.Errorf("BF16(0x7fc1).Float64() = %v, want NaN", got)
	}
	// BF16FromFloat64 keeps NaN (quiet) and sign.
	if got := BF16FromFloat64(math.Copysign(math.NaN(), -1)); !isBF16NaN(uint16(got)) || got&0x8000 == 0 {
		t.Errorf("BF16FromFloat64(-NaN) = %#04x, want a negative NaN", uint16(got))
	}
}
