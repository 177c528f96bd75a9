package ops

import (
	"math"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// kvCopyGrain is the fewest elements a core takes in kv_update's
// whole-cache loops: below it the goroutine costs more than the loop.
const kvCopyGrain = 1 << 14

// kvOutputTable is bound.Output(x, 0, d, num) for every value x of a
// 16-bit or 8-bit input dtype, indexed by its bits: an unwritten cache
// element's expected outcome depends on its bits alone, so looking it up
// gives exactly what calling Output on it gives.
type kvOutputTable struct {
	ref, bnd []float64
	alt      []bound.Special
}

// newKVOutputTable builds the table for dtype d (Float16 or Int8), each
// entry through the tensor's own Float64 conversion and bound.Output.
func newKVOutputTable(d tensor.DType, num tensor.Numerics) kvOutputTable {
	n := 1 << 16
	if d == tensor.Int8 {
		n = 1 << 8
	}
	t := tensor.MustNew(d, n)
	for i := range n {
		if d == tensor.Int8 {
			t.I8()[i] = int8(uint8(i))
		} else {
			t.F16()[i] = float16.Frombits(uint16(i))
		}
	}
	tab := kvOutputTable{ref: make([]float64, n), bnd: make([]float64, n), alt: make([]bound.Special, n)}
	parallel.For(n, 1<<12, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			tab.ref[i], tab.bnd[i], tab.alt[i] = bound.Output(t.Float64(i), 0, d, num)
		}
	})
	return tab
}

// kvUnwrittenExpected is the expected outcome of every element of t as if
// unwritten (its input value stored back, bound 0 before the store),
// split over cores; a large fp16 or int8 tensor goes through a
// kvOutputTable (kvFillFromTable), anything else through bound.Output per
// element.
func kvUnwrittenExpected(t *tensor.Tensor, num tensor.Numerics) *bound.Expected {
	n := t.Len()
	e := bound.NewExpected(n)
	switch {
	case t.DType == tensor.Float16 && n > 1<<18:
		tab, src := newKVOutputTable(t.DType, num), t.F16()
		parallel.For(n, kvCopyGrain, func(lo, hi int) {
			kvFillFromTable(e, lo, hi, src[lo:hi], tab)
		})
	case t.DType == tensor.Int8 && n > 1<<12:
		tab, src := newKVOutputTable(t.DType, num), t.I8()
		parallel.For(n, kvCopyGrain, func(lo, hi int) {
			kvFillFromTable(e, lo, hi, src[lo:hi], tab)
		})
	default:
		parallel.For(n, kvCopyGrain, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				e.Ref[i], e.Bound[i], e.Alt[i] = bound.Output(t.Float64(i), 0, t.DType, num)
			}
		})
	}
	return e
}

// kvRunMin is the shortest run of one bit pattern that kvFillFromTable
// fills by block copies rather than element by element.
const kvRunMin = 64

// kvStreamBlock is how many elements kvFillFromTable looks up into a
// buffer (in L1) before streaming them out with non-temporal stores.
const kvStreamBlock = 512

// kvFillFromTable sets e's elements [lo, hi) to the table's entries for
// the bit patterns src (hi − lo of them). A run of at least kvRunMin
// equal patterns (the NaN filling of a cache's unused rows, zeroed
// regions) is looked up once and its block streamed out repeatedly; other
// elements are looked up a block at a time into buffers; kvStream64 copies
// the buffers out with non-temporal stores: the slices are far larger than the caches and
// written once, so reading their lines for ownership first would double
// the memory traffic. Same values either way.
func kvFillFromTable[B float16.Float16 | int8](e *bound.Expected, lo, hi int, src []B, tab kvOutputTable) {
	ref, bnd, alt := e.Ref[lo:hi], e.Bound[lo:hi], e.Alt[lo:hi]
	// idx is a pattern's table index: fp16 bits, or an int8's byte.
	idx := func(x B) int { return int(uint16(x)) & (len(tab.ref) - 1) }
	var bref, bbnd [kvStreamBlock]float64
	var balt [kvStreamBlock]bound.Special
	for i := 0; i < len(src); {
		// Elements [i, j) outside long runs go through the buffers.
		j := i
		for j < len(src) && j-i < kvStreamBlock {
			x := src[j]
			r := j + 1
			for r < len(src) && src[r] == x && r-j < kvRunMin {
				r++
			}
			if r-j >= kvRunMin {
				break
			}
			for ; j < r && j-i < kvStreamBlock; j++ {
				k := idx(src[j])
				bref[j-i], bbnd[j-i], balt[j-i] = tab.ref[k], tab.bnd[k], tab.alt[k]
			}
		}
		if j > i {
			kvStream64(ref[i:j], bref[:j-i])
			kvStream64(bnd[i:j], bbnd[:j-i])
			kvStreamSpecial(alt[i:j], balt[:j-i])
			i = j
			continue
		}
		// A run of at least kvRunMin from i.
		x := src[i]
		for j < len(src) && src[j] == x {
			j++
		}
		k := idx(x)
		kvFill(bref[:], tab.ref[k])
		kvFill(bbnd[:], tab.bnd[k])
		kvFill(balt[:], tab.alt[k])
		for ; i < j; i += kvStreamBlock {
			m := min(kvStreamBlock, j-i)
			kvStream64(ref[i:i+m], bref[:m])
			kvStream64(bnd[i:i+m], bbnd[:m])
			kvStreamSpecial(alt[i:i+m], balt[:m])
		}
		i = j
	}
}

// kvFill sets every element of dst to v by doubling copies (in cache:
// dst is a stream buffer).
func kvFill[T any](dst []T, v T) {
	if len(dst) == 0 {
		return
	}
	dst[0] = v
	for k := 1; k < len(dst); k *= 2 {
		copy(dst[k:], dst[:k])
	}
}

// kvProject is reference.Project split over (batch entry, head) items
// on all cores, each item's sums in reference.Project's order (same
// bits), into v and mag (b·h·d each, zero on entry).
func kvProject(x, w []float64, b, h, d int, v, mag []float64) {
	parallel.For(b*h, max(1, (1<<14)/max(d*d, 1)), func(lo, hi int) {
		for it := lo; it < hi; it++ {
			hh := it % h
			xr := x[it*d:][:d]
			wm := w[hh*d*d:][:d*d]
			o, m := v[it*d:][:d], mag[it*d:][:d]
			for i, xi := range xr {
				wr := wm[i*d:][:d]
				for j, wj := range wr {
					p := float64(xi * wj)
					o[j] += p
					m[j] += math.Abs(p)
				}
			}
		}
	})
}
