package bound

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// bitsOf returns the value of dtype d with bit pattern b.
func bitsOf(d tensor.DType, b uint64) float64 {
	t := tensor.MustNew(d, 1)
	t.SetBits(0, b)
	return t.Float64(0)
}

// TestSetExactTies pins, by bit pattern, the only value an exact element
// accepts where the exact value is a tie, at a subnormal tie, at ±0 and
// at overflow, under every overflow and subnormal mode; the neighbours a
// half-ulp bound would also accept (the other side of a tie, the other
// zero) are rejected.
func TestSetExactTies(t *testing.T) {
	inf := tensor.Numerics{}
	sat := tensor.Numerics{Overflow: tensor.OverflowSaturate}
	flush := tensor.Numerics{Subnormals: tensor.SubnormalFlush}
	satFlush := tensor.Numerics{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}
	p := math.Ldexp
	tests := []struct {
		name   string
		r      float64 // the exact value
		d      tensor.DType
		num    tensor.Numerics
		want   uint64   // the only accepted pattern
		reject []uint64 // neighbours that must be rejected
	}{
		// fp16: 1 = 0x3c00, ulp(1) = 2^-10; 1 + 2^-11 is a tie, to even 0x3c00.
		{"fp16 tie down to even", 1 + p(1, -11), tensor.Float16, inf, 0x3c00, []uint64{0x3c01}},
		{"fp16 tie up to even", 1 + p(3, -11), tensor.Float16, inf, 0x3c02, []uint64{0x3c01}},
		{"fp16 negative tie", -1 - p(1, -11), tensor.Float16, inf, 0xbc00, []uint64{0xbc01}},
		{"fp16 tie at 2048 (ulp 2)", 2049, tensor.Float16, inf, 0x6800, []uint64{0x6801}},
		// Subnormal tie: 3·2^-25 lies between 2^-24 (0x0001) and 2^-23 (0x0002).
		{"fp16 subnormal tie", p(3, -25), tensor.Float16, inf, 0x0002, []uint64{0x0001}},
		// 2^-14 − 2^-25 lies between 0x03ff and MinNormal 0x0400: even is normal, kept under flush.
		{"fp16 tie onto MinNormal", p(1, -14) - p(1, -25), tensor.Float16, flush, 0x0400, []uint64{0x03ff, 0x0000}},
		{"fp16 subnormal flushed", p(3, -24), tensor.Float16, flush, 0x0000, []uint64{0x0003, 0x8000}},
		{"fp16 negative subnormal flushed", -p(3, -24), tensor.Float16, satFlush, 0x8000, []uint64{0x8003, 0x0000}},
		// bf16: ulp(1) = 2^-7.
		{"bf16 tie down to even", 1 + p(1, -8), tensor.BFloat16, inf, 0x3f80, []uint64{0x3f81}},
		{"bf16 tie up to even", 1 + p(3, -8), tensor.BFloat16, inf, 0x3f82, []uint64{0x3f81}},
		{"bf16 subnormal tie", p(1, -133) + p(1, -134), tensor.BFloat16, inf, 0x0002, []uint64{0x0001}},
		// fp32: ulp(1) = 2^-23.
		{"fp32 tie down to even", 1 + p(1, -24), tensor.Float32, inf, 0x3f800000, []uint64{0x3f800001}},
		{"fp32 tie up to even", 1 + p(3, -24), tensor.Float32, sat, 0x3f800002, []uint64{0x3f800001}},
		{"fp32 subnormal tie", p(3, -150), tensor.Float32, inf, 0x00000002, []uint64{0x00000001}},
		// Zeros: the sign is part of the value.
		{"+0", 0, tensor.Float16, inf, 0x0000, []uint64{0x8000}},
		{"-0", math.Copysign(0, -1), tensor.Float16, inf, 0x8000, []uint64{0x0000}},
		{"-0 saturate", math.Copysign(0, -1), tensor.BFloat16, sat, 0x8000, []uint64{0x0000}},
		{"+0 flush", 0, tensor.Float32, flush, 0x00000000, []uint64{0x80000000}},
		// Overflow: 65520 is the tie between 65504 and 2^16, to even: +Inf.
		{"fp16 overflow tie", 65520, tensor.Float16, inf, 0x7c00, []uint64{0x7bff}},
		{"fp16 overflow tie saturates", 65520, tensor.Float16, sat, 0x7bff, []uint64{0x7c00, 0x7bfe}},
		{"fp16 below the overflow tie", 65512, tensor.Float16, inf, 0x7bff, []uint64{0x7c00, 0x7bfe}},
		{"NaN under inf", math.NaN(), tensor.Float16, inf, 0x7e00, []uint64{0x0000, 0x7c00}},
		{"NaN saturates to +0", math.NaN(), tensor.Float16, sat, 0x0000, []uint64{0x8000, 0x7e00}},
		// int8: the profile's integer rounding (to even by default), saturated.
		{"int8 tie", 2.5, tensor.Int8, inf, 2, []uint64{3}},
		{"int8 saturates", 300, tensor.Int8, inf, 0x7f, []uint64{0x7e}},
	}
	for _, tt := range tests {
		e := NewExpected(1)
		e.SetExact(0, tt.r, tt.d, tt.num)
		if !e.IsExact(0) {
			t.Fatalf("%s: SetExact(%g, %s, %s): element not exact", tt.name, tt.r, tt.d, tt.num)
		}
		want := bitsOf(tt.d, tt.want)
		if !e.Accepts(0, want) {
			t.Errorf("%s: SetExact(%g, %s, %s): rejects 0x%x, got Rounded=%g, want accepted=%g",
				tt.name, tt.r, tt.d, tt.num, tt.want, e.Rounded[0], want)
		}
		for _, b := range tt.reject {
			g := bitsOf(tt.d, b)
			if e.Accepts(0, g) {
				t.Errorf("%s: SetExact(%g, %s, %s): accepts 0x%x, got %g, want only 0x%x = %g",
					tt.name, tt.r, tt.d, tt.num, b, g, tt.want, want)
			}
		}
		// The half-ulp bound (Ref, Bound, Alt) still holds the required value.
		if ref, bnd := e.Ref[0], e.Bound[0]; !math.IsNaN(want) && !math.IsInf(want, 0) && !(math.Abs(want-ref) <= bnd) {
			t.Errorf("%s: SetExact(%g, %s, %s): required %g outside Ref %g ± Bound %g", tt.name, tt.r, tt.d, tt.num, want, ref, bnd)
		}
	}
}

// TestExactOnlyWhereSet: elements not marked exact keep the bound rule, and
// the half-ulp bound alone accepts both sides of a tie (which is why
// exact elements exist).
func TestExactOnlyWhereSet(t *testing.T) {
	r := 1 + math.Ldexp(1, -11) // fp16 tie between 1 and 1 + 2^-10
	e := NewExpected(2)
	e.Ref[0], e.Bound[0], e.Alt[0] = Output(r, 0, tensor.Float16, tensor.Numerics{})
	if e.IsExact(0) || e.Exact != nil {
		t.Fatalf("fp16 r=%g: element exact before SetExact", r)
	}
	for _, g := range []float64{1, 1 + math.Ldexp(1, -10)} {
		if !e.Accepts(0, g) {
			t.Errorf("fp16 r=%g: half-ulp bound rejects %g, got bound %g, want both tie neighbours accepted", r, g, e.Bound[0])
		}
	}
	e.SetExact(1, r, tensor.Float16, tensor.Numerics{})
	if e.IsExact(0) || !e.IsExact(1) || e.Accepts(1, 1+math.Ldexp(1, -10)) {
		t.Errorf("fp16 r=%g: exact flags %v, got Accepts(1, 1+2^-10) = %v, want element 1 exact and rejecting it", r, e.Exact, e.Accepts(1, 1+math.Ldexp(1, -10)))
	}
}

func TestIdentical(t *testing.T) {
	nan, negNaN := math.NaN(), math.Copysign(math.NaN(), -1)
	for _, tt := range []struct {
		g, w float64
		want bool
	}{
		{1, 1, true}, {0, 0, true}, {0, math.Copysign(0, -1), false},
		{nan, negNaN, true}, {nan, 0, false}, {math.Inf(1), math.Inf(1), true}, {math.Inf(1), math.Inf(-1), false},
	} {
		if got := Identical(tt.g, tt.w); got != tt.want {
			t.Errorf("Identical(%g, %g) = %v, want %v", tt.g, tt.w, got, tt.want)
		}
	}
}
