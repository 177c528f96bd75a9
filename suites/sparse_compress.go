package suites

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/ops"
	. "github.com/onsi/ginkgo/v2"
)

var _ = registerOp("sparse_compress", DescribeSparseCompress)

// DescribeSparseCompress declares the sparse_compress UT specs against b:
// every distribution × shape × (keep_ratio, sinks), judged tie-aware.
func DescribeSparseCompress(b Backend) bool {
	return Describe("sparse_compress", Label("UT", "op:sparse_compress"), func() {
		var entries []TableEntry
		for _, s := range [][3]int{{1, 0, 4}, {2, 1, 4}, {2, 5, 8}, {3, 33, 16}, {50, 9, 4}} {
			for _, rs := range [][2]string{{"0.5", "2"}, {"1", "2"}, {"0.1", "4"}, {"0.3", "0"}} {
				for _, dist := range ops.SparseCompress.Dists() {
					entries = append(entries, Entry(nil, s, rs, dist))
				}
			}
		}
		DescribeTable("selects within the tie band",
			func(ctx context.Context, s [3]int, rs [2]string, dist string) {
				c := ops.Case{Op: "sparse_compress", Params: ops.Params{"keep_ratio": rs[0], "sinks": rs[1]},
					Dims: map[string]int{"h": s[0], "l": s[1], "d": s[2]}, Dist: dist, Seed: uint64(s[0]*10000 + s[1]*100 + s[2])}
				runWithinBound(ctx, b(), c)
			},
			func(s [3]int, rs [2]string, dist string) string {
				return fmt.Sprintf("%dx%dx%d keep_ratio=%s sinks=%s dist=%s", s[0], s[1], s[2], rs[0], rs[1], dist)
			},
			entries,
		)
	})
}
