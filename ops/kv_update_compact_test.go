package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// TestKVUpdateCompactVerdicts checks that verify gives the same metrics
// and verdicts on kv_update's caches and scales whether their Expected
// is compact (bound.NewUnchanged, as Expect returns it) or materialized,
// on outputs that are the inputs with the written rows set to the
// reference and random elements changed (other zero, an ulp off, NaN,
// another value), in every layout, cache dtype, dist and profile.
func TestKVUpdateCompactVerdicts(t *testing.T) {
	dims := map[string]int{"b": 9, "s": 8, "h": 4, "d": 64, "l": 160, "bs": 16}
	for _, layout := range []string{KVContiguous, KVPaged} {
		for _, dt := range []string{KVFP16, KVInt8} {
			for _, dist := range KVUpdate.Dists() {
				for _, num := range []tensor.Numerics{{}, {Subnormals: tensor.SubnormalFlush, Overflow: tensor.OverflowSaturate}} {
					seed := uint64(50)
					p, err := KVUpdate.Validate(Params{"layout": layout, "cache_dtype": dt})
					if err != nil {
						t.Fatal(err)
					}
					in, err := KVUpdate.Generate(p, Gen{Dims: dims, Dist: dist, Seed: seed})
					if err != nil {
						t.Fatal(err)
					}
					want, err := KVUpdate.Expect(p, in, num)
					if err != nil {
						t.Fatal(err)
					}
					r := rand.New(rand.NewPCG(seed, 9))
					for _, name := range []string{"k_cache", "v_cache", "k_scale", "v_scale"} {
						w, ok := want[name]
						if !ok {
							continue
						}
						if !w.Compact() {
							t.Fatalf("kv_update %s dist=%s seed=%d: %s: Expect's Expected is not compact", p, dist, seed, name)
						}
						got := in[name].Clone()
						for i := range got.Len() {
							if !w.Accepts(i, got.Float64(i)) {
								got.SetFloat64(i, w.RefAt(i), tensor.Numerics{})
							}
						}
						for range 20 {
							i := r.IntN(got.Len())
							g := got.Float64(i)
							switch r.IntN(4) {
							case 0:
								g = -g
							case 1:
								g += 1
							case 2:
								g = math.NaN()
							default:
								g = g * 1.01
							}
							got.SetFloat64(i, g, tensor.Numerics{})
						}
						full := *w
						full.Materialize()
						gm, fm := verify.Compute(got, w), verify.Compute(got, &full)
						if fmt.Sprintf("%+v", gm) != fmt.Sprintf("%+v", fm) {
							t.Fatalf("kv_update %s dist=%s num=%v seed=%d: %s: compact metrics %+v / materialized %+v", p, dist, num, seed, name, gm, fm)
						}
						for _, spelling := range []string{"bound", "allclose", "ascend-mixed"} {
							pol := verify.MustParsePolicy(spelling)
							gv := pol.Judge(verify.Input{Got: got, Want: w})
							fv := pol.Judge(verify.Input{Got: got, Want: &full})
							if fmt.Sprintf("%+v", gv) != fmt.Sprintf("%+v", fv) {
								t.Fatalf("kv_update %s dist=%s num=%v seed=%d: %s %s: compact verdict %+v / materialized %+v", p, dist, num, seed, name, spelling, gv, fv)
							}
						}
					}
				}
			}
		}
	}
}
