package tensor

import (
	"math"
	"testing"
)

func TestFormatConstants(t *testing.T) {
	p := math.Ldexp
	for _, tc := range []struct {
		d                                    DType
		prec                                 int
		maxFinite, minNormal, minSub, unitRO float64
	}{
		{Float64, 53, math.MaxFloat64, p(1, -1022), math.SmallestNonzeroFloat64, p(1, -53)},
		{Float32, 24, math.MaxFloat32, p(1, -126), math.SmallestNonzeroFloat32, p(1, -24)},
		{Float16, 11, 65504, p(1, -14), 5.9604644775390625e-08, p(1, -11)},
		{BFloat16, 8, 3.3895313892515355e+38, p(1, -126), 9.183549615799121e-41, p(1, -8)},
	} {
		f, ok := tc.d.FloatFormat()
		if !ok {
			t.Fatalf("%s.FloatFormat() reports not a float", tc.d)
		}
		if f.P != tc.prec {
			t.Errorf("%s: P = %d, want %d", tc.d, f.P, tc.prec)
		}
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"MaxFinite", f.MaxFinite(), tc.maxFinite},
			{"MinNormal", f.MinNormal(), tc.minNormal},
			{"MinSubnormal", f.MinSubnormal(), tc.minSub},
			{"UnitRoundoff", tc.d.UnitRoundoff(), tc.unitRO},
			{"UnitRoundoffValue", f.UnitRoundoffValue(), tc.unitRO},
		} {
			if c.got != c.want {
				t.Errorf("%s.%s = %x, want %x", tc.d, c.name, c.got, c.want)
			}
		}
		if !tc.d.IsFloat() {
			t.Errorf("%s.IsFloat() = false", tc.d)
		}
	}
	for _, d := range []DType{Int8, Int32, Uint8} {
		if _, ok := d.FloatFormat(); ok || d.IsFloat() || d.UnitRoundoff() != 0 {
			t.Errorf("%s: FloatFormat ok=%v IsFloat=%v UnitRoundoff=%v, want false false 0", d, ok, d.IsFloat(), d.UnitRoundoff())
		}
	}
}

func TestFormatUlp(t *testing.T) {
	p := math.Ldexp
	inf := math.Inf(1)
	for _, tc := range []struct {
		d       DType
		x, want float64
	}{
		{Float16, 1, p(1, -10)},
		{Float16, -1, p(1, -10)},
		{Float16, 1.999, p(1, -10)},
		{Float16, 2, p(1, -9)},
		{Float16, 1024, 1},
		{Float16, 65504, 32},
		{Float16, 1e9, 32}, // beyond the range: spacing at MaxFinite
		{Float16, inf, 32},
		{Float16, -inf, 32},
		{Float16, p(1, -14), p(1, -24)},       // MinNormal
		{Float16, p(1, -15), p(1, -24)},       // subnormal
		{Float16, p(1, -24), p(1, -24)},       // MinSubnormal
		{Float16, 0, p(1, -24)},               // Ulp(0) is MinSubnormal
		{Float16, p(1, -40), p(1, -24)},       // below the range
		{BFloat16, 1, p(1, -7)},               //
		{BFloat16, 3, p(1, -6)},               //
		{BFloat16, p(1, -130), p(1, -133)},    // subnormal
		{BFloat16, 3e38, p(1, 120)},           //
		{Float32, 1, p(1, -23)},               //
		{Float32, p(1, -140), p(1, -149)},     //
		{Float32, math.MaxFloat32, p(1, 104)}, //
		{Float64, 1, p(1, -52)},               //
		{Float64, 0, p(1, -1074)},             //
		{Float64, math.MaxFloat64, p(1, 971)}, //
	} {
		f, _ := tc.d.FloatFormat()
		if got := f.Ulp(tc.x); got != tc.want {
			t.Errorf("%s.Ulp(%x) = %x, want %x", tc.d, tc.x, got, tc.want)
		}
	}
	f, _ := Float16.FloatFormat()
	if got := f.Ulp(math.NaN()); !math.IsNaN(got) {
		t.Errorf("fp16.Ulp(NaN) = %v, want NaN", got)
	}
}

func TestDTypeNames(t *testing.T) {
	sizes := map[DType]int{Float64: 8, Float32: 4, Float16: 2, BFloat16: 2, Int8: 1, Int32: 4, Uint8: 1}
	for _, d := range DTypes() {
		if !d.Valid() {
			t.Errorf("%v.Valid() = false", d)
		}
		got, err := ParseDType(d.String())
		if err != nil || got != d {
			t.Errorf("ParseDType(%q) = %v, %v, want %v", d.String(), got, err, d)
		}
		b, err := d.MarshalText()
		if err != nil || string(b) != d.String() {
			t.Errorf("%v.MarshalText() = %q, %v", d, b, err)
		}
		if d.Size() != sizes[d] {
			t.Errorf("%v.Size() = %d, want %d", d, d.Size(), sizes[d])
		}
	}
	for _, d := range []DType{0, Uint8 + 1, 255} {
		if d.Valid() || d.Size() != 0 {
			t.Errorf("DType(%d): Valid() = %v, Size() = %d, want false, 0", uint8(d), d.Valid(), d.Size())
		}
		if _, err := d.MarshalText(); err == nil {
			t.Errorf("DType(%d).MarshalText() succeeded, want an error", uint8(d))
		}
	}
	if _, err := ParseDType("float16"); err == nil {
		t.Errorf("ParseDType(%q) succeeded, want an error", "float16")
	}
}
