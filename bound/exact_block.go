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
	if e.lazy != nil {
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

// exactOf is what SetExact stores for an exact value r: Output(r, 0, d,
// num) and num's rounding of r into d.
func exactOf(r float64, d tensor.DType, num tensor.Numerics) (ref, bnd float64, alt Special, rounded float64) {
	ref, bnd, alt = Output(r, 0, d, num)
	return ref, bnd, alt, num.Round(r, d)
}

// setExactSlices stores exactOf(r[j], d, num) at j of ref, bnd, alt and
// rounded and marks exact[j], for every j (all slices as long as r). An
// element whose r is a normal, finite value of magnitude below the
// overflow threshold (what almost every element of a real output is)
// takes the short form Output and Numerics.Round reduce to there: Ref r,
// Bound ulp(|r|)/2 = 2^(e−p) for 2^e ≤ |r| < 2^(e+1) (e ≤ Emax below the
// threshold, e ≥ Emin at or above MinNormal), no alternatives, Rounded
// the nearest-even rounding of r's significand to p bits (below the
// threshold it cannot overflow, at or above MinNormal it is not
// subnormal, so neither the saturation nor the flush of the profile
// applies). Any other element (zero, subnormal, near overflow,
// non-finite, integer or fp64 output) goes through exactOf itself.
func setExactSlices(ref, bnd []float64, alt []Special, exact []bool, rounded, r []float64, d tensor.DType, num tensor.Numerics) {
	ref, bnd, alt, exact, rounded = ref[:len(r)], bnd[:len(r)], alt[:len(r)], exact[:len(r)], rounded[:len(r)]
	f, isFloat := d.FloatFormat()
	if !isFloat || d == tensor.Float64 {
		for j, v := range r {
			ref[j], bnd[j], alt[j], rounded[j] = exactOf(v, d, num)
			exact[j] = true
		}
		return
	}
	minN := f.MinNormal()
	thr := f.MaxFinite() + f.Ulp(f.MaxFinite())/2
	shift := uint64(53 - f.P)           // float64 significand bits below the format's
	half := uint64(1)<<(shift-1) - 1    // rounding increment short of a tie
	mask := uint64(1)<<shift - 1        // the bits rounding clears
	halfUlp := uint64(f.P) << 52        // ulp(|r|)/2 = 2^(e−p): exponent field minus p
	const expMask = uint64(0x7FF) << 52 // the float64 exponent field
	for j, v := range r {
		if a := math.Abs(v); !(a >= minN && a < thr) { // NaN fails both
			ref[j], bnd[j], alt[j], rounded[j] = exactOf(v, d, num)
			exact[j] = true
			continue
		}
		b := math.Float64bits(v)
		ref[j], alt[j], exact[j] = v, 0, true
		bnd[j] = math.Float64frombits(b&expMask - halfUlp)
		rounded[j] = math.Float64frombits((b + half + b>>shift&1) &^ mask)
	}
}
