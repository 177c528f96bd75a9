package metamorphic

import (
	"maps"

	"github.com/npuverify/npuverify/tensor"
)

// vectorAddCommutes: x+y = y+x, bitwise. z is the correctly rounded sum
// (fp32 compute, one rounding to the dtype; int8 saturating), and exact
// addition commutes, so for every pair of values, infinities and NaNs
// included, swapping x and y gives the same bits (a NaN any NaN: NaN
// payloads are no part of the contract). It names a kernel that reads or
// treats its operands asymmetrically.
func vectorAddCommutes(x *checker) []error {
	in := maps.Clone(x.base.Inputs)
	in["x"], in["y"] = x.base.Inputs["y"], x.base.Inputs["x"]
	if got := x.follow("with x and y swapped", "vector_add", nil, in); got != nil {
		x.compare("with x and y swapped", "z", got, x.base, identity, bitwise)
	}
	return x.errs
}

// pruneIdempotent: prune(decompress(prune(w))) = prune(w), values and
// meta bitwise (a NaN value any NaN). decompress puts each kept value
// back at its index and +0 at the two pruned ones. Every legal prune
// keeps the same indices again: a kept value of nonzero magnitude (or
// NaN, which counts as largest) still beats the +0s; a kept ±0 means all
// four magnitudes were 0, and the lower-index rule had kept the two
// lowest, which the +0s in their places still tie with and lose to. The
// kept values are copied, so their bits come back. The relation holds of
// the backend's own prune: a pair of runs, not a reference, so it names a
// kernel whose choice depends on what the pruned positions held in a way
// the contract does not allow (a signed comparison, a zero skipped).
func pruneIdempotent(x *checker) []error {
	vals, meta := x.base.Outputs["values"], x.base.Outputs["meta"]
	w := x.base.Inputs["w"]
	if vals == nil || meta == nil || w == nil {
		return nil
	}
	dense, ok := x.decompress(vals, meta, w.Shape[0], w.Shape[1], "the case's output")
	if !ok {
		return x.errs
	}
	const what = "pruning decompress(values, meta) again"
	if got := x.follow(what, "sparse24_prune", nil, map[string]*tensor.Tensor{"w": dense}); got != nil {
		x.compare(what, "values", got, x.base, identity, bitwise)
		x.compare(what, "meta", got, x.base, identity, bitwise)
	}
	return x.errs
}

// decompress is the dense [m,k] matrix of values and meta: each kept value
// at its index in its group of four, +0 elsewhere. Malformed meta (first
// index not below the second) is recorded as a violation of what (the
// contract's meta, which a decompressed matrix cannot be made from).
func (x *checker) decompress(vals, meta *tensor.Tensor, m, k int, what string) (*tensor.Tensor, bool) {
	dense := tensor.MustNew(vals.DType, m, k)
	groups := k / 4
	for r := range m {
		for g := range groups {
			mb := meta.U8()[r*groups+g]
			i0, i1 := int(mb&3), int(mb>>2&3)
			if i0 >= i1 || mb>>4 != 0 {
				x.errorf("%s: meta[%d,%d] = %#x is malformed (want first index < second, high bits 0): got %#x, want a valid meta byte (bound bitwise)", what, r, g, mb, mb)
				return nil, false
			}
			dense.SetBits(r*k+4*g+i0, vals.Bits(r*2*groups+2*g))
			dense.SetBits(r*k+4*g+i1, vals.Bits(r*2*groups+2*g+1))
		}
	}
	return dense, true
}

// prunePermuted: pruning w with its rows and its groups of four permuted
// gives the outputs of w permuted the same way, bitwise. sparse24_prune
// selects and copies within each group of each row, and ties keep their
// order inside a group, which the permutation does not change. It names
// an index computation that depends on a row's or a group's place.
func prunePermuted(x *checker) []error {
	w := x.base.Inputs["w"]
	if w == nil || w.Len() == 0 {
		return nil
	}
	m, groups := w.Shape[0], w.Shape[1]/4
	rng := x.rand()
	rowPerm, groupPerm := rng.Perm(m), rng.Perm(groups)
	pw := tensor.MustNew(w.DType, w.Shape...)
	for r := range m {
		for g := range groups {
			for e := range 4 {
				pw.SetBits(r*4*groups+4*g+e, w.Bits(rowPerm[r]*4*groups+4*groupPerm[g]+e))
			}
		}
	}
	const what = "w with its rows and groups of four permuted"
	got := x.follow(what, "sparse24_prune", nil, map[string]*tensor.Tensor{"w": pw})
	if got == nil {
		return x.errs
	}
	for _, o := range []struct {
		name string
		per  int // elements per group
	}{{"values", 2}, {"meta", 1}} {
		at := func(i int) int {
			r, g, e := i/(o.per*groups), i/o.per%groups, i%o.per
			return (rowPerm[r]*groups+groupPerm[g])*o.per + e
		}
		x.compare(what, o.name, got, x.base, at, bitwise)
	}
	return x.errs
}
