package suites

import (
	"context"
	"math"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// VectorAddDTypes are the dtypes of the vector_add contract.
var VectorAddDTypes = []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8}

// VectorAddSizes returns the edge sizes the vector_add specs cover for
// dtype d: around the 32-byte block and small powers of two, one UB tile
// −1/0/+1 and one full multi-core pass (every core one full tile) −1/0/+1,
// with tile and pass taken from the emulator's tiling on prof.
func VectorAddSizes(prof npu.Profile, d tensor.DType) ([]int, error) {
	sizes := []int{0, 1, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257}
	t, err := kernels.NewVectorAddTiling(prof, tensor.MaxElements, d)
	if err != nil {
		return nil, err
	}
	tile, pass := t.MaxTileElems, t.MaxTileElems*t.BlockDim
	return append(sizes, tile-1, tile, tile+1, pass-1, pass, pass+1), nil
}

var _ = registerOp("vector_add", DescribeVectorAdd)

// DescribeVectorAdd declares the vector_add UT specs against the backend
// b: every edge size × dtype × distribution within bound, and special
// values under both overflow modes.
func DescribeVectorAdd(b Backend) bool {
	return Describe("vector_add", Label("UT", "op:vector_add"), func() {
		for _, d := range VectorAddDTypes {
			sizes, err := VectorAddSizes(npu.Ascend910B(), d)
			if err != nil {
				panic(err) // the default profile's tiling is a package invariant
			}
			Context(d.String(), Label("dtype:"+d.String()), func() {
				var entries []TableEntry
				for _, n := range sizes {
					for _, dist := range []string{ops.DistUniform, ops.DistNormal, ops.DistSpecial, ops.DistCancel, ops.DistLarge} {
						if n > 1<<16 && dist != ops.DistUniform {
							continue // the large sizes test tiling, not values
						}
						entries = append(entries, Entry(nil, n, dist))
					}
				}
				DescribeTable("is within bound",
					func(ctx context.Context, n int, dist string) {
						c := ops.Case{Op: "vector_add", Params: ops.Params{"dtype": d.String()},
							Dims: map[string]int{"n": n}, Dist: dist, Seed: uint64(1000 + n)}
						runWithinBound(ctx, b(), c)
					},
					func(n int, dist string) string { return caseName("n=%d dist=%s", n, dist) },
					entries,
				)
				for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate}} {
					It("handles special values with overflow="+num.Overflow.String(), func(ctx context.Context) {
						c := ops.Case{Op: "vector_add", Params: ops.Params{"dtype": d.String()},
							Dims: map[string]int{"n": 4096}, Dist: ops.DistSpecial, Seed: 77, Numerics: &num}
						res := runWithinBound(ctx, b(), c)
						if !d.IsFloat() {
							return
						}
						// The special distribution includes max + max: the check
						// above only means something if overflow really happened.
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
	})
}

func mustFormat(d tensor.DType) tensor.Format {
	f, ok := d.FloatFormat()
	if !ok {
		panic("suites: " + d.String() + " is not a floating dtype")
	}
	return f
}
