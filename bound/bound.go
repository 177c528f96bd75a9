// Package bound holds what a correct implementation may return for each
// element of an output (the Expected set) and the rounding-error algebra
// (Higham, Accuracy and Stability of Numerical Algorithms, ch. 2–3) that
// operators use to derive it.
//
// Bounds here are a-priori and valid for every legal implementation of an
// operator's contract, whatever its summation order or tiling: they are
// derived from unit roundoffs and magnitudes, never tuned to a result.
//
// An operator's bound is an evaluation of its contract on Interval values:
//
//   - inputs enter as Exact values;
//   - Mul, Add, Sub, Neg, Div and Exp are exact real operations on
//     intervals, carrying the non-finite classes IEEE arithmetic gives
//     (0·Inf = NaN, Inf − Inf = NaN, x/0 = ±Inf) and the error of the
//     float64 reference that evaluates them;
//   - Format.Round is one rounding to nearest of an intermediate into a
//     floating format (IEEE overflow, subnormals flushed or kept as the
//     numerics profile says);
//   - Dot.Sum accumulates n terms in a format in any order (γ_n);
//   - Store maps the final interval through the output's store under the
//     numerics profile to one element of an Expected (Output does the
//     same for a value known only as reference ± bound).
package bound

import "math"

// Special is a set of non-finite outcomes.
type Special uint8

// Non-finite outcomes an element may be allowed to take.
const (
	PosInf Special = 1 << iota
	NegInf
	NaN
)

// Of returns the Special class of x, or 0 if x is finite.
func Of(x float64) Special {
	switch {
	case math.IsNaN(x):
		return NaN
	case math.IsInf(x, 1):
		return PosInf
	case math.IsInf(x, -1):
		return NegInf
	}
	return 0
}

// String returns e.g. "+inf|nan", or "finite" for the empty set.
func (s Special) String() string {
	if s == 0 {
		return "finite"
	}
	out := ""
	for _, c := range []struct {
		bit  Special
		name string
	}{{PosInf, "+inf"}, {NegInf, "-inf"}, {NaN, "nan"}} {
		if s&c.bit != 0 {
			if out != "" {
				out += "|"
			}
			out += c.name
		}
	}
	return out
}

// Expected describes, per element i of one output, what a correct
// implementation may return:
//
//   - a finite g is accepted iff Ref[i] is finite and |g − Ref[i]| ≤ Bound[i];
//   - a non-finite g is accepted iff its class is in Alt[i].
//
// Ref is the float64 reference already passed through the output's
// numerics profile (so it is the value a perfectly rounded result would
// take, e.g. ±MaxFinite under saturation). An element whose Ref is finite
// and whose Alt is non-empty is overflow-ambiguous: an intermediate may or
// may not overflow depending on the order of evaluation, and both outcomes
// are legal. A non-finite Ref has Bound NaN: no finite value is accepted.
type Expected struct {
	Ref   []float64
	Bound []float64
	Alt   []Special
}

// NewExpected allocates an Expected for n elements.
func NewExpected(n int) *Expected {
	return &Expected{Ref: make([]float64, n), Bound: make([]float64, n), Alt: make([]Special, n)}
}

// Len is the number of elements described.
func (e *Expected) Len() int { return len(e.Ref) }

// Accepts reports whether g is an acceptable value for element i.
func (e *Expected) Accepts(i int, g float64) bool {
	if c := Of(g); c != 0 {
		return e.Alt[i]&c != 0
	}
	r := e.Ref[i]
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return false
	}
	return math.Abs(g-r) <= e.Bound[i]
}

// Ambiguous reports whether element i is overflow-ambiguous (finite
// reference, but a non-finite outcome is also legal).
func (e *Expected) Ambiguous(i int) bool {
	r := e.Ref[i]
	return e.Alt[i] != 0 && !math.IsNaN(r) && !math.IsInf(r, 0)
}
