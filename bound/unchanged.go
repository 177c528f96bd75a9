package bound

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/npuverify/npuverify/tensor"
)

// unchangedForm is an Expected whose elements are, outside a few
// overridden spans, those of an input the op stores back unchanged:
// element i is Output(base[i], 0, d, num), an ordinary (not exact)
// element, as an op that copies its input would fill it. A kv_update's
// caches are this: a cache of 2^25 elements would otherwise fill 570 MB
// of arrays to describe the few rows a step writes and the rest copied.
type unchangedForm struct {
	base *tensor.Tensor
	num  tensor.Numerics
	// spans are the overridden ranges, sorted by offset and disjoint;
	// over[k] describes span k's elements (an ordinary Expected).
	spans []Span
	over  []*Expected
}

// Span is a range [Off, Off+N) of elements.
type Span struct{ Off, N int }

// NewUnchanged returns a compact Expected for an output that holds base
// (same dtype and length) stored back unchanged: element i is what
// Output(base.Float64(i), 0, base.DType, num) makes it, an ordinary
// element (not exact), until Override describes a span of elements
// otherwise. The Expected reads base whenever it is read: base must not
// be modified while the Expected is in use. Ref, Bound and Alt stay nil
// until Materialize fills them; readers go through Load, Refs and the
// element methods, or read the base itself (UnchangedBase).
func NewUnchanged(base *tensor.Tensor, num tensor.Numerics) *Expected {
	return &Expected{kept: &unchangedForm{base: base, num: num}}
}

// Override returns an ordinary Expected for elements [off, off+n) of an
// Expected made by NewUnchanged, which describes them from then on:
// element j of it is element off+j. It starts as the unchanged elements
// (what the Expected held there before) and the caller fills it, e.g.
// with the rows an op writes; an empty span (n = 0, anywhere in [0, Len])
// gives an empty Expected and changes nothing. Overriding a span already overridden
// returns the same Expected; a span that overlaps another only in part,
// falls outside the elements, or an Expected of another form is an
// error.
func (e *Expected) Override(off, n int) (*Expected, error) {
	c := e.kept
	if c == nil {
		return nil, fmt.Errorf("bound: override of [%d, %d) on an Expected not made by NewUnchanged", off, off+n)
	}
	if off < 0 || n < 0 || off+n > c.base.Len() {
		return nil, fmt.Errorf("bound: override of [%d, %d) outside the %d elements", off, off+n, c.base.Len())
	}
	if n == 0 {
		// An empty span (a cache row of no heads) describes nothing: it
		// records no span, so it never overlaps another.
		return NewExpected(0), nil
	}
	k := sort.Search(len(c.spans), func(k int) bool { return c.spans[k].Off+c.spans[k].N > off })
	if k < len(c.spans) && c.spans[k].Off < off+n {
		if s := c.spans[k]; s.Off == off && s.N == n {
			return c.over[k], nil
		}
		return nil, fmt.Errorf("bound: override of [%d, %d) overlaps [%d, %d) in part", off, off+n, c.spans[k].Off, c.spans[k].Off+c.spans[k].N)
	}
	o := NewExpected(n)
	c.fill(o.Ref, o.Bound, o.Alt, off)
	c.spans = slices.Insert(c.spans, k, Span{off, n})
	c.over = slices.Insert(c.over, k, o)
	return o, nil
}

// UnchangedBase returns the base, profile and overridden spans (sorted,
// disjoint; read-only) of an Expected made by NewUnchanged, ok false for
// any other: readers with a loop of their own (verify.Compute) compare an
// output with the base outside the spans, where an element whose bits
// are the base's has error 0.
func (e *Expected) UnchangedBase() (base *tensor.Tensor, num tensor.Numerics, spans []Span, ok bool) {
	if c := e.kept; c != nil {
		return c.base, c.num, c.spans, true
	}
	return nil, tensor.Numerics{}, nil, false
}

// fill sets ref, bnd and alt to the unchanged elements off, off+1, …
// (overrides not applied).
func (c *unchangedForm) fill(ref, bnd []float64, alt []Special, off int) {
	bnd, alt = bnd[:len(ref)], alt[:len(ref)]
	c.base.Float64sFrom(off, ref)
	d := c.base.DType
	f, ok := d.FloatFormat()
	if !ok {
		// A value of an integer d is an integer in d's range, which
		// Output(x, 0) (d's rounding and clamp) keeps exactly: bound 0.
		clear(bnd)
		clear(alt)
		return
	}
	if d != tensor.Float64 {
		// A finite value x of d: Output(x, 0) is x with half an ulp (at
		// least MinNormal under flush), no alternatives: |x| ≤ MaxFinite
		// is below the overflow threshold.
		flush := c.num.Subnormals == tensor.SubnormalFlush
		for j, x := range ref {
			if !isFiniteF(x) {
				ref[j], bnd[j], alt[j] = Output(x, 0, d, c.num)
				continue
			}
			b := f.Ulp(math.Abs(x)) / 2
			if flush && math.Abs(x) < f.MinNormal() {
				b = math.Max(f.MinNormal(), b)
			}
			bnd[j], alt[j] = b, 0
		}
		return
	}
	for j, x := range ref {
		ref[j], bnd[j], alt[j] = Output(x, 0, d, c.num)
	}
}

// isFiniteF reports whether x is neither ±Inf nor NaN.
func isFiniteF(x float64) bool { return math.Float64bits(x)&(0x7FF<<52) != 0x7FF<<52 }

// overlay copies into dst (elements off, off+1, … of the Expected) what
// the overrides hold there, through get (which picks one array of an
// ordinary Expected).
func overlay[T any](c *unchangedForm, off int, dst []T, get func(*Expected) []T) {
	end := off + len(dst)
	k := sort.Search(len(c.spans), func(k int) bool { return c.spans[k].Off+c.spans[k].N > off })
	for ; k < len(c.spans) && c.spans[k].Off < end; k++ {
		s := c.spans[k]
		lo, hi := max(s.Off, off), min(s.Off+s.N, end)
		copy(dst[lo-off:hi-off], get(c.over[k])[lo-s.Off:hi-s.Off])
	}
}

// hasExact reports whether an override holds an exact element.
func (c *unchangedForm) hasExact() bool {
	for _, o := range c.over {
		if o.Exact != nil {
			return true
		}
	}
	return false
}

// load fills the window's arrays (each as long as ref) with elements
// off, off+1, …; exact and rounded may be nil when no override holds an
// exact element.
func (c *unchangedForm) load(ref, bnd []float64, alt []Special, exact []bool, rounded []float64, off int) {
	c.fill(ref, bnd, alt, off)
	overlay(c, off, ref, func(o *Expected) []float64 { return o.Ref })
	overlay(c, off, bnd, func(o *Expected) []float64 { return o.Bound })
	overlay(c, off, alt, func(o *Expected) []Special { return o.Alt })
	if exact == nil {
		return
	}
	clear(exact)
	clear(rounded)
	for k, o := range c.over {
		if o.Exact == nil {
			continue
		}
		s := c.spans[k]
		lo, hi := max(s.Off, off), min(s.Off+s.N, off+len(ref))
		if lo < hi {
			copy(exact[lo-off:hi-off], o.Exact[lo-s.Off:hi-s.Off])
			copy(rounded[lo-off:hi-off], o.Rounded[lo-s.Off:hi-s.Off])
		}
	}
}

// at returns element i.
func (c *unchangedForm) at(i int) (ref, bnd float64, alt Special, exact bool, rounded float64) {
	k := sort.Search(len(c.spans), func(k int) bool { return c.spans[k].Off+c.spans[k].N > i })
	if k < len(c.spans) && c.spans[k].Off <= i {
		o := c.over[k]
		j := i - c.spans[k].Off
		ref, bnd, alt = o.Ref[j], o.Bound[j], o.Alt[j]
		if o.Exact != nil && o.Exact[j] {
			return ref, bnd, alt, true, o.Rounded[j]
		}
		return ref, bnd, alt, false, 0
	}
	var r, b [1]float64
	var a [1]Special
	c.fill(r[:], b[:], a[:], i)
	return r[0], b[0], a[0], false, 0
}

// materialize fills e's arrays from c.
func (c *unchangedForm) materialize(e *Expected) {
	n := c.base.Len()
	e.Ref, e.Bound, e.Alt = make([]float64, n), make([]float64, n), make([]Special, n)
	if c.hasExact() {
		e.Exact, e.Rounded = make([]bool, n), make([]float64, n)
	}
	c.load(e.Ref, e.Bound, e.Alt, e.Exact, e.Rounded, 0)
}

// refs sets ref to the references of elements off, off+1, …: the base
// values themselves where of an integer dtype, of a floating one and
// finite, or non-finite under a profile that does not saturate (Output
// keeps them), Output's reference elsewhere, then the overrides'.
func (c *unchangedForm) refs(ref []float64, off int) {
	c.base.Float64sFrom(off, ref)
	d := c.base.DType
	if _, ok := d.FloatFormat(); ok && d != tensor.Float64 {
		if c.num.Overflow != tensor.OverflowSaturate {
			overlay(c, off, ref, func(o *Expected) []float64 { return o.Ref })
			return
		}
		for j, x := range ref {
			if !isFiniteF(x) {
				ref[j], _, _ = Output(x, 0, d, c.num)
			}
		}
	} else if d == tensor.Float64 { // an integer is its own reference (fill)
		for j, x := range ref {
			ref[j], _, _ = Output(x, 0, d, c.num)
		}
	}
	overlay(c, off, ref, func(o *Expected) []float64 { return o.Ref })
}
