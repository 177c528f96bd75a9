package opdb

import (
	"fmt"

	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
)

// DecodeAttention is decode_attention's record.
var DecodeAttention = Register(&Info{
	Op:            ops.DecodeAttention,
	Kernel:        kernels.DecodeAttentionKernel,
	Faults:        kernels.DecodeAttentionFaults,
	Variants:      decodeAttentionVariants,
	GoldenCases:   decodeAttentionGolden,
	Samples:       decodeAttentionSamples,
	MutationCases: kvMutationCases("decode_attention"),
	FuzzTarget:    "FuzzDecodeAttention",
	// Header bytes: layout, cache dtype, b, s, h, d, l, bs, dist|group<<4, seed.
	FuzzSeeds: [][]byte{
		{0, 0, 6, 6, 2, 16, 40, 8, 0x10, 1},
		{1, 1, 9, 7, 1, 8, 63, 4, 0x32, 2},
		{1, 0, 3, 2, 3, 5, 16, 16, 0x21, 3},
		{0, 1, 5, 4, 2, 31, 50, 3, 0x13, 4},
	},
	FuzzDecode: kvFuzz("decode_attention"),
})

// decodeAttentionVariants: partitions of 16 positions (every golden
// context spans several, so the flash-decoding combine runs), and the
// static round-robin core schedule on 3 cores; one K/V tile buffer with
// partitions of 16 (other events, as correct, over many tiles: the
// sanitizer must not flag them).
var decodeAttentionVariants = []kernels.Variant{
	{Name: "partition-16", Op: "decode_attention", Options: kernels.DecodeAttentionOptions{PartitionLen: 16}},
	{Name: "static-schedule", Op: "decode_attention", Options: kernels.DecodeAttentionOptions{Schedule: kernels.ScheduleStatic, BlockDim: 3}},
	{Name: "single-buffer", Op: "decode_attention", Options: kernels.DecodeAttentionOptions{BufferNum: 1, PartitionLen: 16}},
}

// decodeAttentionGolden: per layout and cache dtype, GQA (Hq 8, Hkv 2)
// with uniform, peaked (scores in the hundreds) and special values, the
// lengths of the first sequences at the block edges; plain MHA at an odd
// D = 5 with block size 4; an explicit scale (0.7 per layout and cache
// dtype, 0.03 once); and, as recipes, the large sizes (kvRecipes).
func decodeAttentionGolden() []ops.Case {
	const op = "decode_attention"
	var out []ops.Case
	for _, p := range kvLayouts {
		for _, dist := range []string{ops.DistUniform, ops.DistPeaked, ops.DistSpecial} {
			dims := map[string]int{"b": 8, "s": 6, "hq": 8, "h": 2, "d": 16, "l": 40, "bs": 8}
			out = append(out, ops.NewCase(op, fmt.Sprintf("%s_%s_gqa8x2_d16", kvName(p), dist), p.Clone(), dims, dist,
				"layout:"+p["layout"], "dtype:"+p["cache_dtype"], "dist:"+dist))
		}
		dims := map[string]int{"b": 7, "s": 5, "hq": 3, "h": 3, "d": 5, "l": 12, "bs": 4}
		out = append(out, ops.NewCase(op, kvName(p)+"_normal_mha_d5", p.Clone(), dims, ops.DistNormal,
			"layout:"+p["layout"], "dtype:"+p["cache_dtype"], "size:odd"))
		// An explicit score scale, far from the default 1/√D = 0.25 (a
		// kernel that ignores it fails): sharper scores on normal inputs.
		sp := p.Clone()
		sp["scale"] = "0.7"
		dims = map[string]int{"b": 6, "s": 5, "hq": 4, "h": 2, "d": 16, "l": 24, "bs": 8}
		out = append(out, ops.NewCase(op, kvName(p)+"_normal_gqa4x2_d16_scale0.7", sp, dims, ops.DistNormal,
			"layout:"+p["layout"], "dtype:"+p["cache_dtype"], "param:scale"))
	}
	// A small scale, nearly uniform attention weights, with a D whose
	// 1/√D is no power of two.
	sp := ops.Params{"layout": ops.KVPaged, "cache_dtype": ops.KVFP16, "scale": "0.03"}
	out = append(out, ops.NewCase(op, "paged_fp16_uniform_mha_d8_scale0.03", sp,
		map[string]int{"b": 5, "s": 4, "hq": 2, "h": 2, "d": 8, "l": 16, "bs": 4}, ops.DistUniform,
		"layout:paged", "dtype:fp16", "param:scale"))
	return append(out, kvRecipes(op)...)
}

// decodeAttentionSamples: every layout × head size × block size with
// uniform inputs and grouped-query heads, peaked and special values per
// layout, and a long sweep of long contexts.
func decodeAttentionSamples() []ops.Case {
	const op = "decode_attention"
	var out []ops.Case
	for _, p := range kvLayouts {
		add := func(d, bs, hq, hkv int, dist string) {
			out = append(out, sample(op, kvSampleName(p, "d=%d bs=%d gqa=(%d,%d) %s", d, bs, hq, hkv, dist), p.Clone(),
				map[string]int{"b": 7, "s": 5, "hq": hq, "h": hkv, "d": d, "l": 3 * bs, "bs": bs}, dist, uint64(100*d+bs+hq)))
		}
		for _, d := range []int{64, 128} {
			for _, bs := range []int{8, 16, 32} {
				add(d, bs, 32, 4, ops.DistUniform)
			}
		}
		add(16, 8, 4, 4, ops.DistPeaked)
		add(16, 16, 6, 2, ops.DistSpecial)
	}
	for _, l := range []struct {
		p                   ops.Params
		d, bs, hq, hkv, len int
	}{{kvLayouts[0], 80, 16, 40, 40, 200}, {kvLayouts[2], 128, 16, 64, 8, 400}, {kvLayouts[3], 256, 32, 32, 4, 300}, {kvLayouts[1], 128, 8, 32, 4, 1024}} {
		out = append(out, sample(op, kvSampleName(l.p, "d=%d bs=%d gqa=(%d,%d) l=%d", l.d, l.bs, l.hq, l.hkv, l.len), l.p.Clone(),
			map[string]int{"b": 30, "s": 24, "hq": l.hq, "h": l.hkv, "d": l.d, "l": l.len, "bs": l.bs},
			ops.DistNormal, uint64(l.d*l.bs+l.hq+l.len), LabelLong))
	}
	return out
}
