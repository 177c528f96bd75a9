package suites

import (
	"context"

	"github.com/npuverify/npuverify/ops"
	. "github.com/onsi/ginkgo/v2"
)

var _ = registerOp("decode_attention", DescribeDecodeAttention)

// DescribeDecodeAttention declares the decode_attention UT specs against
// b: every layout and cache dtype × head size 64, 128 × block size 8, 16,
// 32 with GQA (32, 4), the generator's block-edge lengths, padding and
// empty sequences, NaN past every seq_len; plus peaked and special values
// and plain MHA. The long sweep (label long) adds head sizes 80 and 256,
// GQA (40, 40) and (64, 8), and contexts over several UB partitions.
func DescribeDecodeAttention(b Backend) bool {
	return Describe("decode_attention", Label("UT", "op:decode_attention"), func() {
		var entries []TableEntry
		for _, p := range kvLayouts {
			for _, d := range []int{64, 128} {
				for _, bs := range []int{8, 16, 32} {
					entries = append(entries, Entry(nil, p, d, bs, 32, 4, ops.DistUniform))
				}
			}
			entries = append(entries,
				Entry(nil, p, 16, 8, 4, 4, ops.DistPeaked),
				Entry(nil, p, 16, 16, 6, 2, ops.DistSpecial))
		}
		DescribeTable("is within bound and never reads past seq_len",
			func(ctx context.Context, p ops.Params, d, bs, hq, hkv int, dist string) {
				c := ops.Case{Op: "decode_attention", Params: p.Clone(), Dist: dist, Seed: uint64(100*d + bs + hq),
					Dims: map[string]int{"b": 7, "s": 5, "hq": hq, "h": hkv, "d": d, "l": 3 * bs, "bs": bs}}
				runWithinBound(ctx, b(), c)
			},
			func(p ops.Params, d, bs, hq, hkv int, dist string) string {
				return caseName("%s %s d=%d bs=%d gqa=(%d,%d) %s", p["layout"], p["cache_dtype"], d, bs, hq, hkv, dist)
			},
			entries)
		DescribeTable("long sweep", Label("long"),
			func(ctx context.Context, p ops.Params, d, bs, hq, hkv, l int) {
				skipUnlessLong()
				c := ops.Case{Op: "decode_attention", Params: p.Clone(), Dist: ops.DistNormal, Seed: uint64(d*bs + hq + l),
					Dims: map[string]int{"b": 30, "s": 24, "hq": hq, "h": hkv, "d": d, "l": l, "bs": bs}}
				runWithinBound(ctx, b(), c)
			},
			func(p ops.Params, d, bs, hq, hkv, l int) string {
				return caseName("%s %s d=%d bs=%d gqa=(%d,%d) l=%d", p["layout"], p["cache_dtype"], d, bs, hq, hkv, l)
			},
			Entry(nil, kvLayouts[0], 80, 16, 40, 40, 200),
			Entry(nil, kvLayouts[2], 128, 16, 64, 8, 400),
			Entry(nil, kvLayouts[3], 256, 32, 32, 4, 300),
			Entry(nil, kvLayouts[1], 128, 8, 32, 4, 1024))
	})
}
