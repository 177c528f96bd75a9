package bound

import (
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/floats"

	"github.com/npuverify/npuverify/tensor"
)

// ExactSource writes into r the exact values (see Exact elements at
// Expected) of elements off, off+1, …, off+len(r)−1 of an output. A
// compact Expected calls it whenever it is read, from several goroutines
// at once, so it must be safe for concurrent use and give the same
// values every time (e.g. a closure over inputs nobody modifies).
type ExactSource func(off int, r []float64)

// compactExact is an Expected all of whose n elements are exact, held as
// the source of its exact values rather than as five arrays of n entries:
// a vector_add of 2^24 elements would otherwise fill 436 MB it reads once.
type compactExact struct {
	n    int
	d    tensor.DType
	num  tensor.Numerics
	src  ExactSource
	x, y *tensor.Tensor // NewExactSumFrom's addends, nil otherwise
}

// NewExactFrom returns a compact Expected for n elements, every one of
// them exact: element i is what SetExact(i, r, d, num) makes it, r being
// the value src gives for i. Ref, Bound, Alt, Exact and Rounded stay nil
// (the Expected computes them from src a block at a time as it is read:
// Load, Refs and the element accessors) until Materialize fills them.
func NewExactFrom(n int, d tensor.DType, num tensor.Numerics, src ExactSource) *Expected {
	return &Expected{lazy: &compactExact{n: max(n, 0), d: d, num: num, src: src}}
}

// NewExactSumFrom is NewExactFrom for an output whose exact values are
// sums: element i's is the float64 sum of elements i of x and y (of x's
// length; y at least as long), each widened exactly, x's first (one IEEE
// addition), which the Expected computes itself a block at a time
// (exactSum), so that the addends ExactSum hands to readers that widen
// and add on their own, in one pass with their other work, and the
// values every other reader gets are one and the same. The caller must
// not modify x and y while the Expected is in use.
func NewExactSumFrom(x, y *tensor.Tensor, d tensor.DType, num tensor.Numerics) *Expected {
	return &Expected{lazy: &compactExact{n: x.Len(), d: d, num: num, src: exactSum(x, y), x: x, y: y}}
}

// exactSum is NewExactSumFrom's source: tensor.Tensor.AddFloat64sFrom
// where it has a one-pass form (fp16), else both widened and added by
// floats.AddTo, y through a pooled buffer.
func exactSum(x, y *tensor.Tensor) ExactSource {
	return func(off int, z []float64) {
		if x.AddFloat64sFrom(y, off, z) {
			return
		}
		bp := sumBufs.Get().(*[]float64)
		if cap(*bp) < len(z) {
			*bp = make([]float64, len(z))
		}
		yb := (*bp)[:len(z)]
		x.Float64sFrom(off, z)
		y.Float64sFrom(off, yb)
		floats.AddTo(z, z, yb)
		sumBufs.Put(bp)
	}
}

// sumBufs holds the buffers exactSum widens y into, one per goroutine
// reading a compact Expected at a time.
var sumBufs = sync.Pool{New: func() any { return new([]float64) }}

// ExactSum returns the addends of a compact Expected made by
// NewExactSumFrom, ok false for any other.
func (e *Expected) ExactSum() (x, y *tensor.Tensor, ok bool) {
	if c := e.lazy; c != nil && c.x != nil {
		return c.x, c.y, true
	}
	return nil, nil, false
}

// ExactSource returns the source, dtype and profile a compact Expected
// was made from (NewExactFrom), ok false for an ordinary one: readers
// with a loop of their own for all-exact outputs (verify.Compute) take
// the exact values from it and each element's expected values from
// ExactElement, or ShortForm where it applies.
func (e *Expected) ExactSource() (src ExactSource, d tensor.DType, num tensor.Numerics, ok bool) {
	if c := e.lazy; c != nil {
		return c.src, c.d, c.num, true
	}
	return nil, 0, tensor.Numerics{}, false
}

// Compact reports whether e is a compact Expected (NewExactFrom,
// NewUnchanged) whose arrays are not filled: readers go through Load,
// Refs and the element accessors, which work on every form, or call
// Materialize first.
func (e *Expected) Compact() bool { return e.lazy != nil || e.kept != nil }

// Materialize fills Ref, Bound, Alt, Exact and Rounded of a compact
// Expected, which is an ordinary one from then on; it does nothing to an
// ordinary Expected. It is for readers that index the arrays directly, and
// is not safe to call concurrently with other reads of e.
func (e *Expected) Materialize() {
	if k := e.kept; k != nil {
		k.materialize(e)
		e.kept = nil
		return
	}
	c := e.lazy
	if c == nil {
		return
	}
	n := c.n
	e.Ref, e.Bound, e.Alt = make([]float64, n), make([]float64, n), make([]Special, n)
	e.Exact, e.Rounded = make([]bool, n), make([]float64, n)
	const bl = 2048
	r := make([]float64, min(bl, n))
	for off := 0; off < n; off += bl {
		k := min(bl, n-off)
		c.src(off, r[:k])
		end := off + k
		setExactSlices(e.Ref[off:end], e.Bound[off:end], e.Alt[off:end], e.Exact[off:end], e.Rounded[off:end], r[:k], c.d, c.num)
	}
	e.lazy = nil
}

// Check reports a malformed Expected: arrays of different lengths (or, for
// exact marks, not one per element).
func (e *Expected) Check() error {
	if e.lazy != nil || e.kept != nil {
		return nil
	}
	if len(e.Bound) != len(e.Ref) || len(e.Alt) != len(e.Ref) {
		return fmt.Errorf("malformed expected set: %d refs, %d bounds, %d alts", len(e.Ref), len(e.Bound), len(e.Alt))
	}
	if e.Exact != nil && (len(e.Exact) != len(e.Ref) || len(e.Rounded) != len(e.Ref)) {
		return fmt.Errorf("malformed expected set: %d refs, %d exact flags, %d rounded values", len(e.Ref), len(e.Exact), len(e.Rounded))
	}
	return nil
}

// Span is the number of elements every array of e describes (for a
// malformed Expected, the shortest of Ref, Bound and Alt): how far a
// reader that trusts the lengths may index.
func (e *Expected) Span() int {
	if e.lazy != nil || e.kept != nil {
		return e.Len()
	}
	return min(len(e.Ref), len(e.Bound), len(e.Alt))
}

// View is a window of consecutive elements of an Expected, filled by
// Load: element j of the window is element off+j of the Expected. For an
// ordinary Expected the slices alias its arrays; for a compact one they
// are the View's own buffers, computed from the source, and reused by the
// next Load. A View belongs to one goroutine.
type View struct {
	Ref, Bound []float64
	Alt        []Special
	// Exact is nil when the Expected has no exact element.
	Exact   []bool
	Rounded []float64

	r, ref, bnd, rounded []float64
	alt                  []Special
	exact                []bool
}

// IsExact reports whether element j of the window accepts only Rounded[j].
func (v *View) IsExact(j int) bool { return v.Exact != nil && v.Exact[j] }

// Load points v at elements [off, off+n) of e (they must exist).
func (e *Expected) Load(v *View, off, n int) {
	if k := e.kept; k != nil {
		v.grow(n)
		v.Ref, v.Bound, v.Alt, v.Exact, v.Rounded = v.ref[:n], v.bnd[:n], v.alt[:n], nil, nil
		if k.hasExact() {
			v.Exact, v.Rounded = v.exact[:n], v.rounded[:n]
		}
		k.load(v.Ref, v.Bound, v.Alt, v.Exact, v.Rounded, off)
		return
	}
	c := e.lazy
	if c == nil {
		end := off + n
		v.Ref, v.Bound, v.Alt = e.Ref[off:end], e.Bound[off:end], e.Alt[off:end]
		v.Exact, v.Rounded = nil, nil
		if e.Exact != nil {
			v.Exact, v.Rounded = e.Exact[off:end], e.Rounded[off:end]
		}
		return
	}
	v.grow(n)
	r := v.r[:n]
	c.src(off, r)
	v.Ref, v.Bound, v.Alt, v.Exact, v.Rounded = v.ref[:n], v.bnd[:n], v.alt[:n], v.exact[:n], v.rounded[:n]
	setExactSlices(v.Ref, v.Bound, v.Alt, v.Exact, v.Rounded, r, c.d, c.num)
}

// grow makes v's buffers hold at least n elements.
func (v *View) grow(n int) {
	if cap(v.r) < n {
		v.r, v.ref, v.bnd, v.rounded = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		v.alt, v.exact = make([]Special, n), make([]bool, n)
	}
}

// Refs returns Ref[off : off+len(buf)]: for an ordinary Expected the
// array itself (buf unused), for a compact one buf filled with the
// references, without the rest of the elements (the cheap part of Load,
// for readers of the references only).
func (e *Expected) Refs(off int, buf []float64) []float64 {
	if k := e.kept; k != nil {
		k.refs(buf, off)
		return buf
	}
	c := e.lazy
	if c == nil {
		return e.Ref[off : off+len(buf)]
	}
	c.src(off, buf)
	if _, isFloat := c.d.FloatFormat(); !isFloat {
		// Output(r, 0) of an integer dtype is the profile's rounding,
		// which keeps an integer of the range (a zero as +0: r + 0).
		lo, hi := c.d.IntRange()
		for j, v := range buf {
			if v >= lo && v <= hi && v == math.Trunc(v) {
				buf[j] = v + 0
			} else {
				buf[j], _, _ = Output(v, 0, c.d, c.num)
			}
		}
		return buf
	}
	if c.d == tensor.Float64 {
		for j, v := range buf {
			buf[j], _, _ = Output(v, 0, c.d, c.num)
		}
		return buf
	}
	// Output(r, 0) keeps r itself in the short form (ShortForm).
	sf, _ := NewShortForm(c.d)
	for j, v := range buf {
		if !sf.Takes(v) {
			buf[j], _, _ = Output(v, 0, c.d, c.num)
		}
	}
	return buf
}

// at returns element i of e, computing it from the source for a compact
// Expected.
func (e *Expected) at(i int) (ref, bnd float64, alt Special, exact bool, rounded float64) {
	if k := e.kept; k != nil {
		return k.at(i)
	}
	if c := e.lazy; c != nil {
		var r [1]float64
		c.src(i, r[:])
		ref, bnd, alt, rounded = exactOf(r[0], c.d, c.num)
		return ref, bnd, alt, true, rounded
	}
	ref, bnd, alt = e.Ref[i], e.Bound[i], e.Alt[i]
	if e.Exact != nil && e.Exact[i] {
		return ref, bnd, alt, true, e.Rounded[i]
	}
	return ref, bnd, alt, false, 0
}

// RefAt is Ref[i], for either form of Expected.
func (e *Expected) RefAt(i int) float64 { r, _, _, _, _ := e.at(i); return r }

// BoundAt is Bound[i], for either form of Expected.
func (e *Expected) BoundAt(i int) float64 { _, b, _, _, _ := e.at(i); return b }

// AltAt is Alt[i], for either form of Expected.
func (e *Expected) AltAt(i int) Special { _, _, a, _, _ := e.at(i); return a }

// RoundedAt is Rounded[i] at an exact element (IsExact(i)), 0 elsewhere,
// for either form of Expected.
func (e *Expected) RoundedAt(i int) float64 { _, _, _, _, r := e.at(i); return r }
