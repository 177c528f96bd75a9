package opdb

import (
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
)

// KVUpdate is kv_update's record.
var KVUpdate = Register(&Info{
	Op:            ops.KVUpdate,
	Kernel:        kernels.KVUpdateKernel,
	Faults:        kernels.KVUpdateFaults,
	Variants:      kvUpdateVariants,
	GoldenCases:   kvUpdateGolden,
	Samples:       kvUpdateSamples,
	MutationCases: kvMutationCases("kv_update"),
	FuzzTarget:    "FuzzKVUpdate",
	// Header bytes: layout, cache dtype, b, s, h, d, l, bs, dist, seed.
	FuzzSeeds: [][]byte{
		{0, 0, 6, 6, 2, 16, 40, 8, 0, 1},
		{1, 1, 9, 7, 1, 8, 33, 4, 2, 2},
		{1, 0, 3, 2, 3, 5, 16, 16, 1, 3},
		{0, 1, 0, 1, 1, 1, 1, 1, 0, 4},
	},
	FuzzDecode: kvFuzz("kv_update"),
})

// kvUpdateVariants: every batch entry on one core (another schedule), and
// on three; single-buffered (one x row, weight panel and output row: other
// events, as correct, which the sanitizer must not flag).
var kvUpdateVariants = []kernels.Variant{
	{Name: "one-core", Op: "kv_update", Options: kernels.KVUpdateOptions{BlockDim: 1}},
	{Name: "three-cores", Op: "kv_update", Options: kernels.KVUpdateOptions{BlockDim: 3}},
	{Name: "single-buffer", Op: "kv_update", Options: kernels.KVUpdateOptions{BufferNum: 1}},
}

// kvLayouts are the four (layout, cache dtype) pairs.
var kvLayouts = []ops.Params{
	{"layout": ops.KVContiguous, "cache_dtype": ops.KVFP16},
	{"layout": ops.KVContiguous, "cache_dtype": ops.KVInt8},
	{"layout": ops.KVPaged, "cache_dtype": ops.KVFP16},
	{"layout": ops.KVPaged, "cache_dtype": ops.KVInt8},
}

// kvName is <layout>_<cache_dtype>.
func kvName(p ops.Params) string { return p["layout"] + "_" + p["cache_dtype"] }

// kvUpdateGolden: per layout and cache dtype, uniform and special values
// at b = s+2 (every sequence, two padding entries: block-multiple, empty,
// full, ±1 around a block boundary lengths), D = 16 and an odd D = 5 with
// block size 4; for the int8 cache, rounding ties of the quantiser; and,
// as recipes, the large sizes (kvRecipes).
func kvUpdateGolden() []ops.Case {
	const op = "kv_update"
	var out []ops.Case
	for _, p := range kvLayouts {
		for _, dist := range []string{ops.DistUniform, ops.DistSpecial} {
			dims := map[string]int{"b": 8, "s": 6, "h": 2, "d": 16, "l": 40, "bs": 8}
			out = append(out, ops.NewCase(op, fmt.Sprintf("%s_%s_d16", kvName(p), dist), p.Clone(), dims, dist,
				"layout:"+p["layout"], "dtype:"+p["cache_dtype"], "dist:"+dist))
		}
		dims := map[string]int{"b": 7, "s": 5, "h": 3, "d": 5, "l": 12, "bs": 4}
		out = append(out, ops.NewCase(op, kvName(p)+"_normal_d5", p.Clone(), dims, ops.DistNormal,
			"layout:"+p["layout"], "dtype:"+p["cache_dtype"], "size:odd"))
		if p["cache_dtype"] == ops.KVInt8 {
			// Rounding ties of the int8 quantiser, exact and double-rounding
			// ones (ops.DistTies): a half-away quantiser fails these.
			dims := map[string]int{"b": 8, "s": 6, "h": 2, "d": 16, "l": 40, "bs": 8}
			out = append(out, ops.NewCase(op, kvName(p)+"_ties_d16", p.Clone(), dims, ops.DistTies,
				"layout:"+p["layout"], "dtype:"+p["cache_dtype"], "dist:"+ops.DistTies))
		}
	}
	return append(out, kvRecipes(op)...)
}

// kvRecipes are the large sizes of the default set, stored as golden
// recipes (case.json with hashes, no .npy; docs/golden.md), taken from
// kvMutationCases and labelled ST: a paged cache of 2^17 one-slot blocks
// (page ids past 2^16; 2^21 elements in each cache, megabytes as files),
// with an fp16 cache for kv_update and an int8 one for decode_attention
// (the page walk is the same for both dtypes, and each such case costs a
// few tenths of a second in every default check), and, for
// decode_attention, every layout with a context longer than one UB
// partition.
func kvRecipes(op string) []ops.Case {
	cs, err := kvMutationCases(op)(npu.Ascend910B())
	if err != nil {
		panic(err) // the default profile's partition is a package invariant
	}
	skip := "paged_" + ops.KVInt8 + "_nb131072"
	if op == "decode_attention" {
		skip = "paged_" + ops.KVFP16 + "_nb131072"
	}
	var out []ops.Case
	for _, c := range cs {
		if c.Name == skip {
			continue
		}
		c.Labels[0], c.Recipe = "ST", true
		out = append(out, c)
	}
	return out
}

// kvMutationCases adds the sizes the golden set is too small for: a paged
// cache of 2^17 one-slot blocks (page ids past 2^16), and for
// decode_attention contexts longer than one UB partition.
func kvMutationCases(op string) func(npu.Profile) ([]ops.Case, error) {
	return func(prof npu.Profile) ([]ops.Case, error) {
		var out []ops.Case
		for _, dt := range []string{ops.KVFP16, ops.KVInt8} {
			p := ops.Params{"layout": ops.KVPaged, "cache_dtype": dt}
			dims := map[string]int{"b": 6, "s": 4, "h": 1, "d": 16, "l": 64, "bs": 1, "nb": 1 << 17}
			if op == "decode_attention" {
				dims["hq"] = 2
			}
			c := ops.NewCase(op, "paged_"+dt+"_nb131072", p, dims, ops.DistUniform, "size:pages-past-2^16")
			c.Labels[0] = "UT"
			out = append(out, c)
		}
		if op != "decode_attention" {
			return out, nil
		}
		part := kernels.DecodePartitionLen(prof, 128)
		for _, p := range kvLayouts {
			dims := map[string]int{"b": 3, "s": 3, "hq": 2, "h": 1, "d": 128, "l": 2*part + 40, "bs": 16}
			c := ops.NewCase(op, kvName(p)+"_long", p.Clone(), dims, ops.DistNormal, "size:multi-partition")
			c.Labels[0] = "UT"
			out = append(out, c)
		}
		return out, nil
	}
}

// kvFuzz decodes the header bytes into params, sizes, a distribution and
// a seed and generates the inputs with the op's own generator: the fuzzer
// explores geometry (odd D, block sizes, padding, GQA groups), the seed
// the values.
func kvFuzz(op string) func([]byte) (FuzzInput, bool) {
	return func(data []byte) (FuzzInput, bool) {
		if len(data) < 10 {
			return FuzzInput{}, false
		}
		p := kvLayouts[int(data[0]%2)*2+int(data[1]%2)].Clone()
		o, err := ops.Lookup(op)
		if err != nil {
			return FuzzInput{}, false
		}
		dims := map[string]int{
			"b": int(data[2] % 12), "s": 1 + int(data[3]%8), "h": 1 + int(data[4]%3), "d": 1 + int(data[5]%40),
			"l": 1 + int(data[6]%64), "bs": 1 + int(data[7]%16),
		}
		if op == "decode_attention" {
			dims["hq"] = dims["h"] * (1 + int(data[8]>>4)%4)
		}
		dists := o.Dists()
		dist := dists[int(data[8]%16)%len(dists)]
		seed := uint64(data[9])
		for _, b := range data[10:] {
			seed = seed*131 + uint64(b)
		}
		vp, err := o.Validate(p)
		if err != nil {
			return FuzzInput{}, false
		}
		in, err := o.Generate(vp, ops.Gen{Dims: dims, Dist: dist, Seed: seed})
		if err != nil {
			return FuzzInput{}, false
		}
		return FuzzInput{Params: vp, Inputs: in}, true
	}
}

// kvSampleName names a KV sample by its layout, cache dtype and sizes.
func kvSampleName(p ops.Params, format string, args ...any) string {
	return fmt.Sprintf("%s %s ", p["layout"], p["cache_dtype"]) + fmt.Sprintf(format, args...)
}

// kvUpdateSamples: every layout × head size × block size with uniform
// inputs, special values per layout, and a long sweep of large caches
// (many blocks, long batches).
func kvUpdateSamples() []ops.Case {
	const op = "kv_update"
	var out []ops.Case
	for _, p := range kvLayouts {
		add := func(d, bs, s int, dist string) {
			out = append(out, sample(op, kvSampleName(p, "d=%d bs=%d s=%d %s", d, bs, s, dist), p.Clone(),
				map[string]int{"b": s + 2, "s": s, "h": 2, "d": d, "l": 4 * bs, "bs": bs}, dist, uint64(100*d+bs+s)))
		}
		for _, d := range []int{64, 128} {
			for _, bs := range []int{8, 16, 32} {
				add(d, bs, 6, ops.DistUniform)
			}
		}
		add(16, 8, 9, ops.DistSpecial)
	}
	for _, l := range []struct {
		p                ops.Params
		d, bs, nb, batch int
	}{{kvLayouts[2], 80, 16, 1100, 40}, {kvLayouts[3], 256, 32, 1024, 64}, {kvLayouts[0], 256, 8, 0, 60}, {kvLayouts[1], 80, 16, 0, 60}} {
		out = append(out, sample(op, kvSampleName(l.p, "d=%d bs=%d nb=%d b=%d", l.d, l.bs, l.nb, l.batch), l.p.Clone(),
			map[string]int{"b": l.batch, "s": l.batch - l.batch/4, "h": 2, "d": l.d, "l": 3 * l.bs, "bs": l.bs, "nb": l.nb},
			ops.DistNormal, uint64(l.d*l.bs+l.nb), LabelLong))
	}
	return out
}
