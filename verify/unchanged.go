package verify

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sort"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// unchangedGeneral is how many elements computeUnchanged hands to
// addBlock at once from where the bit comparison stopped: a few more
// than the one that stopped it, so that an output unlike its base goes
// through windows, not element by element.
const unchangedGeneral = 256

// computeUnchanged is computePart for a want made by bound.NewUnchanged
// whose base has got's dtype: elements [lo, hi) of got against base
// outside the overridden spans, through addBlock inside them.
//
// An element outside the spans whose got has the base's bits (what
// almost every element of a correct output is) has, at x = base[i],
// reference Output(x, 0).Ref = x and error 0: for a finite x of a
// floating dtype Output keeps x, with a bound of at least 0 and no
// alternatives (|x| ≤ MaxFinite is below the overflow threshold), and an
// integer keeps its value (in range, no rounding). addBlock would count
// it compared and in ulp bucket "0", raise the RMSE-free scale to |x|,
// and change nothing else (e = 0: MaxAbs, MaxRel, tightness stay, the
// element is accepted and never among the worst). Under a profile that
// does not saturate, a NaN or ±Inf x is its own reference's class (Alt
// holds it): counted "nonfinite", nothing else. Those are gathered
// inline (sameRun); every other element goes through addBlock, with its
// expected values from the Expected, got's values converted into gb (a
// block long).
//
// It returns what it gathered inline: every element of the range when
// acc.compared + acc.nonFinite = hi − lo, and none of them through
// addBlock then (Stream.addCopied's copied chunks).
func (p *metricsPart) computeUnchanged(got *tensor.Tensor, want *bound.Expected, base *tensor.Tensor, num tensor.Numerics, spans []bound.Span, lo, hi int, gb []float64) (acc sameAcc) {
	d := got.DType
	f, isFloat := d.FloatFormat()
	var v bound.View
	walkUnchanged(got, base, num, spans, lo, hi, &acc, func(a, b int) bool {
		for b0 := a; b0 < b; b0 += block {
			gv := gb[:min(block, b-b0)]
			got.Float64sFrom(b0, gv)
			want.Load(&v, b0, len(gv))
			p.addBlock(d, f, isFloat, gv, &v, b0)
		}
		return true
	})
	p.compared += acc.compared
	p.hist[0] += acc.compared
	p.hist[nonFiniteBucket] += acc.nonFinite
	return acc
}

// walkUnchanged is computeUnchanged's walk over elements [lo, hi) of got:
// the elements sameRun gathers into acc, every other range [a, b) to
// general (the overridden spans whole, the rest unchangedGeneral
// elements at a time), in index order, stopping when general returns
// false. It reports whether it went to hi.
func walkUnchanged(got, base *tensor.Tensor, num tensor.Numerics, spans []bound.Span, lo, hi int, acc *sameAcc, general func(a, b int) bool) bool {
	nonFinite := num.Overflow != tensor.OverflowSaturate
	k := sort.Search(len(spans), func(k int) bool { return spans[k].Off+spans[k].N > lo })
	for pos := lo; pos < hi; {
		if k < len(spans) && spans[k].Off <= pos {
			end := min(spans[k].Off+spans[k].N, hi)
			if !general(pos, end) {
				return false
			}
			pos = end
			k++
			continue
		}
		end := hi
		if k < len(spans) {
			end = min(end, spans[k].Off)
		}
		for pos < end {
			pos += acc.sameRun(got, base, pos, end, nonFinite)
			if pos < end {
				e := min(pos+unchangedGeneral, end)
				if !general(pos, e) {
					return false
				}
				pos = e
			}
		}
	}
	return true
}

// sameAcc is what sameRun gathers: elements compared (finite, error 0)
// and non-finite ones of their reference's class.
type sameAcc struct {
	compared, nonFinite int
}

// sameRun gathers elements lo, lo+1, … (before hi) of got whose bits are
// base's and that computeUnchanged may take inline (finite, or
// non-finite when nonFinite), and returns how many: the next one, if
// any, is not such an element. It handles fp16, bf16, fp32 and int8
// outputs, and gathers nothing (returns 0) for any other dtype.
func (a *sameAcc) sameRun(got, base *tensor.Tensor, lo, hi int, nonFinite bool) int {
	switch got.DType {
	case tensor.Float16:
		g, b := got.F16()[lo:hi], base.F16()[lo:hi]
		j, c, nf := sameRun16(g, b, 0x7C00, nonFinite)
		a.compared, a.nonFinite = a.compared+c, a.nonFinite+nf
		return j
	case tensor.BFloat16:
		g, b := got.BF16s()[lo:hi], base.BF16s()[lo:hi]
		j, c, nf := sameRun16(g, b, 0x7F80, nonFinite)
		a.compared, a.nonFinite = a.compared+c, a.nonFinite+nf
		return j
	case tensor.Float32:
		g, b := got.F32()[lo:hi], base.F32()[lo:hi]
		b = b[:len(g)]
		c, nf := 0, 0
		j := 0
		for ; j < len(g); j++ {
			x := math.Float32bits(b[j])
			if math.Float32bits(g[j]) != x {
				break
			}
			if x&^(1<<31) < 0x7F800000 {
				c++
			} else if nonFinite {
				nf++
			} else {
				break
			}
		}
		a.compared, a.nonFinite = a.compared+c, a.nonFinite+nf
		return j
	case tensor.Int8:
		g, b := got.I8()[lo:hi], base.I8()[lo:hi]
		b = b[:len(g)]
		j := 0
		for j < len(g) && g[j] == b[j] {
			j++
		}
		a.compared += j
		return j
	}
	return 0
}

// sameRun16 is sameRun on 16-bit floating patterns whose exponent field
// is inf (all ones from inf up): it returns how many it gathered, and
// how many of those are finite and non-finite.
func sameRun16[T ~uint16](g, b []T, inf uint16, nonFinite bool) (j, compared, nonFin int) {
	b = b[:len(g)]
	gw, bw := bits16(g), bits16(b)
	// Sixteen at a time where the CPU has AVX2 (the run of a copied cache
	// is read from memory here, and the word loop's compares, not the
	// memory, bounded it); then four at a time while the words are equal
	// and their values finite (or non-finite ones are gathered too); the
	// word where that ends is looked at one value at a time below.
	if n := len(g) &^ 15; useAVX2 && n > 0 {
		j, nonFin = sameRun16AVX2(&gw[0], &bw[0], n, inf, nonFinite)
		compared = j - nonFin
	}
	for ; j+4 <= len(g); j += 4 {
		w := binary.LittleEndian.Uint64(bw[2*j:])
		if binary.LittleEndian.Uint64(gw[2*j:]) != w {
			break
		}
		nf := bits.OnesCount64(nonFiniteLanes(w, inf))
		if nf > 0 && !nonFinite {
			break
		}
		compared, nonFin = compared+4-nf, nonFin+nf
	}
	j2, c2, nf2 := sameRun16One(g[j:], b[j:], inf, nonFinite)
	return j + j2, compared + c2, nonFin + nf2
}

// sameRun16One is sameRun16 one value at a time: its definition, and its
// end once the words stop.
func sameRun16One[T ~uint16](g, b []T, inf uint16, nonFinite bool) (j, compared, nonFin int) {
	b = b[:len(g)]
	for ; j < len(g); j++ {
		x := b[j]
		if g[j] != x {
			break
		}
		if uint16(x)&^(1<<15) < inf {
			compared++
		} else if nonFinite {
			nonFin++
		} else {
			break
		}
	}
	return j, compared, nonFin
}
