package opdb

import (
	"fmt"

	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// GEMM is gemm's record.
var GEMM = Register(&Info{
	Op:            ops.GEMM,
	Kernel:        kernels.GEMMKernel,
	Faults:        kernels.GEMMFaults,
	Variants:      gemmVariants,
	GoldenCases:   gemmGolden,
	Samples:       gemmSamples,
	MutationCases: gemmMutationCases,
	FuzzTarget:    "FuzzGEMM",
	// Header bytes: mode, accumulate, alpha/beta pair, m, k, n, numerics;
	// then the element bit patterns.
	FuzzSeeds: [][]byte{
		{1, 0, 0, 3, 17, 5, 0, 0x3c, 0x00, 0xbc, 0x00, 0x7c, 0x00},
		{2, 1, 2, 1, 40, 1, 1, 0x7b, 0xff, 0x7b, 0xff, 0x7b, 0xff, 0xfb, 0xff},
		{4, 0, 3, 16, 33, 16, 0, 0x80, 0x7f, 0x01, 0xff, 0x3c, 0x00, 0x00, 0x80},
		{0, 1, 1, 2, 2, 2, 2, 0x7f, 0x80, 0x00, 0x00, 0xff, 0x80, 0x00, 0x01},
		{3, 0, 2, 5, 7, 3, 3, 0x7f, 0x7f, 0x00, 0x01, 0xc0, 0x00},
	},
	FuzzDecode: gemmFuzz,
})

// gemmVariants are the valid gemm kernels the default checks must accept:
// another summation order (K accumulated in descending order, panels and
// slices, in slices of 32, so every output sums its products in another
// order than the default's and its bits may differ) and another tiling
// and core count (16×16 output blocks on 5 AI cores), and the
// single-buffered kernel (one L1 and one L0 slot: its explicit events must
// satisfy the sanitizer too), and B's panels kept resident in L1 across a
// core's block columns on the tiling-cores layout (where the default
// tiling keeps A's; the resident panels' events too).
var gemmVariants = []kernels.Variant{
	{Name: "summation-order", Op: "gemm", Options: kernels.GEMMOptions{BaseK: 32, ReverseK: true}},
	{Name: "tiling-cores", Op: "gemm", Options: kernels.GEMMOptions{BaseM: 16, BaseN: 16, BlockDim: 5}},
	{Name: "single-buffer", Op: "gemm", Options: kernels.GEMMOptions{BufferNum: 1}},
	{Name: "l1-reuse-b", Op: "gemm", Options: kernels.GEMMOptions{BaseM: 16, BaseN: 16, BlockDim: 5, Reuse: kernels.ReuseB}},
}

// gemmGolden is the default gemm set, per mode:
//
//   - 33×47×17 uniform (every dimension off the 16/32 fractal) under both
//     accumulate models;
//   - alpha = −1.5, beta = 0.25 with a C term on 17×33×15;
//   - special values (±0, ±inf, NaN, subnormals, max) and large
//     magnitudes (overflow, overflow-ambiguous fp16 accumulation) on
//     16×16×16, cancellation on 8×64×8;
//   - a long K (16×512×16) where accumulation error dominates;
//   - special values again under the saturate numerics profile;
//   - operands in FRACTAL_NZ (gemmNZLayouts: a different mix of NZ
//     operands per mode, the extents m, k, n set, none a multiple of 16),
//     on 33×47×17 uniform, and for fp32 and int8 with a C term (c in the
//     layout of out);
//   - as recipes (large, stored as hashes): K = 4097 on 17×33, m = 1025
//     under blocked16, and, for some modes, more output tiles than twice
//     the cores (gemmTilesShape).
//
// Names are <mode>_<what>_<M>x<K>x<N>[_<accumulate>][_sat].
func gemmGolden() []ops.Case {
	const op = "gemm"
	var out []ops.Case
	for _, mode := range ops.GEMMModes() {
		add := func(what string, dims [3]int, dist string, params ops.Params, sat bool) {
			p := ops.Params{"mode": mode.Name}
			for k, v := range params {
				p[k] = v
			}
			name := fmt.Sprintf("%s_%s_%dx%dx%d", mode.Name, what, dims[0], dims[1], dims[2])
			if acc := p["accumulate"]; acc != "" {
				name += "_" + acc
			}
			labels := []string{"mode:" + mode.Name, "dtype:" + mode.In.String(), "dist:" + dist}
			if sat {
				name += "_sat"
				labels = append(labels, "numerics:saturate")
			}
			c := ops.NewCase(op, name, p, map[string]int{"m": dims[0], "k": dims[1], "n": dims[2]}, dist, labels...)
			if sat {
				num := saturate
				c.Numerics = &num
			}
			out = append(out, c)
		}
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			add("uniform", [3]int{33, 47, 17}, ops.DistUniform, ops.Params{"accumulate": acc}, false)
		}
		add("alphabeta", [3]int{17, 33, 15}, ops.DistNormal, ops.Params{"alpha": "-1.5", "beta": "0.25"}, false)
		add("special", [3]int{16, 16, 16}, ops.DistSpecial, nil, false)
		add("large", [3]int{16, 16, 16}, ops.DistLarge, nil, false)
		add("cancel", [3]int{8, 64, 8}, ops.DistCancel, nil, false)
		add("longk", [3]int{16, 512, 16}, ops.DistUniform, nil, false)
		add("special", [3]int{16, 16, 16}, ops.DistSpecial, nil, true)
		lay := gemmNZLayouts[mode.Name]
		nz := ops.Params{"format_a": lay[0], "format_b": lay[1], "format_out": lay[2], "m": "33", "k": "47", "n": "17"}
		if mode.Name == "fp32" || mode.Int8() {
			nz["beta"] = "0.5"
		}
		add("nz-"+gemmNZTag(lay), [3]int{33, 47, 17}, ops.DistUniform, nz, false)
		// The large classes, as recipes (docs/golden.md): K in the
		// thousands, and m ≥ 1024 under blocked16, every dimension one past
		// a multiple of 16 or 32 (a remainder in every tile and K slice).
		add("deepk", [3]int{17, 4097, 33}, ops.DistUniform, nil, false)
		out[len(out)-1].Recipe = true
		// K in the thousands is where a kernel can lose precision
		// systematically and stay inside γ_K·S (a split-K path keeping its
		// partial sums in a 16-bit workspace, say): deepk is judged by
		// ascend-dual, the bound plus the dual benchmark against the
		// emulator's error statistics (GEMMDualPolicy).
		out[len(out)-1].Policy = GEMMDualPolicy
		add("tall", [3]int{1025, 67, 47}, ops.DistUniform, ops.Params{"accumulate": ops.GEMMBlocked16}, false)
		out[len(out)-1].Recipe = true
		if gemmTilesModes[mode.Name] {
			add("tiles", gemmTilesShape, ops.DistUniform, ops.Params{"accumulate": ops.GEMMBlocked16}, false)
			out[len(out)-1].Recipe = true
		}
	}
	return out
}

// gemmNZLayouts are the formats of a, b and out of each mode's NZ golden
// case: between them every operand is NZ and ND somewhere, and every mode
// has an NZ operand.
var gemmNZLayouts = map[string][3]string{
	"fp32":          {ops.FormatFractalNZ, ops.FormatND, ops.FormatFractalNZ},
	"fp16_fp32acc":  {ops.FormatFractalNZ, ops.FormatFractalNZ, ops.FormatFractalNZ},
	"fp16":          {ops.FormatND, ops.FormatFractalNZ, ops.FormatND},
	"bf16_fp32acc":  {ops.FormatFractalNZ, ops.FormatFractalNZ, ops.FormatND},
	"int8_int32acc": {ops.FormatND, ops.FormatFractalNZ, ops.FormatFractalNZ},
}

// gemmNZTag names the NZ operands of a layout: a, b, o (out) in order.
func gemmNZTag(lay [3]string) string {
	tag := ""
	for i, f := range lay {
		if f == ops.FormatFractalNZ {
			tag += string("abo"[i])
		}
	}
	return tag
}

// GEMMDualPolicy is the policy of the deepk cases. The dual benchmark is
// sound there and only there among the default cases: the emulator sums
// K in the contract's sequential order, the least accurate order a kernel
// would use, so a valid kernel of any order (the C kernel's four lanes,
// the reversed-K and other-tiling variants) has error statistics no worse
// than twice the emulator's, while on a blocked16 case (the emulator sums
// in blocks of 16, more accurately than a sequential kernel) or on
// cancellation and saturated special values (a few elements near zero
// dominate MERE) a valid kernel can exceed them. TestDualCasesAcceptValid
// (package golden's external test) holds the C kernel and every variant
// to it.
const GEMMDualPolicy = "ascend-dual"

// gemmTilesShape has more output tiles than twice the AI cores (72 base
// blocks of 144×176, or 70 of 112×224 for int8, on ascend910b's 24 cores:
// the tiler picks the largest blocks L0C holds, so this takes about 1.5 M
// outputs), n ≥ 1024 and a remainder in every dimension: each core loops
// over three output tiles. Its reference, bound and metrics cost 1.5–2 s
// per mode in every default check, so it is recorded for two modes, the
// default one and int8, whose 16×32 fractal tiles differently
// (gemmTilesModes): the tile loop does not depend on the mode otherwise.
var gemmTilesShape = [3]int{513, 17, 3073}

var gemmTilesModes = map[string]bool{"fp16_fp32acc": true, "int8_int32acc": true}

var gemmFuzzAlphaBeta = [][2]string{{"1", "0"}, {"0.5", "0"}, {"-1.25", "1"}, {"3", "-0.5"}}

// gemmFuzz decodes a mode, an accumulate model, an alpha/beta pair, a
// small M×K×N (K may be 0) and the numerics (overflow, subnormals); the
// operands take their bit patterns (Inf, NaN and subnormals included)
// from the rest.
func gemmFuzz(data []byte) (FuzzInput, bool) {
	if len(data) < 7 {
		return FuzzInput{}, false
	}
	mode := ops.GEMMModes()[int(data[0])%len(ops.GEMMModes())]
	ab := gemmFuzzAlphaBeta[int(data[2])%len(gemmFuzzAlphaBeta)]
	p, err := ops.GEMM.Validate(ops.Params{"mode": mode.Name, "accumulate": []string{ops.GEMMSequential, ops.GEMMBlocked16}[data[1]%2],
		"alpha": ab[0], "beta": ab[1]})
	if err != nil {
		panic(fmt.Sprintf("gemm fuzz: params from a fixed table must validate: %v", err))
	}
	m, k, n := 1+int(data[3])%20, int(data[4])%70, 1+int(data[5])%20
	num := tensor.Numerics{Overflow: tensor.Overflow(data[6] & 1), Subnormals: tensor.Subnormals(data[6] >> 1 & 1)}
	body := data[7:]
	in := map[string]*tensor.Tensor{"a": FromBytes(mode.In, body, 0, m, k), "b": FromBytes(mode.In, body, 1, k, n)}
	if ab[1] != "0" {
		in["c"] = FromBytes(mode.Out, body, 2, m, n)
	}
	if mode.Int8() {
		in["scale_a"], in["scale_b"] = FromBytes(tensor.Float32, body, 3, m), FromBytes(tensor.Float32, body, 4, 1)
	}
	return FuzzInput{Params: p, Inputs: in, Numerics: num}, true
}

// GEMMShapes are the M×K×N shapes gemm's samples cover: ones, the 16 and
// 32 fractal edges ±1, shapes prime to every tile, and one long side.
var GEMMShapes = [][3]int{
	{1, 1, 1}, {1, 257, 1}, {33, 1, 17},
	{15, 15, 15}, {16, 16, 16}, {17, 17, 17},
	{31, 31, 31}, {32, 32, 32}, {33, 33, 33},
	{7, 13, 11}, {37, 41, 43},
	{4096, 16, 16}, {3, 4096, 5},
}

// gemmScalars are the (alpha, beta) pairs of gemm's samples.
var gemmScalars = [][2]string{{"1", "0"}, {"0.5", "0"}, {"1", "1"}, {"-1.5", "0.25"}}

// gemmSamples: every mode × shape × (alpha, beta) × distribution, with
// the sequential accumulate model, and blocked16 for uniform inputs; the
// large shapes with uniform values and alpha 1, beta 0 only.
func gemmSamples() []ops.Case {
	var out []ops.Case
	for _, mode := range ops.GEMMModes() {
		for _, s := range GEMMShapes {
			for _, ab := range gemmScalars {
				for _, dist := range []string{ops.DistUniform, ops.DistNormal, ops.DistCancel, ops.DistLarge, ops.DistSpecial} {
					if s[0]*s[1]*s[2] > 1<<16 && (dist != ops.DistUniform || ab != gemmScalars[0]) {
						continue
					}
					accs := []string{ops.GEMMSequential}
					if dist == ops.DistUniform {
						accs = append(accs, ops.GEMMBlocked16)
					}
					for _, acc := range accs {
						out = append(out, sample("gemm",
							fmt.Sprintf("%dx%dx%d alpha=%s beta=%s dist=%s accumulate=%s", s[0], s[1], s[2], ab[0], ab[1], dist, acc),
							ops.Params{"mode": mode.Name, "alpha": ab[0], "beta": ab[1], "accumulate": acc},
							map[string]int{"m": s[0], "k": s[1], "n": s[2]}, dist, uint64(s[0]*1_000_000+s[1]*1000+s[2]),
							"mode:"+mode.Name, "dtype:"+mode.In.String()))
					}
				}
			}
		}
	}
	return out
}
