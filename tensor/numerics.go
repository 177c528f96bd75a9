package tensor

import (
	"fmt"
	"math"
)

// Overflow selects what a conversion does with a value too large for the
// target floating format.
type Overflow uint8

// Overflow behaviours.
const (
	// OverflowInf follows IEEE 754: overflow gives ±Inf and NaN stays NaN
	// (default, 910B-class parts).
	OverflowInf Overflow = iota
	// OverflowSaturate clamps to ±MaxFinite and maps NaN to 0 (older parts).
	OverflowSaturate
)

// Subnormals selects whether results in the subnormal range are kept.
type Subnormals uint8

// Subnormal behaviours.
const (
	// SubnormalKeep keeps gradual underflow (IEEE 754).
	SubnormalKeep Subnormals = iota
	// SubnormalFlush replaces a subnormal result by a zero of the same sign.
	SubnormalFlush
)

// Rounding selects how a real value is rounded to an integer format.
type Rounding uint8

// Integer rounding rules.
const (
	// RoundHalfEven rounds ties to the even integer (default).
	RoundHalfEven Rounding = iota
	// RoundHalfAway rounds ties away from zero.
	RoundHalfAway
)

// Numerics is the part of a device profile that decides how values are
// converted to storage formats. The zero value is the IEEE default: inf on
// overflow, subnormals kept, integer ties to even.
type Numerics struct {
	Overflow     Overflow   `json:"overflow"`
	Subnormals   Subnormals `json:"subnormals"`
	Int8Rounding Rounding   `json:"int8_rounding"`
}

// String returns a compact description such as "overflow=inf subnormals=keep int8_rounding=half_even".
func (n Numerics) String() string {
	return fmt.Sprintf("overflow=%s subnormals=%s int8_rounding=%s", n.Overflow, n.Subnormals, n.Int8Rounding)
}

// Round returns the value that x becomes when stored as dtype d under the
// profile n, as a float64 (exact: every value of every dtype is a float64).
//
// Floating formats round to nearest even in one step from x (never
// through an intermediate format). Overflow gives ±Inf, or ±MaxFinite under
// OverflowSaturate, which also maps NaN to 0. Under SubnormalFlush a result
// below MinNormal in magnitude becomes a zero of x's sign. Integer formats
// round by n.Int8Rounding (used for every integer format), saturate to the
// format's range, and map NaN to 0. Float64 follows the same rules (its
// rounding is the identity, but ±Inf saturates, NaN maps to 0 and
// subnormals flush as the profile says).
func (n Numerics) Round(x float64, d DType) float64 {
	if f, ok := d.FloatFormat(); ok {
		if math.IsNaN(x) {
			if n.Overflow == OverflowSaturate {
				return 0
			}
			return x
		}
		r := x // every float64 is already an fp64 value
		if d != Float64 {
			r = f.RoundNearestEven(x)
		}
		if math.IsInf(r, 0) && n.Overflow == OverflowSaturate {
			r = math.Copysign(f.MaxFinite(), r)
		}
		if n.Subnormals == SubnormalFlush && r != 0 && math.Abs(r) < f.MinNormal() {
			r = math.Copysign(0, x)
		}
		return r
	}
	lo, hi := d.IntRange()
	if math.IsNaN(x) {
		return 0
	}
	var r float64
	if n.Int8Rounding == RoundHalfAway {
		r = math.Round(x)
	} else {
		r = math.RoundToEven(x)
	}
	r = math.Max(lo, math.Min(hi, r))
	if r == 0 {
		r = 0 // integers have no −0: Round(−0.4, Int8) is +0
	}
	return r
}

// IntRange returns the smallest and largest value of an integer dtype, and
// (-Inf, +Inf) for floating dtypes.
func (d DType) IntRange() (lo, hi float64) {
	switch d {
	case Int8:
		return -128, 127
	case Int32:
		return math.MinInt32, math.MaxInt32
	case Uint8:
		return 0, 255
	}
	return math.Inf(-1), math.Inf(1)
}

var (
	overflowNames  = []string{"inf", "saturate"}
	subnormalNames = []string{"keep", "flush"}
	roundingNames  = []string{"half_even", "half_away"}
)

func enumString(names []string, v uint8) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("invalid(%d)", v)
}

func parseEnum(what string, names []string, s string) (uint8, error) {
	for i, n := range names {
		if n == s {
			return uint8(i), nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q (want one of %v)", what, s, names)
}

// String returns "inf" or "saturate".
func (o Overflow) String() string { return enumString(overflowNames, uint8(o)) }

// String returns "keep" or "flush".
func (s Subnormals) String() string { return enumString(subnormalNames, uint8(s)) }

// String returns "half_even" or "half_away".
func (r Rounding) String() string { return enumString(roundingNames, uint8(r)) }

// ParseOverflow parses "inf" or "saturate".
func ParseOverflow(s string) (Overflow, error) {
	v, err := parseEnum("overflow mode", overflowNames, s)
	return Overflow(v), err
}

// ParseSubnormals parses "keep" or "flush".
func ParseSubnormals(s string) (Subnormals, error) {
	v, err := parseEnum("subnormal mode", subnormalNames, s)
	return Subnormals(v), err
}

// ParseRounding parses "half_even" or "half_away".
func ParseRounding(s string) (Rounding, error) {
	v, err := parseEnum("int8 rounding", roundingNames, s)
	return Rounding(v), err
}

// MarshalText implements encoding.TextMarshaler.
func (o Overflow) MarshalText() ([]byte, error) { return []byte(o.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (o *Overflow) UnmarshalText(b []byte) (err error) { *o, err = ParseOverflow(string(b)); return }

// MarshalText implements encoding.TextMarshaler.
func (s Subnormals) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Subnormals) UnmarshalText(b []byte) (err error) {
	*s, err = ParseSubnormals(string(b))
	return
}

// MarshalText implements encoding.TextMarshaler.
func (r Rounding) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Rounding) UnmarshalText(b []byte) (err error) { *r, err = ParseRounding(string(b)); return }

// MarshalText implements encoding.TextMarshaler.
func (d DType) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, fmt.Errorf("invalid dtype %d", uint8(d))
	}
	return []byte(d.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *DType) UnmarshalText(b []byte) (err error) { *d, err = ParseDType(string(b)); return }
