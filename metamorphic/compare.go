package metamorphic

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/tensor"
)

// How two outputs are compared.
type agreement int

const (
	// bitwise: the same bits, except that any NaN equals any NaN (NaN
	// payloads are no part of any contract).
	bitwise agreement = iota
	// bounded: what each run's Expected allows of the other. Elements
	// exact in both runs (the contract fixes their bits) must be the same
	// bits; finite values must agree within the sum of the two bounds;
	// values of different classes (finite, ±inf, NaN) must each be legal
	// in both runs (an overflow-ambiguous element may overflow in one
	// run and not the other).
	bounded
)

// index maps an element of the follow-up's output to the element of the
// base's output it must agree with; −1 leaves it out of the comparison.
type index func(i int) int

// identity compares element i with element i.
func identity(i int) int { return i }

// rows maps whole rows of per elements: follow-up row r is base row
// perm(r), −1 for none.
func rows(per int, perm func(r int) int) index {
	return func(i int) int {
		r := perm(i / per)
		if r < 0 {
			return -1
		}
		return r*per + i%per
	}
}

// compare compares output name of the follow-up run got with the base run
// want, element i of got with element at(i) of want, and records a
// violation naming how many differ and the first: got, want and bound.
// what names the follow-up in the message.
func (x *checker) compare(what, name string, got, want *harness.Result, at index, how agreement) {
	g, w := got.Outputs[name], want.Outputs[name]
	if g == nil || w == nil {
		return
	}
	var ge, we *bound.Expected
	if how == bounded {
		ge, we = got.Expected[name], want.Expected[name]
	}
	first, firstAt, n, of := -1, -1, 0, 0
	for i := range g.Len() {
		j := at(i)
		if j < 0 || j >= w.Len() {
			continue
		}
		of++
		if !agree(g, ge, i, w, we, j) {
			n++
			if first < 0 {
				first, firstAt = i, j
			}
		}
	}
	if n == 0 {
		return
	}
	bnd := "bitwise"
	if ge != nil && we != nil && !(ge.IsExact(first) && we.IsExact(firstAt)) {
		bnd = fmt.Sprintf("%g, the sum of the two runs' bounds", ge.BoundAt(first)+we.BoundAt(firstAt))
	}
	x.errorf("%s: output %q differs in %d of %d compared elements, first element %v (element %v of the case's output): got %s, want %s (bound %s)",
		what, name, n, of, unflatten(first, g.Shape), unflatten(firstAt, w.Shape), value(g, first), value(w, firstAt), bnd)
}

// agree reports whether element i of g and element j of w agree: bitwise
// when either Expected is nil or both elements are exact, else as
// bounded says.
func agree(g *tensor.Tensor, ge *bound.Expected, i int, w *tensor.Tensor, we *bound.Expected, j int) bool {
	if ge == nil || we == nil || (ge.IsExact(i) && we.IsExact(j)) {
		return sameValue(g, i, w, j)
	}
	gv, wv := g.Float64(i), w.Float64(j)
	gc, wc := bound.Of(gv), bound.Of(wv)
	switch {
	case gc == 0 && wc == 0:
		return math.Abs(gv-wv) <= ge.BoundAt(i)+we.BoundAt(j)
	case gc == wc:
		return true
	}
	legal := func(c bound.Special) bool {
		if c == 0 {
			return finite(ge.RefAt(i)) && finite(we.RefAt(j))
		}
		return ge.AltAt(i)&c != 0 && we.AltAt(j)&c != 0
	}
	return legal(gc) && legal(wc)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// sameValue is bit equality, except that any two NaNs are equal.
func sameValue(a *tensor.Tensor, i int, b *tensor.Tensor, j int) bool {
	if a.DType.IsFloat() && b.DType.IsFloat() && math.IsNaN(a.Float64(i)) {
		return math.IsNaN(b.Float64(j))
	}
	return a.Bits(i) == b.Bits(j)
}

// value renders element i of t with its bits.
func value(t *tensor.Tensor, i int) string {
	return fmt.Sprintf("%v (bits %#x)", t.Float64(i), t.Bits(i))
}

// unflatten renders flat index i of shape as its coordinates.
func unflatten(i int, shape []int) []int {
	c := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			c[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return c
}

// permutation draws a permutation of n that is not the identity when
// n > 1: a relation that permutes nothing checks nothing.
func (x *checker) permutation(n int) []int {
	p := x.rand().Perm(n)
	if n > 1 {
		ident := true
		for i, v := range p {
			ident = ident && i == v
		}
		if ident {
			p[0], p[n-1] = p[n-1], p[0]
		}
	}
	return p
}
