package tensor

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/x448/float16"
)

// maxErrors bounds the failures an exhaustive test reports before giving up.
const maxErrors = 20

// TestRoundTripAllPatterns stores every fp16 and every bf16 bit pattern,
// reads it back as float64 and converts that float64 back to the dtype:
// the value must decode as the field arithmetic says, Round must leave it
// unchanged, and SetFloat64 must give back the same bits (a NaN must stay
// a NaN).
func TestRoundTripAllPatterns(t *testing.T) {
	for _, tc := range []struct {
		d      DType
		decode func(uint16) float64
		isNaN  func(uint16) bool
	}{
		{Float16, f16Value, isF16NaN},
		{BFloat16, bf16Value, isBF16NaN},
	} {
		t.Run(tc.d.String(), func(t *testing.T) {
			in, out := MustNew(tc.d, 1), MustNew(tc.d, 1)
			errs := 0
			fail := func(format string, args ...any) {
				t.Helper()
				t.Errorf(format, args...)
				if errs++; errs >= maxErrors {
					t.FailNow()
				}
			}
			for p := 0; p <= 0xffff; p++ {
				b := uint16(p)
				in.SetBits(0, uint64(b))
				v := in.Float64(0)
				if want := tc.decode(b); !sameFloat(v, want) {
					fail("Float64(bits %#04x, %s) = %x, want %x", b, tc.d, v, want)
					continue
				}
				r := Numerics{}.Round(v, tc.d)
				out.SetFloat64(0, v, Numerics{})
				got := uint16(out.Bits(0))
				if tc.isNaN(b) {
					if !math.IsNaN(r) {
						fail("Round(NaN from bits %#04x, %s) = %x, want NaN", b, tc.d, r)
					}
					if !tc.isNaN(got) {
						fail("SetFloat64(NaN from bits %#04x, %s) stored bits %#04x, want a NaN", b, tc.d, got)
					}
					continue
				}
				if !sameFloat(r, v) {
					fail("Round(%x, %s) = %x, want %x (bits %#04x)", v, tc.d, r, v, b)
				}
				if got != b {
					fail("SetFloat64(%x, %s) stored bits %#04x, want %#04x", v, tc.d, got, b)
				}
				if tc.d == BFloat16 {
					if g := BF16FromFloat64(v); uint16(g) != b {
						fail("BF16FromFloat64(%x) = %#04x, want %#04x", v, uint16(g), b)
					}
					if g := BF16FromFloat32(float32(v)); uint16(g) != b {
						fail("BF16FromFloat32(%x) = %#04x, want %#04x", v, uint16(g), b)
					}
					if g := BF16(b).Float64(); !sameFloat(g, v) {
						fail("BF16(%#04x).Float64() = %x, want %x", b, g, v)
					}
				}
			}
		})
	}
}

// halfwayFormat describes one narrow format for the halfway-point tests.
type halfwayFormat struct {
	d       DType
	decode  func(uint16) float64
	maxBits uint16 // bit pattern of MaxFinite; maxBits+1 is +Inf
	// viaFloat32 is the last step of the wrong two-step path
	// float64 → float32 → d (RNE in each step).
	viaFloat32 func(float32) uint16
	// direct are the one-step conversions under test.
	direct map[string]func(float64) uint16
}

func halfwayFormats() []halfwayFormat {
	return []halfwayFormat{
		{
			d: Float16, decode: f16Value, maxBits: 0x7bff,
			viaFloat32: func(f float32) uint16 { return float16.Fromfloat32(f).Bits() },
			direct: map[string]func(float64) uint16{
				"SetFloat64": func(x float64) uint16 { return uint16(storeBits(Float16, x, Numerics{})) },
			},
		},
		{
			d: BFloat16, decode: bf16Value, maxBits: 0x7f7f,
			viaFloat32: func(f float32) uint16 { return uint16(BF16FromFloat32(f)) },
			direct: map[string]func(float64) uint16{
				"SetFloat64":      func(x float64) uint16 { return uint16(storeBits(BFloat16, x, Numerics{})) },
				"BF16FromFloat64": func(x float64) uint16 { return uint16(BF16FromFloat64(x)) },
			},
		},
	}
}

// TestRoundHalfwayExhaustive visits every pair of neighbouring finite values
// lo < hi of fp16 and bf16 (subnormals included, and the pair MaxFinite,
// 2^(Emax+1) whose upper end is the overflow to +Inf), both signs, and
// checks the conversion of the midpoint m (ties to even) and of m ± δ, where
// δ = (hi−lo)·2^-30 is far below float32's resolution at m.
//
// float32(m ± δ) == m, so the two-step path float64 → float32 → d turns
// m ± δ into the tie and then rounds it to even: on one side of every
// midpoint that is the wrong neighbour. The test checks that this trap is
// real for every pair (the inputs discriminate) and that the one-step
// conversions avoid it.
func TestRoundHalfwayExhaustive(t *testing.T) {
	for _, f := range halfwayFormats() {
		t.Run(f.d.String(), func(t *testing.T) {
			errs := 0
			fail := func(format string, args ...any) {
				t.Helper()
				t.Errorf(format, args...)
				if errs++; errs >= maxErrors {
					t.FailNow()
				}
			}
			for b := uint16(0); b <= f.maxBits; b++ {
				lo := f.decode(b)
				hi := f.decode(b + 1)
				if b == f.maxBits { // b+1 is +Inf: the next value is 2^(Emax+1)
					hi = lo + (lo - f.decode(b-1))
				}
				mid := (lo + hi) / 2 // exact: one more bit than the format
				delta := math.Ldexp(hi-lo, -30)
				even := b
				if b&1 == 1 {
					even = b + 1
				}
				for _, sign := range []uint16{0, 0x8000} {
					s := 1.0
					if sign != 0 {
						s = -1
					}
					cases := []struct {
						x    float64
						want uint16
					}{
						{s * mid, even | sign},
						{s * (mid + delta), (b + 1) | sign},
						{s * (mid - delta), b | sign},
					}
					for _, c := range cases {
						want := f.decode(c.want)
						if got := (Numerics{}).Round(c.x, f.d); !sameFloat(got, want) {
							fail("Round(%x, %s) = %x, want %x (bits %#04x)", c.x, f.d, got, want, c.want)
						}
						for name, conv := range f.direct {
							if got := conv(c.x); got != c.want {
								fail("%s(%x, %s) = bits %#04x, want %#04x", name, c.x, f.d, got, c.want)
							}
						}
					}
					// The trap: float32 lands on the tie, then ties-to-even
					// picks the wrong side for one of m ± δ.
					wrong := cases[1] // m+δ goes down to b when b is even
					if b&1 == 1 {
						wrong = cases[2] // m−δ goes up to b+1 when b is odd
					}
					if f32 := float32(wrong.x); float64(f32) != s*mid {
						fail("float32(%x) = %x, want the tie %x: δ is not below float32 resolution", wrong.x, f32, s*mid)
					}
					if got := f.viaFloat32(float32(wrong.x)); got == wrong.want {
						fail("two-step %s(float32(%x)) = %#04x: expected the double-rounding error %#04x", f.d, wrong.x, got, even|sign)
					}
				}
			}
		})
	}
}

// TestRoundNamedCases lists the classic cases by hand: expected bit
// patterns are written out, and the two-step result is given where it
// differs.
func TestRoundNamedCases(t *testing.T) {
	p := math.Ldexp
	for _, tc := range []struct {
		name    string
		d       DType
		x       float64
		want    uint16 // bits of the correctly rounded result
		twoStep uint16 // bits via float32 (== want when there is no trap)
	}{
		// fp16: 1 has neighbours 1 and 1+2^-10 (bits 0x3c00, 0x3c01).
		{"fp16 tie to even (down)", Float16, 1 + p(1, -11), 0x3c00, 0x3c00},
		{"fp16 tie to even (up)", Float16, 1 + 3*p(1, -11), 0x3c02, 0x3c02},
		{"fp16 above tie below fp32 resolution", Float16, 1 + p(1, -11) + p(1, -40), 0x3c01, 0x3c00},
		{"fp16 below tie below fp32 resolution", Float16, 1 + 3*p(1, -11) - p(1, -40), 0x3c01, 0x3c02},
		{"fp16 negative above tie", Float16, -(1 + p(1, -11) + p(1, -40)), 0xbc01, 0xbc00},
		// fp16 subnormals: spacing 2^-24.
		{"fp16 half min subnormal ties to 0", Float16, p(1, -25), 0x0000, 0x0000},
		{"fp16 just above half min subnormal", Float16, p(1, -25) + p(1, -60), 0x0001, 0x0000},
		{"fp16 -half min subnormal ties to -0", Float16, -p(1, -25), 0x8000, 0x8000},
		{"fp16 subnormal tie to even", Float16, 3 * p(1, -25), 0x0002, 0x0002},
		{"fp16 subnormal just below tie", Float16, 3*p(1, -25) - p(1, -60), 0x0001, 0x0002},
		{"fp16 largest subnormal + half ulp rounds to MinNormal", Float16, 1023.5 * p(1, -24), 0x0400, 0x0400},
		// fp16 overflow threshold: MaxFinite 65504 = 0x7bff, spacing 32.
		{"fp16 65504", Float16, 65504, 0x7bff, 0x7bff},
		{"fp16 65504+16 rounds to inf", Float16, 65504 + 16, 0x7c00, 0x7c00},
		{"fp16 65519.99 stays 65504", Float16, 65519.99, 0x7bff, 0x7bff},
		{"fp16 just below threshold, below fp32 resolution", Float16, 65520 - p(1, -20), 0x7bff, 0x7c00},
		{"fp16 -65520 rounds to -inf", Float16, -65520, 0xfc00, 0xfc00},
		{"fp16 1e6 overflows", Float16, 1e6, 0x7c00, 0x7c00},
		{"fp16 1e300 overflows (fp32 would be inf first)", Float16, 1e300, 0x7c00, 0x7c00},
		// bf16: 1 has neighbours 1 and 1+2^-7 (0x3f80, 0x3f81).
		{"bf16 tie to even (down)", BFloat16, 1 + p(1, -8), 0x3f80, 0x3f80},
		{"bf16 tie to even (up)", BFloat16, 1 + 3*p(1, -8), 0x3f82, 0x3f82},
		{"bf16 above tie below fp32 resolution", BFloat16, 1 + p(1, -8) + p(1, -40), 0x3f81, 0x3f80},
		{"bf16 below tie below fp32 resolution", BFloat16, 1 + 3*p(1, -8) - p(1, -40), 0x3f81, 0x3f82},
		{"bf16 half min subnormal ties to 0", BFloat16, p(1, -134), 0x0000, 0x0000},
		{"bf16 just above half min subnormal", BFloat16, p(1, -134) + p(1, -170), 0x0001, 0x0000},
		{"bf16 largest subnormal + half ulp rounds to MinNormal", BFloat16, 127.5 * p(1, -133), 0x0080, 0x0080},
		// bf16 overflow threshold: MaxFinite (2-2^-7)·2^127 = 0x7f7f, spacing 2^120.
		{"bf16 MaxFinite", BFloat16, p(2-p(1, -7), 127), 0x7f7f, 0x7f7f},
		{"bf16 MaxFinite + half ulp rounds to inf", BFloat16, p(2-p(1, -8), 127), 0x7f80, 0x7f80},
		{"bf16 just below threshold", BFloat16, p(2-p(1, -8), 127) * (1 - p(1, -40)), 0x7f7f, 0x7f80},
		{"bf16 -threshold rounds to -inf", BFloat16, -p(2-p(1, -8), 127), 0xff80, 0xff80},
		{"bf16 1e39 overflows", BFloat16, 1e39, 0x7f80, 0x7f80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := f16Value
			two := func(x float64) uint16 { return float16.Fromfloat32(float32(x)).Bits() }
			if tc.d == BFloat16 {
				dec = bf16Value
				two = func(x float64) uint16 { return uint16(BF16FromFloat32(float32(x))) }
			}
			want := dec(tc.want)
			if got := (Numerics{}).Round(tc.x, tc.d); !sameFloat(got, want) {
				t.Errorf("Round(%x, %s) = %x, want %x", tc.x, tc.d, got, want)
			}
			if got := uint16(storeBits(tc.d, tc.x, Numerics{})); got != tc.want {
				t.Errorf("SetFloat64(%x, %s) stored %#04x, want %#04x", tc.x, tc.d, got, tc.want)
			}
			if tc.d == BFloat16 {
				if got := uint16(BF16FromFloat64(tc.x)); got != tc.want {
					t.Errorf("BF16FromFloat64(%x) = %#04x, want %#04x", tc.x, got, tc.want)
				}
			}
			if got := two(tc.x); got != tc.twoStep {
				t.Errorf("two-step %s(float32(%x)) = %#04x, want %#04x (test premise)", tc.d, tc.x, got, tc.twoStep)
			}
		})
	}
}

// TestRoundProfiles checks overflow saturation, subnormal flushing and the
// pass-through of specials for every floating dtype.
func TestRoundProfiles(t *testing.T) {
	p := math.Ldexp
	inf, nan := math.Inf(1), math.NaN()
	negZero := math.Copysign(0, -1)
	sat := Numerics{Overflow: OverflowSaturate}
	flush := Numerics{Subnormals: SubnormalFlush}
	f16Max, bf16Max := 65504.0, p(2-p(1, -7), 127)
	for _, tc := range []struct {
		num  Numerics
		d    DType
		x    float64
		want float64
	}{
		// IEEE default: specials pass through, overflow is ±Inf.
		{Numerics{}, Float16, nan, nan},
		{Numerics{}, Float16, inf, inf},
		{Numerics{}, Float16, -inf, -inf},
		{Numerics{}, Float16, negZero, negZero},
		{Numerics{}, Float16, 1e5, inf},
		{Numerics{}, Float32, 1e39, inf},
		{Numerics{}, Float32, -1e39, -inf},
		{Numerics{}, Float64, nan, nan},
		{Numerics{}, Float64, -inf, -inf},
		{Numerics{}, Float64, 0.1, 0.1},
		{Numerics{}, Float64, p(1, -1074), p(1, -1074)},
		{Numerics{}, Float32, 0.1, float64(float32(0.1))},
		// saturate: overflow → ±MaxFinite, ±Inf → ±MaxFinite, NaN → 0.
		{sat, Float16, 65504 + 16, f16Max},
		{sat, Float16, 65519.99, f16Max},
		{sat, Float16, -1e6, -f16Max},
		{sat, Float16, inf, f16Max},
		{sat, Float16, -inf, -f16Max},
		{sat, Float16, nan, 0},
		{sat, Float16, 1.5, 1.5},
		{sat, BFloat16, p(2-p(1, -8), 127), bf16Max},
		{sat, BFloat16, -1e39, -bf16Max},
		{sat, BFloat16, inf, bf16Max},
		{sat, BFloat16, nan, 0},
		{sat, Float32, 1e39, math.MaxFloat32},
		{sat, Float32, -inf, -math.MaxFloat32},
		{sat, Float32, nan, 0},
		{sat, Float64, inf, math.MaxFloat64},
		{sat, Float64, -inf, -math.MaxFloat64},
		{sat, Float64, nan, 0},
		// flush: results below MinNormal become a zero of x's sign; the
		// test is on the rounded result, so a value that rounds up to
		// MinNormal stays.
		{flush, Float16, 1023 * p(1, -24), 0},                   // largest subnormal
		{flush, Float16, -1023 * p(1, -24), negZero},            // keeps the sign
		{flush, Float16, p(1, -24), 0},                          // min subnormal
		{flush, Float16, -p(1, -24), negZero},                   //
		{flush, Float16, p(1, -14), p(1, -14)},                  // MinNormal stays
		{flush, Float16, -p(1, -14), -p(1, -14)},                //
		{flush, Float16, p(1, -14) - p(1, -26), p(1, -14)},      // rounds up to MinNormal
		{flush, Float16, 1023.5 * p(1, -24), p(1, -14)},         // tie, rounds up to MinNormal
		{flush, Float16, 1023.4 * p(1, -24), 0},                 // rounds to largest subnormal
		{flush, Float16, 1e5, inf},                              // overflow unaffected
		{flush, BFloat16, 127 * p(1, -133), 0},                  // largest subnormal
		{flush, BFloat16, -p(1, -126), -p(1, -126)},             // MinNormal stays
		{flush, BFloat16, p(1, -126) - p(1, -136), p(1, -126)},  // rounds up to MinNormal
		{flush, Float32, math.SmallestNonzeroFloat32, 0},        //
		{flush, Float32, -p(1, -126) + p(1, -150), -p(1, -126)}, // rounds up to -MinNormal
		{flush, Float64, -math.SmallestNonzeroFloat64, negZero}, //
		{flush, Float64, p(1, -1022), p(1, -1022)},              //
		{Numerics{OverflowSaturate, SubnormalFlush, 0}, Float16, -p(1, -20), negZero},
		{Numerics{OverflowSaturate, SubnormalFlush, 0}, Float16, -inf, -f16Max},
	} {
		if got := tc.num.Round(tc.x, tc.d); !sameFloat(got, tc.want) {
			t.Errorf("%v: Round(%x, %s) = %x, want %x", tc.num, tc.x, tc.d, got, tc.want)
		}
	}
}

// TestRoundIntegers checks integer rounding (half_even, half_away),
// saturation and NaN → 0 for int8, int32 and uint8.
func TestRoundIntegers(t *testing.T) {
	even := Numerics{Int8Rounding: RoundHalfEven}
	away := Numerics{Int8Rounding: RoundHalfAway}
	inf, nan := math.Inf(1), math.NaN()
	for _, tc := range []struct {
		d              DType
		x              float64
		wantEven, want float64 // half_even, half_away
	}{
		{Int8, 0.5, 0, 1},
		{Int8, -0.5, 0, -1},
		{Int8, 1.5, 2, 2},
		{Int8, -1.5, -2, -2},
		{Int8, 2.5, 2, 3},
		{Int8, -2.5, -2, -3},
		{Int8, 2.4999, 2, 2},
		{Int8, -0.4, 0, 0}, // +0: integers have no −0
		{Int8, 126.5, 126, 127},
		{Int8, 127.5, 127, 127},    // 128 saturates
		{Int8, -127.5, -128, -128}, // half_even -128, half_away -128
		{Int8, -128.5, -128, -128}, // -128 / -129 saturates
		{Int8, 1e9, 127, 127},
		{Int8, -1e9, -128, -128},
		{Int8, inf, 127, 127},
		{Int8, -inf, -128, -128},
		{Int8, nan, 0, 0},
		{Int32, 2147483646.5, 2147483646, 2147483647},
		{Int32, 2147483647.5, 2147483647, 2147483647},
		{Int32, 1e10, math.MaxInt32, math.MaxInt32},
		{Int32, -2147483648.5, math.MinInt32, math.MinInt32},
		{Int32, -1e10, math.MinInt32, math.MinInt32},
		{Int32, -3.5, -4, -4},
		{Int32, nan, 0, 0},
		{Uint8, -1, 0, 0},
		{Uint8, -0.5, 0, 0},
		{Uint8, 0.5, 0, 1},
		{Uint8, 254.5, 254, 255},
		{Uint8, 255.5, 255, 255},
		{Uint8, 300, 255, 255},
		{Uint8, -inf, 0, 0},
		{Uint8, nan, 0, 0},
	} {
		for _, c := range []struct {
			num  Numerics
			want float64
		}{{even, tc.wantEven}, {away, tc.want}} {
			got := c.num.Round(tc.x, tc.d)
			if !sameFloat(got, c.want) {
				t.Errorf("Round(%v, %s) with %s = %v (signbit %v), want %v", tc.x, tc.d, c.num.Int8Rounding, got, math.Signbit(got), c.want)
			}
			// The stored element must hold the same value.
			s := MustNew(tc.d, 1)
			s.SetFloat64(0, tc.x, c.num)
			if g := s.Float64(0); g != c.want {
				t.Errorf("SetFloat64(%v, %s) with %s stored %v, want %v", tc.x, tc.d, c.num.Int8Rounding, g, c.want)
			}
		}
	}
}

func TestNumericsText(t *testing.T) {
	n := Numerics{OverflowSaturate, SubnormalFlush, RoundHalfAway}
	if got, want := n.String(), "overflow=saturate subnormals=flush int8_rounding=half_away"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, s := range []string{"inf", "saturate"} {
		var o Overflow
		if err := o.UnmarshalText([]byte(s)); err != nil || o.String() != s {
			t.Errorf("Overflow.UnmarshalText(%q) = %v, %v", s, o, err)
		}
	}
	var o Overflow
	if err := o.UnmarshalText([]byte("clamp")); err == nil {
		t.Errorf("Overflow.UnmarshalText(%q) succeeded, want an error", "clamp")
	}
	if got, want := Overflow(7).String(), "invalid(7)"; got != want {
		t.Errorf("Overflow(7).String() = %q, want %q", got, want)
	}
}

// TestNumericsJSON checks the JSON form used in device profiles.
func TestNumericsJSON(t *testing.T) {
	for _, tc := range []struct {
		n    Numerics
		json string
	}{
		{Numerics{}, `{"overflow":"inf","subnormals":"keep","int8_rounding":"half_even"}`},
		{Numerics{OverflowSaturate, SubnormalFlush, RoundHalfAway}, `{"overflow":"saturate","subnormals":"flush","int8_rounding":"half_away"}`},
	} {
		b, err := json.Marshal(tc.n)
		if err != nil || string(b) != tc.json {
			t.Errorf("json.Marshal(%v) = %s, %v, want %s", tc.n, b, err, tc.json)
		}
		var got Numerics
		if err := json.Unmarshal([]byte(tc.json), &got); err != nil || got != tc.n {
			t.Errorf("json.Unmarshal(%s) = %v, %v, want %v", tc.json, got, err, tc.n)
		}
	}
	for _, bad := range []string{
		`{"overflow":"clamp"}`,
		`{"subnormals":"denormal"}`,
		`{"int8_rounding":"half_up"}`,
	} {
		var got Numerics
		if err := json.Unmarshal([]byte(bad), &got); err == nil {
			t.Errorf("json.Unmarshal(%s) succeeded, want an error", bad)
		}
	}
}
