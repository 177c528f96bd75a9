package suites

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/ops"
	. "github.com/onsi/ginkgo/v2"
)

// GEMMShapes are the M×K×N shapes the gemm specs cover: degenerate
// vectors, ±1 around the 16 and 32 fractal edges, primes, a tall-skinny
// matrix and a long K.
var GEMMShapes = [][3]int{
	{1, 1, 1}, {1, 257, 1}, {33, 1, 17},
	{15, 15, 15}, {16, 16, 16}, {17, 17, 17},
	{31, 31, 31}, {32, 32, 32}, {33, 33, 33},
	{7, 13, 11}, {37, 41, 43},
	{4096, 16, 16}, {3, 4096, 5},
}

// gemmScalars are the (alpha, beta) pairs: the plain product, a scaled
// product, and both with a C term.
var gemmScalars = [][2]string{{"1", "0"}, {"0.5", "0"}, {"1", "1"}, {"-1.5", "0.25"}}

var _ = registerOp("gemm", DescribeGEMM)

// DescribeGEMM declares the gemm UT specs against the backend b: every
// mode × shape × (alpha, beta) × distribution within bound, under both
// accumulate models, and special values (inf, NaN, subnormal products,
// overflow) per mode.
func DescribeGEMM(b Backend) bool {
	return Describe("gemm", Label("UT", "op:gemm"), func() {
		for _, mode := range ops.GEMMModes() {
			Context(mode.Name, Label("dtype:"+mode.In.String()), func() {
				var entries []TableEntry
				for _, s := range GEMMShapes {
					for _, ab := range gemmScalars {
						for _, dist := range []string{ops.DistUniform, ops.DistNormal, ops.DistCancel, ops.DistLarge, ops.DistSpecial} {
							big := s[0]*s[1]*s[2] > 1<<16
							if big && (dist != ops.DistUniform || ab != gemmScalars[0]) {
								continue // large shapes test tiling, not values
							}
							entries = append(entries, Entry(nil, s, ab, dist, ops.GEMMSequential))
							if dist == ops.DistUniform {
								entries = append(entries, Entry(nil, s, ab, dist, ops.GEMMBlocked16))
							}
						}
					}
				}
				DescribeTable("is within bound",
					func(ctx context.Context, s [3]int, ab [2]string, dist, acc string) {
						c := ops.Case{Op: "gemm",
							Params: ops.Params{"mode": mode.Name, "alpha": ab[0], "beta": ab[1], "accumulate": acc},
							Dims:   map[string]int{"m": s[0], "k": s[1], "n": s[2]}, Dist: dist,
							Seed: uint64(s[0]*1_000_000 + s[1]*1000 + s[2])}
						runWithinBound(ctx, b(), c)
					},
					func(s [3]int, ab [2]string, dist, acc string) string {
						return fmt.Sprintf("%dx%dx%d alpha=%s beta=%s dist=%s accumulate=%s", s[0], s[1], s[2], ab[0], ab[1], dist, acc)
					},
					entries,
				)
			})
		}
	})
}
