package verify

import (
	"math"
	"sort"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// Element is one element singled out in metrics or a verdict.
//
// Bound is what the judging rule allowed for |Got − Ref| at this element:
// Expected.Bound for `bound` and in Metrics.Worst, atol + rtol·|Ref| for
// allclose, N·ulp(Ref) for ulp, and so on (see each policy); 0 for exact.
// Alt lists the non-finite classes also accepted there (overflow-ambiguous
// or non-finite references). Note is an optional short explanation
// (e.g. the bit patterns for exact, "nan where finite expected").
type Element struct {
	Index int
	Got   float64
	Ref   float64
	Bound float64
	Alt   bound.Special
	Note  string
}

// Element classes as every value policy sees them.
const (
	classFinite    = iota // got and ref finite: compare values
	classNonFinite        // got non-finite and its class is accepted (or both non-finite and equal class)
	classMismatch         // non-finite class not accepted
)

// classify applies the package's non-finite rule (see the package doc) to
// got g at an element with reference r and alternatives alt.
func classify(alt bound.Special, r, g float64) int {
	gc, rc := bound.Of(g), bound.Of(r)
	switch {
	case gc != 0:
		if alt&gc != 0 || gc == rc {
			return classNonFinite
		}
		return classMismatch
	case rc != 0:
		return classMismatch
	}
	return classFinite
}

// mismatchNote explains a class mismatch of got g at an element with
// reference r and alternatives alt.
func mismatchNote(alt bound.Special, r, g float64) string {
	allowed := alt | bound.Of(r)
	want := allowed.String()
	if bound.Of(r) == 0 {
		want = "finite"
		if allowed != 0 {
			want += "|" + allowed.String()
		}
	}
	return "class " + bound.Of(g).String() + ", allowed " + want
}

// ulpOf is the spacing of dtype d at |x|: the format's ulp for floating
// dtypes and 1 for integer dtypes.
func ulpOf(d tensor.DType, x float64) float64 {
	if f, ok := d.FloatFormat(); ok {
		return f.Ulp(x)
	}
	return 1
}

// relErr is |g−r|/|r|, or |g−r| when r == 0 (the guard Metrics.MaxRel and
// the error ratios use).
func relErr(g, r float64) float64 {
	e := math.Abs(g - r)
	if r == 0 {
		return e
	}
	return e / math.Abs(r)
}

// ratio is err/bound with the conventions of Metrics.Tightness: 0/0 = 0,
// e/0 = +Inf for e > 0, e/+Inf = 0 (an unbounded element uses none of its
// bound, even where the error itself overflowed to +Inf, an fp64
// output's), and a NaN bound rejects everything (+Inf).
func ratio(err, b float64) float64 {
	switch {
	case math.IsNaN(b):
		return math.Inf(1)
	case b == 0 && err == 0, math.IsInf(b, 1):
		return 0
	}
	return err / b
}

// ranked keeps the k worst elements by (key1, key2) descending, then by
// index ascending, so the selection is deterministic.
type ranked struct {
	k     int
	items []rankedItem
}

type rankedItem struct {
	e          Element
	key1, key2 float64
}

func newRanked(k int) *ranked { return &ranked{k: k} }

func nanToInf(x float64) float64 {
	if math.IsNaN(x) {
		return math.Inf(1)
	}
	return x
}

func (a rankedItem) worse(b rankedItem) bool {
	if a.key1 != b.key1 {
		return a.key1 > b.key1
	}
	if a.key2 != b.key2 {
		return a.key2 > b.key2
	}
	return a.e.Index < b.e.Index
}

// takes reports whether an element with these keys and index would enter
// the list: callers check it before building the Element.
func (r *ranked) takes(key1, key2 float64, index int) bool {
	return len(r.items) < r.k || (rankedItem{e: Element{Index: index}, key1: nanToInf(key1), key2: nanToInf(key2)}).worse(r.items[len(r.items)-1])
}

// floor returns the keys of the last element held and whether the list
// is full: an element whose first key is below key1, or equal with a
// second key below key2, cannot enter.
func (r *ranked) floor() (key1, key2 float64, full bool) {
	if len(r.items) < r.k {
		return 0, 0, false
	}
	last := r.items[len(r.items)-1]
	return last.key1, last.key2, true
}

func (r *ranked) add(e Element, key1, key2 float64) {
	it := rankedItem{e: e, key1: nanToInf(key1), key2: nanToInf(key2)}
	if len(r.items) == r.k && !it.worse(r.items[len(r.items)-1]) {
		return
	}
	pos := sort.Search(len(r.items), func(j int) bool { return it.worse(r.items[j]) })
	if len(r.items) < r.k {
		r.items = append(r.items, rankedItem{})
	}
	copy(r.items[pos+1:], r.items[pos:len(r.items)-1])
	r.items[pos] = it
}

func (r *ranked) elements() []Element {
	out := make([]Element, len(r.items))
	for i, it := range r.items {
		out[i] = it.e
	}
	return out
}
