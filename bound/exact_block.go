package bound

import (
	"math"

	"github.com/npuverify/npuverify/tensor"
)

// SetExactBlock is SetExact(off+j, r[j], d, num) for every j, bit for bit,
// with the per-format constants computed once (see setExactSlices).
// TestSetExactBlockMatches holds the two together. Like SetExact, the
// first call allocates the exact marks: callers filling disjoint blocks
// from several goroutines make one call first.
func (e *Expected) SetExactBlock(off int, r []float64, d tensor.DType, num tensor.Numerics) {
	if e.lazy != nil || e.kept != nil {
		e.Materialize()
	}
	if e.Exact == nil {
		for j, v := range r {
			e.SetExact(off+j, v, d, num)
		}
		return
	}
	end := off + len(r)
	setExactSlices(e.Ref[off:end], e.Bound[off:end], e.Alt[off:end], e.Exact[off:end], e.Rounded[off:end], r, d, num)
}

// ExactElement is what SetExact(i, r, d, num) stores at element i:
// Output(r, 0, d, num) and num's rounding of r into d.
func ExactElement(r float64, d tensor.DType, num tensor.Numerics) (ref, bnd float64, alt Special, rounded float64) {
	return exactOf(r, d, num)
}

// exactOf is what SetExact stores for an exact value r: Output(r, 0, d,
// num) and num's rounding of r into d.
func exactOf(r float64, d tensor.DType, num tensor.Numerics) (ref, bnd float64, alt Special, rounded float64) {
	ref, bnd, alt = Output(r, 0, d, num)
	return ref, bnd, alt, num.Round(r, d)
}

// ShortForm is the short form an exact element takes when its exact
// value r is a normal, finite value of magnitude from the format's
// MinNormal to below its overflow threshold (what almost every element of
// a real output is): Output and Numerics.Round reduce there to Ref r,
// Bound ulp(|r|)/2 = 2^(e−p) for 2^e ≤ |r| < 2^(e+1) (e ≤ Emax below the
// threshold, e ≥ Emin at or above MinNormal), no alternatives, Rounded
// the nearest-even rounding of r's significand to p bits (below the
// threshold it cannot overflow, at or above MinNormal it is not
// subnormal, so neither the saturation nor the flush of the profile
// applies). It works on r's bits, so that element loops can inline it.
type ShortForm struct {
	// Min and Span: r takes the short form iff |r|'s bits − Min < Span
	// (unsigned).
	Min, Span uint64
	shift     uint64 // float64 significand bits below the format's
	half      uint64 // rounding increment short of a tie
	mask      uint64 // the bits rounding clears
	halfUlp   uint64 // p in the exponent field: ulp/2 is r's exponent field minus it
}

// NewShortForm returns the short form of floating dtype d, ok false for
// integer dtypes and fp64 (whose elements never take it).
func NewShortForm(d tensor.DType) (sf ShortForm, ok bool) {
	if !HasShortForm(d) {
		return ShortForm{}, false
	}
	f, _ := d.FloatFormat()
	minN := math.Float64bits(f.MinNormal())
	thr := math.Float64bits(f.MaxFinite() + float64(f.Ulp(f.MaxFinite())/2))
	shift := uint64(53 - f.P)
	return ShortForm{Min: minN, Span: thr - minN, shift: shift, half: 1<<(shift-1) - 1, mask: 1<<shift - 1,
		halfUlp: uint64(f.P) << 52}, true
}

// HasShortForm reports whether d has a short form (NewShortForm's ok),
// without computing its constants: a floating dtype narrower than
// float64.
func HasShortForm(d tensor.DType) bool {
	_, isFloat := d.FloatFormat()
	return isFloat && d != tensor.Float64
}

// Bits returns the short form's constants, for element loops written in
// assembly: r takes it iff |r|'s bits − min < span (unsigned); Rounded's
// bits are (b + half + (b>>shift)&1) &^ mask and Bound's (b &
// 0x7FF0000000000000) − halfUlp, b the bits of r.
func (sf *ShortForm) Bits() (min, span, shift, half, mask, halfUlp uint64) {
	return sf.Min, sf.Span, sf.shift, sf.half, sf.mask, sf.halfUlp
}

// Takes reports whether an element with exact value r takes the short form.
func (sf *ShortForm) Takes(r float64) bool {
	return math.Float64bits(r)&^(1<<63)-sf.Min < sf.Span // NaN and ±Inf too are past the span
}

// Bound is an exact element's Bound in the short form (Takes(r)).
func (sf *ShortForm) Bound(r float64) float64 {
	return math.Float64frombits(math.Float64bits(r)&(0x7FF<<52) - sf.halfUlp)
}

// Rounded is an exact element's Rounded in the short form (Takes(r)).
func (sf *ShortForm) Rounded(r float64) float64 {
	b := math.Float64bits(r)
	return math.Float64frombits((b + sf.half + b>>sf.shift&1) &^ sf.mask)
}

// setExactSlices stores exactOf(r[j], d, num) at j of ref, bnd, alt and
// rounded and marks exact[j], for every j (all slices as long as r): in
// the short form (ShortForm) where it applies, through exactOf itself
// for any other element (zero, subnormal, near overflow, non-finite,
// integer or fp64 output).
func setExactSlices(ref, bnd []float64, alt []Special, exact []bool, rounded, r []float64, d tensor.DType, num tensor.Numerics) {
	ref, bnd, alt, exact, rounded = ref[:len(r)], bnd[:len(r)], alt[:len(r)], exact[:len(r)], rounded[:len(r)]
	sf, ok := NewShortForm(d)
	for j, v := range r {
		if !ok || !sf.Takes(v) {
			ref[j], bnd[j], alt[j], rounded[j] = exactOf(v, d, num)
			exact[j] = true
			continue
		}
		ref[j], alt[j], exact[j] = v, 0, true
		bnd[j], rounded[j] = sf.Bound(v), sf.Rounded(v)
	}
}
