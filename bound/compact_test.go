package bound

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// exactValues returns values around every threshold of d's format (zero,
// subnormals, MinNormal, MaxFinite, the overflow threshold, ±Inf, NaN)
// and n seeded random values of every magnitude.
func exactValues(d tensor.DType, r *rand.Rand, n int) []float64 {
	var xs []float64
	if f, isFloat := d.FloatFormat(); isFloat {
		thr := f.MaxFinite() + float64(f.Ulp(f.MaxFinite())/2)
		for _, v := range []float64{0, f.MinSubnormal(), f.MinNormal(), f.MaxFinite(), thr, math.Inf(1), math.NaN(), 1, 1 + float64(f.Ulp(1)/2)} {
			xs = append(xs, v, -v, math.Nextafter(v, 0), math.Nextafter(v, math.Inf(1)), -math.Nextafter(v, math.Inf(1)))
		}
	} else { // integers in and past the range, halves, zeros of both signs
		lo, hi := d.IntRange()
		for _, v := range []float64{lo, hi, 0, 1} {
			xs = append(xs, v, -v, v-1, v+1, v-0.5, v+0.5, math.Nextafter(v, 0))
		}
		xs = append(xs, math.Inf(1), math.Inf(-1), math.NaN())
		for range n {
			xs = append(xs, float64(r.IntN(600)-300))
		}
	}
	for range n {
		xs = append(xs, math.Ldexp(r.NormFloat64(), r.IntN(300)-150), r.NormFloat64()*1000, math.Float64frombits(r.Uint64()))
	}
	return xs
}

// TestCompactMatchesSetExact holds every way of reading a compact
// Expected (NewExactFrom) to the ordinary one SetExact fills from the
// same values, bit for bit: Load over windows of several sizes and
// offsets, Refs, the element methods, and Materialize.
func TestCompactMatchesSetExact(t *testing.T) {
	const seed = 11
	r := rand.New(rand.NewPCG(seed, 0))
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	for _, d := range tensor.DTypes() {
		xs := exactValues(d, r, 3000)
		n := len(xs)
		src := func(off int, dst []float64) { copy(dst, xs[off:off+len(dst)]) }
		for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate}, {Subnormals: tensor.SubnormalFlush}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
			want := NewExpected(n)
			for i, v := range xs {
				want.SetExact(i, v, d, num)
			}
			c := NewExactFrom(n, d, num, src)
			if !c.Compact() || c.Len() != n || c.Span() != n || c.Check() != nil {
				t.Fatalf("bound NewExactFrom %s %v n=%d: compact %v, len %d, span %d, check %v", d, num, n, c.Compact(), c.Len(), c.Span(), c.Check())
			}
			var v View
			for _, w := range []int{1, 7, 2048, n} {
				for off := 0; off < n; off += w {
					k := min(w, n-off)
					c.Load(&v, off, k)
					refs := c.Refs(off, make([]float64, k))
					for j := range k {
						i := off + j
						if !same(v.Ref[j], want.Ref[i]) || !same(v.Bound[j], want.Bound[i]) || v.Alt[j] != want.Alt[i] ||
							!v.IsExact(j) || !same(v.Rounded[j], want.Rounded[i]) || !same(refs[j], want.Ref[i]) {
							t.Fatalf("bound compact Load %s %v seed=%d window %d: element %d (r=%g): got ref %g (Refs %g) bound %g alt %v exact %v rounded %g / want ref %g bound %g alt %v rounded %g",
								d, num, seed, w, i, xs[i], v.Ref[j], refs[j], v.Bound[j], v.Alt[j], v.IsExact(j), v.Rounded[j], want.Ref[i], want.Bound[i], want.Alt[i], want.Rounded[i])
						}
					}
				}
			}
			for i, x := range xs {
				g := want.Rounded[i]
				if !same(c.RefAt(i), want.Ref[i]) || !same(c.BoundAt(i), want.Bound[i]) || c.AltAt(i) != want.Alt[i] || !c.IsExact(i) ||
					!same(c.RoundedAt(i), want.Rounded[i]) || c.Ambiguous(i) != want.Ambiguous(i) ||
					c.Accepts(i, g) != want.Accepts(i, g) || c.Accepts(i, x) != want.Accepts(i, x) {
					t.Fatalf("bound compact accessors %s %v seed=%d: element %d (r=%g) differs from SetExact's", d, num, seed, i, x)
				}
			}
			c.Materialize()
			if c.Compact() {
				t.Fatalf("bound Materialize %s %v: still compact", d, num)
			}
			for i, x := range xs {
				if !same(c.Ref[i], want.Ref[i]) || !same(c.Bound[i], want.Bound[i]) || c.Alt[i] != want.Alt[i] ||
					c.Exact[i] != want.Exact[i] || !same(c.Rounded[i], want.Rounded[i]) {
					t.Fatalf("bound Materialize %s %v seed=%d: element %d (r=%g) differs from SetExact's", d, num, seed, i, x)
				}
			}
		}
	}
}

// TestLoadOrdinary checks that Load on an ordinary Expected aliases its
// arrays, with Exact nil when no element is exact.
func TestLoadOrdinary(t *testing.T) {
	e := NewExpected(10)
	e.Ref[3], e.Bound[3], e.Alt[3] = 1.5, 0.25, NaN
	var v View
	e.Load(&v, 2, 5)
	if len(v.Ref) != 5 || v.Ref[1] != 1.5 || v.Bound[1] != 0.25 || v.Alt[1] != NaN || v.Exact != nil || v.IsExact(1) {
		t.Fatalf("bound Load(2, 5) of an ordinary Expected: got %+v", v)
	}
	e.SetExact(4, 3, tensor.Float16, tensor.Numerics{})
	e.Load(&v, 2, 5)
	if !v.IsExact(2) || v.IsExact(1) || v.Rounded[2] != 3 {
		t.Fatalf("bound Load(2, 5) after SetExact(4): got %+v", v)
	}
	if got := e.Refs(2, make([]float64, 5)); &got[0] != &e.Ref[2] {
		t.Fatalf("bound Refs of an ordinary Expected does not alias Ref")
	}
}
