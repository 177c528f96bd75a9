package opdb

import (
	"fmt"

	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// SparseCompress is sparse_compress's record.
var SparseCompress = Register(&Info{
	Op:          ops.SparseCompress,
	Kernel:      kernels.SparseCompressKernel,
	Faults:      kernels.SparseCompressFaults,
	Variants:    sparseCompressVariants,
	GoldenCases: sparseCompressGolden,
	Samples:     sparseCompressSamples,
	FuzzTarget:  "FuzzSparseCompress",
	// Header bytes: h, l, d, keep_ratio step, sinks, variant; then k and v bits.
	FuzzSeeds: [][]byte{
		{2, 9, 4, 3, 2, 0, 0x00, 0x3c, 0x00, 0xbc, 0x00, 0x38},
		{1, 1, 1, 7, 0, 1, 0x00, 0x7e},
		{3, 30, 8, 1, 5, 2, 0x00, 0x7c, 0x01, 0x00, 0x00, 0x3c, 0x00, 0x3c},
	},
	FuzzDecode: sparseCompressFuzz,
})

// sparseCompressVariants: another importance order with another
// selection algorithm (may differ inside the tie band), another core
// split, and the chunked path (scores spilled to GM, radix select) forced
// at every L in chunks of 64 tokens, so that the false-alarm runs take it
// on every case, not only on the recipe past the UB; and both paths
// single-buffered (other events, as correct: the sanitizer must not flag
// them).
var sparseCompressVariants = []kernels.Variant{
	{Name: "selection-algorithm", Op: "sparse_compress", Options: kernels.SparseCompressOptions{Pairwise: true}},
	{Name: "core-split", Op: "sparse_compress", Options: kernels.SparseCompressOptions{BlockDim: 3}},
	{Name: "chunked-selection", Op: "sparse_compress", Options: kernels.SparseCompressOptions{ChunkTokens: 64}},
	{Name: "chunked-single-buffer", Op: "sparse_compress", Options: kernels.SparseCompressOptions{ChunkTokens: 48, BufferNum: 1}},
	{Name: "single-buffer", Op: "sparse_compress", Options: kernels.SparseCompressOptions{BufferNum: 1}},
}

// sparseCompressGolden: the edge and adversarial cases of the issue.
func sparseCompressGolden() []ops.Case {
	const op = "sparse_compress"
	var out []ops.Case
	add := func(name, dist string, h, l, d int, ratio, sinks string) {
		out = append(out, ops.NewCase(op, name, ops.Params{"keep_ratio": ratio, "sinks": sinks},
			map[string]int{"h": h, "l": l, "d": d}, dist, "dist:"+dist))
	}
	add("uniform_4x64x16_r0.5", ops.DistUniform, 4, 64, 16, "0.5", "2")
	add("empty_l0", ops.DistUniform, 2, 0, 8, "0.5", "2")
	add("one_token", ops.DistUniform, 2, 1, 8, "0.5", "2")
	add("keep_below_sinks", ops.DistNormal, 2, 16, 8, "0.1", "4")
	add("no_sinks", ops.DistNormal, 2, 33, 8, "0.3", "0")
	add("identity_r1", ops.DistNormal, 2, 17, 8, "1", "2")
	add("all_equal", ops.DistEqual, 2, 24, 8, "0.5", "2")
	add("last_bits", ops.DistLastBits, 3, 48, 16, "0.5", "2")
	add("ascending", ops.DistAscending, 2, 40, 8, "0.25", "2")
	add("descending", ops.DistDescending, 2, 40, 8, "0.25", "2")
	add("duplicated_rows", ops.DistDupRows, 3, 48, 8, "0.4", "2")
	add("special_nan_inf", ops.DistSpecial, 3, 40, 4, "0.5", "1")
	add("heads_past_cores", ops.DistUniform, 50, 12, 8, "0.5", "2")
	// Recipes (large, stored as hashes; docs/golden.md). longest_l: the
	// longest L of the in-UB path, 24572 tokens, whose fp32 score array
	// (8 B per token with the indices) and one row buffer fill the 192 KiB
	// UB. l_past_2e16: 70000 tokens, past 2^16 (a 16-bit index wraps), on
	// the chunked path (scores spilled to a GM workspace, radix select in
	// chunks of 6720 tokens, room left for a second score buffer: 11
	// chunks a head).
	add("longest_l", ops.DistUniform, 3, 24572, 8, "0.5", "4")
	out[len(out)-1].Recipe = true
	add("l_past_2e16", ops.DistUniform, 2, 70000, 8, "0.25", "4")
	out[len(out)-1].Recipe = true
	return out
}

// sparseCompressFuzz decodes H ≤ 6, L ≤ 80, D ≤ 16, keep_ratio i/8,
// sinks ≤ 7 and a variant; k and v take bit patterns from the rest.
func sparseCompressFuzz(data []byte) (FuzzInput, bool) {
	if len(data) < 6 {
		return FuzzInput{}, false
	}
	h, l, d := 1+int(data[0])%6, int(data[1])%81, 1+int(data[2])%16
	p, err := ops.SparseCompress.Validate(ops.Params{"keep_ratio": fmt.Sprint(float64(1+int(data[3])%8) / 8), "sinks": fmt.Sprint(int(data[4]) % 8)})
	if err != nil {
		panic(fmt.Sprintf("sparse_compress fuzz: params from a fixed table must validate: %v", err))
	}
	body := data[6:]
	in := FuzzInput{Params: p, Inputs: map[string]*tensor.Tensor{
		"k": FromBytes(tensor.Float16, body, 0, h, l, d), "v": FromBytes(tensor.Float16, body, 1, h, l, d)}}
	if vi := int(data[5]) % (1 + len(sparseCompressVariants)); vi > 0 {
		in.Variant = &sparseCompressVariants[vi-1]
	}
	return in, true
}

// sparseCompressSamples: shapes from one head of no tokens to many heads
// × keep ratios and sink counts × every distribution.
func sparseCompressSamples() []ops.Case {
	var out []ops.Case
	for _, s := range [][3]int{{1, 0, 4}, {2, 1, 4}, {2, 5, 8}, {3, 33, 16}, {50, 9, 4}} {
		for _, rs := range [][2]string{{"0.5", "2"}, {"1", "2"}, {"0.1", "4"}, {"0.3", "0"}} {
			for _, dist := range ops.SparseCompress.Dists() {
				out = append(out, sample("sparse_compress", fmt.Sprintf("%dx%dx%d keep_ratio=%s sinks=%s dist=%s", s[0], s[1], s[2], rs[0], rs[1], dist),
					ops.Params{"keep_ratio": rs[0], "sinks": rs[1]}, map[string]int{"h": s[0], "l": s[1], "d": s[2]}, dist,
					uint64(s[0]*10000+s[1]*100+s[2])))
			}
		}
	}
	return out
}
