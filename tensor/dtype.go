// Package tensor holds the dense, row-major tensors that flow between
// operators, backends and the verifier, the storage formats they use
// (fp64, fp32, fp16, bf16, int8, int32, uint8), and the numerics profile
// that decides how a float64 value becomes a value of each format.
package tensor

import (
	"fmt"
	"math"
	"math/bits"
)

// DType names a storage format. The zero value is invalid so that a
// forgotten dtype is caught rather than read as fp64.
type DType uint8

// The storage formats. Their String forms ("fp64", "fp32", ...) are the
// names used in params, case.json and on the CLI.
const (
	Float64 DType = iota + 1
	Float32
	Float16
	BFloat16
	Int8
	Int32
	Uint8
)

var dtypeNames = [...]string{
	Float64:  "fp64",
	Float32:  "fp32",
	Float16:  "fp16",
	BFloat16: "bf16",
	Int8:     "int8",
	Int32:    "int32",
	Uint8:    "uint8",
}

// DTypes lists every valid dtype in declaration order.
func DTypes() []DType {
	return []DType{Float64, Float32, Float16, BFloat16, Int8, Int32, Uint8}
}

// String returns the dtype's canonical name, e.g. "fp16".
func (d DType) String() string {
	if d.Valid() {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Valid reports whether d is one of the declared dtypes.
func (d DType) Valid() bool { return d >= Float64 && d <= Uint8 }

// ParseDType maps a canonical name ("fp16", "bf16", ...) to its DType.
func ParseDType(s string) (DType, error) {
	for _, d := range DTypes() {
		if dtypeNames[d] == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown dtype %q (want one of fp64, fp32, fp16, bf16, int8, int32, uint8)", s)
}

// Size is the number of bytes one element occupies.
func (d DType) Size() int {
	switch d {
	case Float64:
		return 8
	case Float32, Int32:
		return 4
	case Float16, BFloat16:
		return 2
	case Int8, Uint8:
		return 1
	}
	return 0
}

// IsFloat reports whether d is a floating-point format.
func (d DType) IsFloat() bool { return d >= Float64 && d <= BFloat16 }

// Format describes a binary floating-point format by its precision p
// (significand bits including the hidden bit) and exponent range: normal
// numbers are m·2^e with 1 ≤ m < 2 and Emin ≤ e ≤ Emax.
type Format struct {
	P    int
	Emin int
	Emax int
}

// FloatFormat returns the format parameters of a floating dtype and false
// for integer dtypes.
func (d DType) FloatFormat() (Format, bool) {
	switch d {
	case Float64:
		return Format{P: 53, Emin: -1022, Emax: 1023}, true
	case Float32:
		return Format{P: 24, Emin: -126, Emax: 127}, true
	case Float16:
		return Format{P: 11, Emin: -14, Emax: 15}, true
	case BFloat16:
		return Format{P: 8, Emin: -126, Emax: 127}, true
	}
	return Format{}, false
}

// UnitRoundoff is u = 2^-p for a floating dtype (fp32 2^-24, fp16 2^-11,
// bf16 2^-8): round-to-nearest moves a normal value by at most u·|x|.
// Integer dtypes return 0.
func (d DType) UnitRoundoff() float64 {
	f, ok := d.FloatFormat()
	if !ok {
		return 0
	}
	return math.Ldexp(1, -f.P)
}

// MaxFinite is the largest finite value of a floating format,
// (2 − 2^(1−p))·2^Emax.
func (f Format) MaxFinite() float64 {
	if f.P < 1 || f.P > 53 || f.Emax < -1022 || f.Emax > 1023 {
		return math.Ldexp(2-math.Ldexp(1, 1-f.P), f.Emax)
	}
	// Exponent Emax, the top p−1 fraction bits set: built from bits, as
	// this sits in every element's bound.
	return math.Float64frombits(uint64(f.Emax+1023)<<52 | (1<<(f.P-1)-1)<<(53-f.P))
}

// pow2 is 2^e, exactly (math.Ldexp(1, e)), from bits when 2^e is a normal
// float64.
func pow2(e int) float64 {
	if e >= -1022 && e <= 1023 {
		return math.Float64frombits(uint64(e+1023) << 52)
	}
	return math.Ldexp(1, e)
}

// MinNormal is 2^Emin, the smallest positive normal value.
func (f Format) MinNormal() float64 { return pow2(f.Emin) }

// MinSubnormal is 2^(Emin−p+1), the smallest positive subnormal value and
// the spacing of the subnormal range.
func (f Format) MinSubnormal() float64 { return pow2(f.Emin - f.P + 1) }

// Ulp returns the spacing of the format at |x|: 2^(min(max(e,Emin),Emax)−p+1)
// where 2^e ≤ |x| < 2^(e+1). Ulp(0) is MinSubnormal; values beyond the
// range, ±Inf included, get the spacing at MaxFinite; Ulp(NaN) is NaN.
func (f Format) Ulp(x float64) float64 {
	b := math.Float64bits(x) &^ (1 << 63) // |x|
	e := f.Emin
	switch {
	case b > 0x7FF0000000000000: // NaN
		return math.Float64frombits(b)
	case b == 0x7FF0000000000000: // ±Inf
		e = f.Emax
	case b >= 1<<52: // normal: 2^e ≤ |x| < 2^(e+1) with e the exponent field
		e = max(e, int(b>>52)-1023)
	case b != 0: // float64 subnormal
		e = max(e, bits.Len64(b)-1-1074)
	}
	return pow2(min(e, f.Emax) - f.P + 1)
}

// RoundNearestEven rounds x to the nearest value of the format, ties to
// even, in one step (no intermediate format), keeping subnormals. Values
// whose rounded magnitude exceeds MaxFinite become ±Inf, as IEEE 754
// overflow does. NaN and ±Inf pass through.
//
// It sits in every element's bound and store, so the common case, x
// within the format's normal exponent range, takes a few integer
// operations and no call: there the format's quantum is x's own
// exponent's, and x's bits are rounded to p significant bits in place,
// ties to even. A carry out of the fraction steps the exponent, as it
// should; a result whose exponent then exceeds Emax is above MaxFinite
// (the largest value of exponent Emax), so it overflows to ±Inf.
func (f Format) RoundNearestEven(x float64) float64 {
	b := math.Float64bits(x)
	// Emin ≤ e ≤ Emax and 2 ≤ p ≤ 52, each as one unsigned comparison.
	if e := int(b>>52&0x7FF) - 1023; uint(e-f.Emin) <= uint(f.Emax-f.Emin) && uint(f.P-2) <= 50 {
		shift := uint(53 - f.P)
		r := (b + 1<<(shift-1) - 1 + b>>shift&1) &^ (1<<shift - 1)
		if int(r>>52&0x7FF)-1023 > f.Emax {
			r = b&(1<<63) | 0x7FF0000000000000 // ±Inf
		}
		return math.Float64frombits(r)
	}
	return f.roundOutside(x)
}

// roundOutside is RoundNearestEven for x outside the format's normal
// exponent range (or a format the bit path does not cover): zeros,
// subnormals of the format, values beyond Emax (the quantum at Emax
// leaves them above MaxFinite), NaN and ±Inf.
func (f Format) roundOutside(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	q := f.Ulp(x)
	// x/q and r·q are exact: q is a power of two and the quotient stays
	// well inside float64's range for every format narrower than float64.
	r := math.RoundToEven(x/q) * q
	if math.Abs(r) > f.MaxFinite() {
		return math.Copysign(math.Inf(1), x)
	}
	return r
}

// UnitRoundoffValue is u = 2^-p of the format.
func (f Format) UnitRoundoffValue() float64 { return math.Ldexp(1, -f.P) }
