package suites

import (
	"context"
	"math"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = registerOp("vector_add", describeVectorAdd)

// describeVectorAdd declares vector_add's own specs against b: under
// either overflow profile, special values that overflow reach the
// profile's overflow value (inf or ±max) and stay within bound.
func describeVectorAdd(b Backend) {
	for _, d := range opdb.VectorAddDTypes() {
		Context(d.String(), Label("dtype:"+d.String()), func() {
			for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate}} {
				It("handles special values with overflow="+num.Overflow.String(), func(ctx context.Context) {
					c := ops.Case{Op: "vector_add", Params: ops.Params{"dtype": d.String()},
						Dims: map[string]int{"n": 4096}, Dist: ops.DistSpecial, Seed: 77, Numerics: &num}
					res := runWithinBound(ctx, b(), c)
					if !d.IsFloat() {
						return
					}
					z, f := res.Outputs["z"], mustFormat(d)
					overflowed := 0
					for i := 0; i < z.Len(); i++ {
						v := z.Float64(i)
						if math.IsInf(v, 0) || math.Abs(v) == f.MaxFinite() {
							overflowed++
						}
					}
					Expect(overflowed).To(BeNumerically(">", 0), "%s: no element reached the overflow value", harness.Subject(c))
				})
			}
		})
	}
}

// mustFormat returns d's floating-point format.
func mustFormat(d tensor.DType) tensor.Format {
	f, ok := d.FloatFormat()
	if !ok {
		panic("suites: " + d.String() + " is not a floating dtype")
	}
	return f
}
