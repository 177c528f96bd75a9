package ops

import (
	"fmt"

	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// The output invariants of kv_update (ops.OutputInvariants), by the name
// their failures carry.
const (
	// CheckUnwrittenUnchanged: every cache value and scale outside the
	// rows the contract writes is bit-identical to its input (whole-cache
	// comparison, poisoned NaN tail included).
	CheckUnwrittenUnchanged = "unwritten-unchanged"
	// CheckCacheMatchesNew: a written fp16 cache row holds new_k (new_v)
	// bit for bit.
	CheckCacheMatchesNew = "cache-matches-new"
	// CheckInt8Exact: a written int8 row and its scale are exactly the
	// contract's quantisation of the kernel's own fp16 new_k (new_v) row;
	// at a double-rounding tie (reference.QuantizeRowTies) the codes of
	// the RN32 and of the exact quotient are both that quantisation.
	CheckInt8Exact = "int8-quantisation-exact"
)

// CheckOutputs checks kv_update's invariants; see the type's doc.
func (op kvUpdate) CheckOutputs(p Params, in, out map[string]*tensor.Tensor, num tensor.Numerics) []Violation {
	g, writes, err := KVUpdateWrites(p, in)
	if err != nil {
		return []Violation{{Output: "k_cache", Check: CheckUnwrittenUnchanged, Reason: err.Error()}}
	}
	written := make([]bool, g.Rows())
	for _, w := range writes {
		written[w.Row] = true
	}
	var vs []Violation
	round := func(x float64) float64 { return num.Round(x, tensor.Int8) }
	for _, kv := range []struct{ newName, cache, scale string }{
		{"new_k", "k_cache", "k_scale"}, {"new_v", "v_cache", "v_scale"},
	} {
		names := []string{kv.cache}
		if g.Int8 {
			names = append(names, kv.scale)
		}
		for _, name := range names {
			got, want := out[name], in[name]
			per := g.D // elements per row-head
			if name == kv.scale {
				per = 1
			}
			if i := kvFirstChanged(got, want, per*g.H, written); i >= 0 {
				vs = append(vs, Violation{Output: name, Check: CheckUnwrittenUnchanged,
					Reason: fmt.Sprintf("%s element %d (row %d, not written by this step) changed: got bits %#x, want %#x (input)", name, i, i/(per*g.H), got.Bits(i), want.Bits(i))})
			}
		}
		nk, cache := out[kv.newName], out[kv.cache]
	rows:
		for _, w := range writes {
			for h := range g.H {
				src, dst := (w.B*g.H+h)*g.D, (w.Row*g.H+h)*g.D
				if !g.Int8 {
					for i := range g.D {
						if cache.Bits(dst+i) != nk.Bits(src+i) {
							vs = append(vs, Violation{Output: kv.cache, Check: CheckCacheMatchesNew,
								Reason: fmt.Sprintf("%s row %d head %d element %d (seq %d pos %d): got bits %#x, want %s[%d,%d,%d] bits %#x", kv.cache, w.Row, h, i, w.Seq, w.Pos, cache.Bits(dst+i), kv.newName, w.B, h, i, nk.Bits(src+i))})
							break rows
						}
					}
					continue
				}
				row := make([]float64, g.D)
				for i := range row {
					row[i] = nk.Float64(src + i)
				}
				q, alt, s := reference.QuantizeRowTies(row, round)
				gs := out[kv.scale].Float64(w.Row*g.H + h)
				if gs != s {
					vs = append(vs, Violation{Output: kv.scale, Check: CheckInt8Exact,
						Reason: fmt.Sprintf("%s[row %d, head %d] (seq %d pos %d, batch %d): got %g, want %g = RN32(max|%s row|/127)", kv.scale, w.Row, h, w.Seq, w.Pos, w.B, gs, s, kv.newName)})
					break rows
				}
				for i := range g.D {
					if gq := cache.Float64(dst + i); gq != q[i] && gq != alt[i] {
						want := fmt.Sprintf("%g = round(RN32(%s/scale))", q[i], kv.newName)
						if alt[i] != q[i] {
							want = fmt.Sprintf("%g = round(RN32(%s/scale)) or %g = round(%s/scale) (a double-rounding tie)", q[i], kv.newName, alt[i], kv.newName)
						}
						vs = append(vs, Violation{Output: kv.cache, Check: CheckInt8Exact,
							Reason: fmt.Sprintf("%s row %d head %d element %d (seq %d pos %d): got %g, want %s", kv.cache, w.Row, h, i, w.Seq, w.Pos, gq, want)})
						break rows
					}
				}
			}
		}
	}
	return vs
}

// kvFirstChanged returns the first element of got, outside the rows
// (rowLen elements each) marked in written, whose bits differ from
// want's, or −1. Runs of unwritten rows are compared as whole slices of
// bit patterns (fp16 and int8 through memequal), the rows split over
// cores, so a whole-cache check costs about a memory pass.
func kvFirstChanged(got, want *tensor.Tensor, rowLen int, written []bool) int {
	first := make([]int, len(written)) // per range, at its first row
	parallel.For(len(written), max(1, kvCopyGrain/max(rowLen, 1)), func(lo, hi int) {
		first[lo] = kvFirstChangedRows(got, want, rowLen, written, lo, hi)
	})
	for r := 0; r < len(written); r++ {
		if first[r] != 0 {
			return first[r] - 1
		}
	}
	return -1
}

// kvFirstChangedRows is kvFirstChanged over rows [r0, hi), returning the
// element's index plus one, or 0.
func kvFirstChangedRows(got, want *tensor.Tensor, rowLen int, written []bool, r0, hi int) int {
	for r0 < hi {
		if written[r0] {
			r0++
			continue
		}
		r1 := r0 + 1
		for r1 < hi && !written[r1] {
			r1++
		}
		lo, end := r0*rowLen, r1*rowLen
		if !tensor.BitsEqualRange(got, want, lo, end) {
			for i := lo; i < end; i++ {
				if got.Bits(i) != want.Bits(i) {
					return i + 1
				}
			}
		}
		r0 = r1
	}
	return 0
}
