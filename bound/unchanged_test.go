package bound

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestUnchangedMatchesOutput holds every reader of an Expected made by
// NewUnchanged (Load, Refs, the element methods, Materialize) to
// Output(base[i], 0, d, num) per element outside the overridden spans
// and to the overrides inside, bit for bit, on random bases with zeros
// of both signs, subnormals, MaxFinite, ±Inf and NaN, for every profile.
func TestUnchangedMatchesOutput(t *testing.T) {
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Float64, tensor.Int8, tensor.Int32} {
		for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
			const seed, n = 7, 5000
			r := rand.New(rand.NewPCG(seed, uint64(d)))
			base := tensor.MustNew(d, n)
			f, isFloat := d.FloatFormat()
			for i := range n {
				v := r.NormFloat64() * 100
				if isFloat {
					switch r.IntN(10) {
					case 0:
						v = math.Copysign(0, -1)
					case 1:
						v = f.MinSubnormal() * float64(r.IntN(9)-4)
					case 2:
						v = math.Copysign(f.MaxFinite(), v)
					case 3:
						v = math.Inf(1 - 2*r.IntN(2))
					case 4:
						v = math.NaN()
					}
				}
				base.SetFloat64(i, v, tensor.Numerics{})
			}
			e := NewUnchanged(base, num)
			want := NewExpected(n)
			for i := range n {
				want.Ref[i], want.Bound[i], want.Alt[i] = Output(base.Float64(i), 0, d, num)
			}
			for _, s := range []Span{{10, 7}, {4000, 100}, {n - 3, 3}} {
				o, err := e.Override(s.Off, s.N)
				if err != nil {
					t.Fatal(err)
				}
				for j := range s.N {
					if j%2 == 0 {
						o.SetExact(j, float64(j)+0.5, d, num)
						want.SetExact(s.Off+j, float64(j)+0.5, d, num)
					} else {
						o.Ref[j], o.Bound[j], o.Alt[j] = 3, 1, PosInf
						want.Ref[s.Off+j], want.Bound[s.Off+j], want.Alt[s.Off+j] = 3, 1, PosInf
					}
				}
			}
			if _, err := e.Override(12, 10); err == nil {
				t.Fatalf("bound %s %v: an override overlapping another in part was accepted", d, num)
			}
			// Empty spans (a kv_update cache row of h = 0 heads) change
			// nothing, inside an override or at the very end.
			for _, off := range []int{0, 13, n} {
				if o, err := e.Override(off, 0); err != nil || o.Len() != 0 {
					t.Fatalf("bound %s %v: Override(%d, 0): got %v, %v / want an empty Expected, no error", d, num, off, o, err)
				}
			}
			if _, err := e.Override(n, 1); err == nil {
				t.Fatalf("bound %s %v: Override(%d, 1) past the %d elements was accepted", d, num, n, n)
			}
			var v View
			buf := make([]float64, 777)
			for off := 0; off < n; off += 777 {
				k := min(777, n-off)
				e.Load(&v, off, k)
				refs := e.Refs(off, buf[:k])
				for j := range k {
					i := off + j
					wr, wb, wa, we, wrd := want.at(i)
					gr, gb, ga, ge, grd := e.at(i)
					if !same(v.Ref[j], wr) || !same(v.Bound[j], wb) || v.Alt[j] != wa || v.IsExact(j) != we || (we && !same(v.Rounded[j], wrd)) ||
						!same(refs[j], wr) || !same(gr, wr) || !same(gb, wb) || ga != wa || ge != we || !same(grd, wrd) {
						t.Fatalf("bound %s %v seed=%d element %d (base %g): got load %g±%g %v exact %v, refs %g, at %g±%g %v / want %g±%g %v exact %v %g",
							d, num, seed, i, base.Float64(i), v.Ref[j], v.Bound[j], v.Alt[j], v.IsExact(j), refs[j], gr, gb, ga, wr, wb, wa, we, wrd)
					}
				}
			}
			e.Materialize()
			for i := range n {
				if !same(e.Ref[i], want.Ref[i]) || !same(e.Bound[i], want.Bound[i]) || e.Alt[i] != want.Alt[i] || e.IsExact(i) != want.IsExact(i) {
					t.Fatalf("bound %s %v seed=%d element %d: materialized %g±%g %v / want %g±%g %v", d, num, seed, i, e.Ref[i], e.Bound[i], e.Alt[i], want.Ref[i], want.Bound[i], want.Alt[i])
				}
			}
		}
	}
}
