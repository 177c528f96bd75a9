package opdb

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// TransData is transdata's record.
var TransData = Register(&Info{
	Op:            ops.TransData,
	Kernel:        kernels.TransDataKernel,
	Faults:        kernels.TransDataFaults,
	Variants:      transDataVariants,
	GoldenCases:   transDataGolden,
	Samples:       transDataSamples,
	MutationCases: transDataMutationCases,
	FuzzTarget:    "FuzzTransData",
	// Header bytes: pair, dtype, then four sizes (n or b, c or m, h or k,
	// w), cores, tile, order; then the bit patterns.
	FuzzSeeds: [][]byte{
		{0, 0, 2, 17, 3, 2, 3, 1, 0, 0x00, 0x3c, 0x00, 0xbc, 0x01, 0x7e},
		{3, 3, 1, 33, 1, 1, 0, 0, 1, 0x80, 0x7f, 0x01, 0xff},
		{5, 2, 1, 17, 33, 0, 5, 2, 1, 0x00, 0x00, 0xc0, 0x7f, 0x00, 0x00, 0x80, 0x80},
	},
	FuzzDecode: transDataFuzz,
})

// transDataVariants: another core split with small tiles dealt
// round-robin, and one core walking every tile in order (a copy is
// exact, so neither may change a bit).
var transDataVariants = []kernels.Variant{
	{Name: "tiling-cores-interleaved", Op: "transdata", Options: kernels.TransDataOptions{BlockDim: 3, TileRows: 16, Interleave: true}},
	{Name: "one-core", Op: "transdata", Options: kernels.TransDataOptions{BlockDim: 1, TileRows: 32}},
}

// transDataPair is one legal conversion with the dims a case needs.
type transDataPair struct{ src, dst string }

// transDataPairs in the fuzz decoder's order.
var transDataPairs = []transDataPair{
	{ops.FormatNCHW, ops.FormatNC1HWC0}, {ops.FormatNHWC, ops.FormatNC1HWC0},
	{ops.FormatNC1HWC0, ops.FormatNCHW}, {ops.FormatNC1HWC0, ops.FormatNHWC},
	{ops.FormatND, ops.FormatFractalNZ}, {ops.FormatFractalNZ, ops.FormatND},
}

// transDataParams are the params of a conversion with the reverse
// conversions' extents taken from dims.
func transDataParams(pr transDataPair, dtype string, dims map[string]int) ops.Params {
	p := ops.Params{"src_format": pr.src, "dst_format": pr.dst, "dtype": dtype}
	switch pr.src {
	case ops.FormatNC1HWC0:
		p["c"] = strconv.Itoa(dims["c"])
	case ops.FormatFractalNZ:
		p["m"], p["k"] = strconv.Itoa(dims["m"]), strconv.Itoa(dims["k"])
	}
	return p
}

// transDataFourD reports whether a pair is a 4-D (NCHW/NHWC) conversion.
func (pr transDataPair) fourD() bool { return pr.src != ops.FormatND && pr.src != ops.FormatFractalNZ }

// transDataGolden: the channel edges C = 1, C0 − 1, C0, C0 + 1 (fp16's
// 16, int8's 32, fp32's 8), N > 1 with padded channels (the per-batch
// stride), H·W = 1, H ≠ W everywhere else (a swap shows), both
// directions, and FRACTAL_NZ with M and K off the fractal edges, batched.
func transDataGolden() []ops.Case {
	const op = "transdata"
	var out []ops.Case
	add := func(pr transDataPair, dtype, dist string, dims map[string]int) {
		name := strings.ToLower(fmt.Sprintf("%s_to_%s_%s_%s", pr.src, pr.dst, dtype, dist))
		if pr.fourD() {
			name += fmt.Sprintf("_n%dc%dh%dw%d", dims["n"], dims["c"], dims["h"], dims["w"])
		} else {
			if b, ok := dims["b"]; ok {
				name += fmt.Sprintf("_b%d", b)
			}
			name += fmt.Sprintf("_%dx%d", dims["m"], dims["k"])
		}
		out = append(out, ops.NewCase(op, name, transDataParams(pr, dtype, dims), dims, dist, "dtype:"+dtype, "dist:"+dist))
	}
	nchw, nhwc, back, backNHWC, nz, unnz := transDataPairs[0], transDataPairs[1], transDataPairs[2], transDataPairs[3], transDataPairs[4], transDataPairs[5]
	four := func(n, c, h, w int) map[string]int { return map[string]int{"n": n, "c": c, "h": h, "w": w} }
	add(nchw, "fp16", ops.DistUniform, four(1, 1, 3, 5))
	add(nchw, "fp16", ops.DistSpecial, four(2, 15, 2, 3))
	add(nhwc, "fp16", ops.DistUniform, four(1, 16, 3, 2))
	add(nchw, "fp16", ops.DistNormal, four(2, 17, 3, 4))
	add(nhwc, "bf16", ops.DistSpecial, four(3, 20, 1, 1))
	add(nchw, "int8", ops.DistUniform, four(2, 33, 2, 3))
	add(nhwc, "int8", ops.DistUniform, four(1, 32, 2, 1))
	add(nchw, "fp32", ops.DistSpecial, four(2, 9, 1, 2))
	add(back, "fp16", ops.DistSpecial, four(2, 17, 3, 2))
	add(back, "fp32", ops.DistUniform, four(2, 8, 2, 3))
	add(backNHWC, "int8", ops.DistUniform, four(2, 31, 1, 3))
	add(backNHWC, "bf16", ops.DistNormal, four(1, 16, 1, 1))
	add(nz, "fp16", ops.DistSpecial, map[string]int{"m": 17, "k": 33})
	add(nz, "int8", ops.DistUniform, map[string]int{"b": 2, "m": 33, "k": 70})
	add(nz, "fp32", ops.DistUniform, map[string]int{"m": 16, "k": 8})
	add(unnz, "fp16", ops.DistUniform, map[string]int{"b": 2, "m": 17, "k": 33})
	add(unnz, "bf16", ops.DistSpecial, map[string]int{"m": 31, "k": 20})
	add(unnz, "int8", ops.DistNormal, map[string]int{"m": 1, "k": 1})
	// Recipes (large, stored as hashes; docs/golden.md): H·W = 3840 and M
	// = 3001 rows, past one UB tile of rows (1520: four tiles of 32-byte
	// rows in the 192 KiB UB), with more tiles than the 48 vector cores.
	add(nchw, "fp16", ops.DistUniform, four(2, 35, 64, 60))
	out[len(out)-1].Recipe = true
	add(unnz, "fp32", ops.DistUniform, map[string]int{"b": 2, "m": 3001, "k": 13})
	out[len(out)-1].Recipe = true
	return out
}

// transDataMutationCases adds shapes past one UB tile per slab (H·W and
// M past 1520 rows), where the tile loop and the core split change: the
// checked-in set keeps to small slabs and the recipes are left out of
// the mutation score.
func transDataMutationCases(npu.Profile) ([]ops.Case, error) {
	const op = "transdata"
	mk := func(name string, pr transDataPair, dtype string, dims map[string]int) ops.Case {
		c := ops.NewCase(op, name, transDataParams(pr, dtype, dims), dims, ops.DistUniform, "dtype:"+dtype, "size:multi-tile")
		c.Labels[0] = "UT"
		return c
	}
	return []ops.Case{
		mk("nchw_multi_tile", transDataPairs[0], "fp16", map[string]int{"n": 2, "c": 19, "h": 50, "w": 41}),
		mk("nz_to_nd_multi_tile", transDataPairs[5], "fp32", map[string]int{"b": 2, "m": 1601, "k": 13}),
	}, nil
}

// transDataSampleShapes are the sample sizes per family: channel and
// fractal edges, N > 1, H·W = 1.
var (
	transDataSample4D = []map[string]int{{"n": 1, "c": 1, "h": 2, "w": 3}, {"n": 2, "c": 17, "h": 3, "w": 1}, {"n": 3, "c": 32, "h": 1, "w": 1}, {"n": 2, "c": 9, "h": 5, "w": 4}}
	transDataSampleND = []map[string]int{{"m": 1, "k": 1}, {"m": 17, "k": 33}, {"b": 2, "m": 16, "k": 32}, {"b": 3, "m": 40, "k": 7}}
)

// transDataSamples: every dtype × legal pair × shape, uniform and special
// (a copy's judgement does not depend on magnitudes beyond that).
func transDataSamples() []ops.Case {
	var out []ops.Case
	for di, dtype := range []string{"fp16", "bf16", "fp32", "int8"} {
		for pi, pr := range transDataPairs {
			shapes := transDataSample4D
			if !pr.fourD() {
				shapes = transDataSampleND
			}
			for si, dims := range shapes {
				for _, dist := range []string{ops.DistUniform, ops.DistSpecial} {
					name := fmt.Sprintf("%s→%s %v dist=%s", pr.src, pr.dst, dims, dist)
					out = append(out, sample("transdata", name, transDataParams(pr, dtype, dims), dims, dist,
						uint64(1000*di+100*pi+si), "dtype:"+dtype))
				}
			}
		}
	}
	return out
}

// transDataFuzz decodes a pair, a dtype, four sizes (small: n or b ≤ 3,
// c or m ≤ 70, h or k ≤ 70, w ≤ 7), a core count, a tile height and the
// tile order; x takes its bit patterns from the rest, padding included
// (which the kernel must never read into the output).
func transDataFuzz(data []byte) (FuzzInput, bool) {
	if len(data) < 9 {
		return FuzzInput{}, false
	}
	pr := transDataPairs[int(data[0])%len(transDataPairs)]
	dtypes := []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8}
	d := dtypes[int(data[1])%len(dtypes)]
	c0 := ops.TransDataC0(d)
	a, b, c, e := int(data[2])%4, int(data[3])%71, int(data[4])%71, int(data[5])%8
	var dims map[string]int
	var shape []int
	if pr.fourD() {
		dims = map[string]int{"n": a, "c": b, "h": 1 + c%8, "w": e}
		n, ch, h, w := a, b, 1+c%8, e
		switch pr.src {
		case ops.FormatNCHW:
			shape = []int{n, ch, h, w}
		case ops.FormatNHWC:
			shape = []int{n, h, w, ch}
		default:
			shape = []int{n, (ch + c0 - 1) / c0, h, w, c0}
		}
	} else {
		dims = map[string]int{"m": b, "k": c}
		shape = []int{b, c}
		if pr.src == ops.FormatFractalNZ {
			shape = []int{(c + c0 - 1) / c0, (b + 15) / 16, 16, c0}
		}
		if a > 1 {
			shape = append([]int{a}, shape...)
		}
	}
	cores := 1 + int(data[6])%npu.Ascend910B().VectorCores
	tile := 16 * (1 + int(data[7])%4)
	return FuzzInput{
		Params:  transDataParams(pr, d.String(), dims),
		Inputs:  map[string]*tensor.Tensor{"x": FromBytes(d, data[9:], 0, shape...)},
		Variant: &kernels.Variant{Name: "fuzz", Op: "transdata", Options: kernels.TransDataOptions{BlockDim: cores, TileRows: tile, Interleave: data[8]&1 == 1}},
	}, true
}
