package bound

import (
	"math"

	"github.com/npuverify/npuverify/tensor"
)

// SetExactBlock is SetExact(off+j, r[j], d, num) for every j, bit for bit,
// with the per-format constants computed once: an element whose r is a
// normal, finite value below the overflow threshold (what almost every
// element of a real output is) takes the short form Output and
// Numerics.Round reduce to there, Ref r, Bound ulp(|r|)/2, no
// alternatives, Rounded the nearest-even rounding of r; any other
// element (zero, subnormal, near overflow, non-finite, integer or fp64
// output) goes through SetExact itself. TestSetExactBlockMatches holds
// the two together. Like SetExact, the first call allocates the exact
// marks: callers filling disjoint blocks from several goroutines make
// one call first.
func (e *Expected) SetExactBlock(off int, r []float64, d tensor.DType, num tensor.Numerics) {
	f, isFloat := d.FloatFormat()
	if !isFloat || d == tensor.Float64 || e.Exact == nil {
		for j, v := range r {
			e.SetExact(off+j, v, d, num)
		}
		return
	}
	minN := f.MinNormal()
	thr := f.MaxFinite() + f.Ulp(f.MaxFinite())/2
	ref, bnd, alt := e.Ref[off:off+len(r)], e.Bound[off:off+len(r)], e.Alt[off:off+len(r)]
	exact, rounded := e.Exact[off:off+len(r)], e.Rounded[off:off+len(r)]
	for j, v := range r {
		if a := math.Abs(v); !(a >= minN && a < thr) { // NaN fails both
			e.SetExact(off+j, v, d, num)
			continue
		}
		ref[j], bnd[j], alt[j] = v, f.Ulp(v)/2, 0
		exact[j], rounded[j] = true, f.RoundNearestEven(v)
	}
}
