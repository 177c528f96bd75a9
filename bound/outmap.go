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
		m.thr = m.max + float64(f.Ulp(m.max)/2)
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
	bnd = b + float64(m.f.Ulp(a+b)/2)
	if m.flush && a-b < m.minNorm {
		bnd = b + math.Max(m.minNorm, m.f.Ulp(a+b)/2)
	}
	if a+b >= m.thr && !m.sat {
		alt = Of(math.Copysign(math.Inf(1), r))
	}
	return r, bnd, alt
}

// StoreDots is, for i = 0, 1, …, the outcome of storing dot product i
// through m: ref[i], bnd[i], alt[i] = m.Map(d[i], err) with err dot's
// bound on the accumulation of a dot product whose float64 value is d[i]
// and whose magnitude S (rounded up) is s[i]·magUp, i.e. Dot.Sum's finite
// branch, err = G·S + Eta + RefErr·S (Eta and G·S taken as 0 for S = 0).
// It stops at the first element for which that is not the whole story,
// and returns how many it set: one whose d[i] or s[i] is not finite, or
// whose accumulation could reach the overflow threshold ((1+G)·S + Eta ≥
// Threshold), which need Dot.Sum's other branches; for an integer or
// float64 output (Map's generic case) it sets none. dot must not be
// Exact.
//
// Its loop is Map's and Format.Ulp's arithmetic inlined, the same
// float64 operations in the same order, so that its outcomes are the
// same bits as calling them per element (gemm's
// TestGEMMStoreDotsMatchesFastElement); a million-element gemm output
// spends a few nanoseconds an element here rather than a dozen in the
// calls.
func (m *OutputMap) StoreDots(dot *Dot, d, s []float64, magUp float64, ref, bnd []float64, alt []Special) int {
	n := len(d)
	s, ref, bnd, alt = s[:n], ref[:n], bnd[:n], alt[:n]
	if m.generic {
		// An integer or float64 output (no gemm mode has one): Output
		// per element, the caller's path.
		return 0
	}
	c := dotErrs{magUp: magUp, g1: 1 + dot.G, eta: dot.Eta, g: dot.G, refErr: dot.RefErr, thr: dot.Threshold}
	emin, emax, p := m.f.Emin, m.f.Emax, m.f.P
	othr, flush, sat, minNorm := m.thr, m.flush, m.sat, m.minNorm
	for i, di := range d {
		err, ok := c.of(di, s[i])
		if !ok {
			return i
		}
		a := math.Abs(di)
		if a-err >= othr {
			// Output's overflow cases: rare, left to it.
			ref[i], bnd[i], alt[i] = Output(di, err, m.d, m.num)
			continue
		}
		// Format.Ulp(x)/2 for the finite x = a + err ≥ 0: 2^(e−p) with e
		// x's exponent clamped to [Emin, Emax] (a float64 subnormal or 0
		// falls below Emin); halving the normal power of two is exact.
		x := a + err
		e := min(max(int(math.Float64bits(x)>>52)-1023, emin), emax)
		half := math.Float64frombits(uint64(e-p+1023) << 52)
		b := err + half
		if flush && a-err < minNorm {
			b = err + math.Max(minNorm, half)
		}
		var sp Special
		if x >= othr && !sat {
			sp = PosInf
			if math.Signbit(di) {
				sp = NegInf
			}
		}
		ref[i], bnd[i], alt[i] = di, b, sp
	}
	return n
}

// dotErrs is StoreDots' accumulation step, with Dot's constants (and 1+G)
// held once.
type dotErrs struct {
	magUp, g1, eta, g, refErr, thr float64
}

// of returns err = G·S + Eta + RefErr·S for S = s·magUp (Eta, and G·S
// even for an infinite G, taken as 0 for S = 0), and whether d and s are
// finite and the accumulation cannot reach the threshold: (1+G)·S + Eta <
// Threshold.
func (c *dotErrs) of(d, s float64) (err float64, ok bool) {
	const expMask = 0x7FF << 52
	if math.Float64bits(d)&expMask == expMask || math.Float64bits(s)&expMask == expMask {
		return 0, false
	}
	mag := s * c.magUp
	eta, g := c.eta, 0.0
	if mag == 0 {
		eta = 0
	} else if c.g != 0 {
		g = c.g * mag
	}
	return g + eta + float64(c.refErr*mag), float64(c.g1*mag)+eta < c.thr
}
