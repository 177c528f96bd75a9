package suites

import (
	"context"
	"os"

	"github.com/npuverify/npuverify/ops"
	. "github.com/onsi/ginkgo/v2"
)

// kvLayouts are the (layout, cache dtype) pairs of the KV-cache ops.
var kvLayouts = []ops.Params{
	{"layout": ops.KVContiguous, "cache_dtype": ops.KVFP16},
	{"layout": ops.KVContiguous, "cache_dtype": ops.KVInt8},
	{"layout": ops.KVPaged, "cache_dtype": ops.KVFP16},
	{"layout": ops.KVPaged, "cache_dtype": ops.KVInt8},
}

// LongEnv switches on the long KV sweeps (Ginkgo label "long"), which
// `make test` leaves out: NPUVERIFY_LONG=1.
const LongEnv = "NPUVERIFY_LONG"

// skipUnlessLong skips a long spec unless LongEnv is set.
func skipUnlessLong() {
	if os.Getenv(LongEnv) == "" {
		Skip("long sweep: set " + LongEnv + "=1")
	}
}

var _ = registerOp("kv_update", DescribeKVUpdate)

// DescribeKVUpdate declares the kv_update UT specs against b: every
// layout and cache dtype × head size 64, 128 × block size 8, 16, 32,
// with the generator's lengths at len mod block ∈ {0, 1, block−1}, an
// empty and a full sequence, padding entries and shuffled block tables;
// all checks (bound, unwritten cache bits, int8 exactness, guards, inputs
// unchanged). The long sweep (label long) adds head sizes 80 and 256,
// 1024+ physical blocks and more batch entries than cores.
func DescribeKVUpdate(b Backend) bool {
	return Describe("kv_update", Label("UT", "op:kv_update"), func() {
		var entries []TableEntry
		for _, p := range kvLayouts {
			for _, d := range []int{64, 128} {
				for _, bs := range []int{8, 16, 32} {
					entries = append(entries, Entry(nil, p, d, bs, 6, ops.DistUniform))
				}
			}
			entries = append(entries, Entry(nil, p, 16, 8, 9, ops.DistSpecial))
		}
		DescribeTable("is within bound, and leaves every unwritten cache byte alone",
			func(ctx context.Context, p ops.Params, d, bs, s int, dist string) {
				c := ops.Case{Op: "kv_update", Params: p.Clone(), Dist: dist, Seed: uint64(100*d + bs + s),
					Dims: map[string]int{"b": s + 2, "s": s, "h": 2, "d": d, "l": 4 * bs, "bs": bs}}
				runWithinBound(ctx, b(), c)
			},
			func(p ops.Params, d, bs, s int, dist string) string {
				return caseName("%s %s d=%d bs=%d s=%d %s", p["layout"], p["cache_dtype"], d, bs, s, dist)
			},
			entries)
		DescribeTable("long sweep", Label("long"),
			func(ctx context.Context, p ops.Params, d, bs, nb, batch int) {
				skipUnlessLong()
				c := ops.Case{Op: "kv_update", Params: p.Clone(), Dist: ops.DistNormal, Seed: uint64(d*bs + nb),
					Dims: map[string]int{"b": batch, "s": batch - batch/4, "h": 2, "d": d, "l": 3 * bs, "bs": bs, "nb": nb}}
				runWithinBound(ctx, b(), c)
			},
			func(p ops.Params, d, bs, nb, batch int) string {
				return caseName("%s %s d=%d bs=%d nb=%d b=%d", p["layout"], p["cache_dtype"], d, bs, nb, batch)
			},
			Entry(nil, kvLayouts[2], 80, 16, 1100, 40),
			Entry(nil, kvLayouts[3], 256, 32, 1024, 64),
			Entry(nil, kvLayouts[0], 256, 8, 0, 60),
			Entry(nil, kvLayouts[1], 80, 16, 0, 60))
	})
}
