package bound

import (
	"math"

	"github.com/npuverify/npuverify/tensor"
)

// OutputMap is Output for one output dtype and numerics profile, with the
// per-dtype constants (format, overflow threshold, saturation) worked out
// once: element loops over millions of outputs call Map instead of
// Output, which re-derives them per element. Map(r, b) returns exactly
// Output(r, b, d, num), bit for bit (TestOutputMapMatchesOutput).
type OutputMap struct {
	d       tensor.DType
	num     tensor.Numerics
	f       tensor.Format
	float   bool // d is a floating dtype narrower than float64
	sat     bool
	flush   bool
	thr     float64 // MaxFinite + ulp(MaxFinite)/2: the overflow threshold
	max     float64 // MaxFinite
	minNorm float64 // MinNormal
	generic bool    // integer dtype or float64: Map defers to Output
}

// NewOutputMap precomputes Output's constants for dtype d under num.
func NewOutputMap(d tensor.DType, num tensor.Numerics) OutputMap {
	f, isFloat := d.FloatFormat()
	m := OutputMap{d: d, num: num, f: f, generic: !isFloat || d == tensor.Float64}
	if !m.generic {
		m.float = true
		m.sat = num.Overflow == tensor.OverflowSaturate
		m.flush = num.Subnormals == tensor.SubnormalFlush
		m.max = f.MaxFinite()
		m.thr = m.max + f.Ulp(m.max)/2
		m.minNorm = f.MinNormal()
	}
	return m
}

// Map is Output(r, b, d, num) for the map's d and num.
func (m *OutputMap) Map(r, b float64) (ref, bnd float64, alt Special) {
	if m.generic || math.IsNaN(r) || math.IsInf(r, 0) {
		return Output(r, b, m.d, m.num)
	}
	a := math.Abs(r)
	if a-b >= m.thr {
		return Output(r, b, m.d, m.num)
	}
	bnd = b + m.f.Ulp(a+b)/2
	if m.flush && a-b < m.minNorm {
		bnd = b + math.Max(m.minNorm, m.f.Ulp(a+b)/2)
	}
	if a+b >= m.thr && !m.sat {
		alt = Of(math.Copysign(math.Inf(1), r))
	}
	return r, bnd, alt
}
