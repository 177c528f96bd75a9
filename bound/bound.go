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
//
// The bounds' own arithmetic writes every product that feeds an addition
// as float64(x*y): Go may otherwise fuse x*y + z into one rounding
// (arm64, amd64 from GOAMD64=v3), and the bounds, and the Expected they
// produce, must have the same bits on every target. The rounding-error
// arguments count those separate roundings.
package bound

import (
	"math"

	"github.com/npuverify/npuverify/tensor"
)

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
//   - a non-finite g is accepted iff its class is in Alt[i];
//   - an exact element (IsExact(i), set by SetExact) accepts one value only:
//     Rounded[i], the numerics profile's rounding of the exact result, bit
//     for bit (−0 ≠ +0; a NaN accepts any NaN, whatever its sign or
//     payload).
//
// Ref is the float64 reference already passed through the output's
// numerics profile (so it is the value a perfectly rounded result would
// take, e.g. ±MaxFinite under saturation). An element whose Ref is finite
// and whose Alt is non-empty is overflow-ambiguous: an intermediate may or
// may not overflow depending on the order of evaluation, and both outcomes
// are legal. A non-finite Ref has Bound NaN: no finite value is accepted.
//
// # Exact elements
//
// Where the contract fixes the bits, because the output is one rounding
// of an exactly known value (vector_add for every dtype, copies and
// casts, int8 quantisation), a bound is too weak: half an ulp around the
// exact value accepts both neighbours at a tie, so a kernel that rounds
// half away from zero, or truncates a tie, would pass. Expect marks such
// elements with SetExact(i, r, dtype, numerics) instead of assigning Ref,
// Bound and Alt: Ref, Bound and Alt are then Output(r, 0, dtype,
// numerics) (the half-ulp bound, so metrics and tightness still show the
// error against the exact value in ulps), and Rounded[i] =
// numerics.Round(r, dtype) is the only value accepted. r must round like
// the exact value: r exact in float64, or a float64 sum, difference,
// product or quotient of values of a format of at most 25 significant bits
// (fp32, fp16, bf16), which rounds to such a format exactly as the exact
// result does (double rounding through p' ≥ 2p + 2 bits is innocuous:
// Figueroa, "When is double rounding innocuous?", 1995).
//
// Exact and Rounded are nil until SetExact is first called (no exact
// elements); once allocated they have one entry per element.
//
// # Compact form
//
// An Expected all of whose elements are exact may instead be held as the
// source of its exact values (NewExactFrom), and one of an input stored
// back unchanged but for a few spans as that input and the spans
// (NewUnchanged, Override): its arrays are then nil, and
// it is read through Len, Load, Refs and the element methods (IsExact,
// Accepts, RefAt, ...), which give what the arrays would hold, or made
// ordinary by Materialize. Readers that may be handed any Expected use
// those; writers fill ordinary ones (NewExpected).
type Expected struct {
	Ref   []float64
	Bound []float64
	Alt   []Special
	// Exact marks the elements whose only acceptable value is Rounded[i].
	Exact []bool
	// Rounded is, at an exact element, the value it must take.
	Rounded []float64

	// lazy, when set, is the compact all-exact form, and kept the
	// compact unchanged form (NewUnchanged): every array above is nil.
	lazy *compactExact
	kept *unchangedForm
}

// NewExpected allocates an Expected for n elements, none of them exact.
func NewExpected(n int) *Expected {
	return &Expected{Ref: make([]float64, n), Bound: make([]float64, n), Alt: make([]Special, n)}
}

// Window returns the Expected of elements off, off+1, … off+n−1 of the
// ordinary (not Compact) e, sharing its arrays: a block of a larger
// Expected, or a prefix of a buffer reused block after block. It panics
// as a slice expression would when the elements do not exist.
func (e *Expected) Window(off, n int) *Expected {
	w := &Expected{Ref: e.Ref[off : off+n], Bound: e.Bound[off : off+n], Alt: e.Alt[off : off+n]}
	if e.Exact != nil {
		w.Exact, w.Rounded = e.Exact[off:off+n], e.Rounded[off:off+n]
	}
	return w
}

// Len is the number of elements described.
func (e *Expected) Len() int {
	if e.lazy != nil {
		return e.lazy.n
	}
	if e.kept != nil {
		return e.kept.base.Len()
	}
	return len(e.Ref)
}

// SetExact makes element i exact: its only acceptable value is num's
// rounding of r into d, bit for bit. r must round like the exact result
// (see Exact elements above); Ref, Bound and Alt become Output(r, 0, d,
// num), which every correctly rounded value meets.
func (e *Expected) SetExact(i int, r float64, d tensor.DType, num tensor.Numerics) {
	if e.lazy != nil || e.kept != nil {
		e.Materialize()
	}
	if e.Exact == nil {
		e.Exact = make([]bool, len(e.Ref))
		e.Rounded = make([]float64, len(e.Ref))
	}
	e.Ref[i], e.Bound[i], e.Alt[i], e.Rounded[i] = exactOf(r, d, num)
	e.Exact[i] = true
}

// IsExact reports whether element i accepts only Rounded[i].
func (e *Expected) IsExact(i int) bool {
	if e.kept != nil {
		_, _, _, exact, _ := e.kept.at(i)
		return exact
	}
	return e.lazy != nil || (e.Exact != nil && e.Exact[i])
}

// Identical reports whether g and w are the same value bit for bit as a
// numerics profile stores them: equal with the same sign (so −0 ≠ +0), or
// both NaN (a NaN's sign and payload are unspecified).
func Identical(g, w float64) bool {
	if math.IsNaN(g) || math.IsNaN(w) {
		return math.IsNaN(g) && math.IsNaN(w)
	}
	return g == w && math.Signbit(g) == math.Signbit(w)
}

// Accepts reports whether g is an acceptable value for element i.
func (e *Expected) Accepts(i int, g float64) bool {
	r, b, alt, exact, rounded := e.at(i)
	if exact {
		return Identical(g, rounded)
	}
	if c := Of(g); c != 0 {
		return alt&c != 0
	}
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return false
	}
	return math.Abs(g-r) <= b
}

// Ambiguous reports whether element i is overflow-ambiguous (finite
// reference, but a non-finite outcome is also legal).
func (e *Expected) Ambiguous(i int) bool {
	r, _, alt, _, _ := e.at(i)
	return alt != 0 && !math.IsNaN(r) && !math.IsInf(r, 0)
}
