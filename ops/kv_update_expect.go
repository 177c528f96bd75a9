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
// kvOutputTable, anything else through bound.Output per element.
func kvUnwrittenExpected(t *tensor.Tensor, num tensor.Numerics) *bound.Expected {
	n := t.Len()
	e := bound.NewExpected(n)
	switch {
	case t.DType == tensor.Float16 && n > 1<<18:
		tab, src := newKVOutputTable(t.DType, num), t.F16()
		parallel.For(n, kvCopyGrain, func(lo, hi int) {
			for i, x := range src[lo:hi] {
				e.Ref[lo+i], e.Bound[lo+i], e.Alt[lo+i] = tab.ref[x], tab.bnd[x], tab.alt[x]
			}
		})
	case t.DType == tensor.Int8 && n > 1<<12:
		tab, src := newKVOutputTable(t.DType, num), t.I8()
		parallel.For(n, kvCopyGrain, func(lo, hi int) {
			for i, x := range src[lo:hi] {
				k := uint8(x)
				e.Ref[lo+i], e.Bound[lo+i], e.Alt[lo+i] = tab.ref[k], tab.bnd[k], tab.alt[k]
			}
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
					p := xi * wj
					o[j] += p
					m[j] += math.Abs(p)
				}
			}
		}
	})
}
