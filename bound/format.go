package bound

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/tensor"
)

// Format is a floating storage format as the rounding-error model sees it
// under one numerics profile: what one rounding to nearest of an
// intermediate result into it can do.
type Format struct {
	DType tensor.DType
	// U is the unit roundoff 2^-p: a normal result moves by at most U·|x|.
	U float64
	// Under is the absolute error one rounding may add near zero: half the
	// smallest subnormal, or MinNormal when the profile flushes subnormal
	// results (a flushed value moves by less than MinNormal).
	Under float64
	// Threshold is where rounding overflows, MaxFinite + ulp(MaxFinite)/2:
	// an exact value at or beyond it rounds to ±Inf.
	Threshold float64
	// Flush is whether the profile flushes subnormal results.
	Flush bool
	f     tensor.Format
}

// NewFormat returns the rounding model of floating dtype d under num. It
// fails for integer dtypes, whose conversions are stores (Output, Store).
func NewFormat(d tensor.DType, num tensor.Numerics) (Format, error) {
	f, ok := d.FloatFormat()
	if !ok {
		return Format{}, fmt.Errorf("bound: %s is not a floating format; integer conversions are stores (bound.Store)", d)
	}
	flush := num.Subnormals == tensor.SubnormalFlush
	r := Format{DType: d, U: f.UnitRoundoffValue(), Under: f.MinSubnormal() / 2, Flush: flush, f: f,
		Threshold: f.MaxFinite() + float64(f.Ulp(f.MaxFinite())/2)}
	if flush {
		r.Under = f.MinNormal()
	}
	return r, nil
}

// Round is one rounding to nearest of v into the format, as an
// intermediate result: overflow gives ±Inf whatever the profile's overflow
// mode (the profile's saturation applies at stores, Store), and a finite v
// known to within Err gains U·(|Ref| + Err) + Under. A value exactly
// representable (Err = 0, a value of the format, and not subnormal under
// flush) rounds exactly.
func (f Format) Round(v Interval) Interval {
	v = v.Overflow(f.Threshold)
	if !v.Finite {
		return v
	}
	if v.Err == 0 && f.f.RoundNearestEven(v.Ref) == v.Ref && (!f.Flush || v.Ref == 0 || math.Abs(v.Ref) >= f.f.MinNormal()) {
		return v // an exact value of the format: the rounding is exact
	}
	v.Err += float64(f.U*(math.Abs(v.Ref)+v.Err)) + f.Under
	return v
}
