package opdb

import (
	"fmt"

	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// GEMM24 is gemm24's record.
var GEMM24 = Register(&Info{
	Op:            ops.GEMM24,
	Kernel:        kernels.GEMM24Kernel,
	Faults:        kernels.GEMM24Faults,
	Variants:      gemm24Variants,
	GoldenCases:   gemm24Golden,
	Samples:       gemm24Samples,
	MutationCases: gemm24MutationCases,
	FuzzTarget:    "FuzzSparseGEMM24",
	// Header bytes: mode, accumulate, m, k/4, n, numerics; then the meta
	// bytes (any byte: malformed ones are replaced) and element bits.
	FuzzSeeds: [][]byte{
		{0, 0, 3, 5, 4, 0, 0x04, 0x08, 0x0c, 0x09, 0x0d, 0x0e, 0x00, 0x3c, 0x00, 0xbc},
		{1, 1, 17, 9, 16, 0, 0xff, 0x01, 0x7f, 0x80, 0x02},
		{0, 1, 2, 12, 2, 1, 0x0e, 0x00, 0x7c, 0xff, 0x7b, 0x01, 0x00},
	},
	FuzzDecode: gemm24Fuzz,
})

// gemm24Variants: gemm's other tiling and core count (16×16 output
// blocks on 5 AI cores); every output is still accumulated over the kept
// k ascending by one core.
var gemm24Variants = []kernels.Variant{
	{Name: "tiling-cores", Op: "gemm24", Options: kernels.GEMM24Options{BaseM: 16, BaseN: 16, BlockDim: 5}},
	{Name: "single-buffer", Op: "gemm24", Options: kernels.GEMM24Options{BufferNum: 1}},
}

// gemm24Golden: per mode, a shape off every fractal edge under both
// accumulate models, special and large values, and a long K; in fp16,
// isolated infinities in b at pruned positions; names are
// <mode>_<dist>_<M>x<K>x<N>_<accumulate>; and b and out in FRACTAL_NZ.
func gemm24Golden() []ops.Case {
	const op = "gemm24"
	var out []ops.Case
	for _, mode := range []string{"fp16_fp32acc", "int8_int32acc"} {
		add := func(dist string, m, k, n int, acc string) {
			name := fmt.Sprintf("%s_%s_%dx%dx%d_%s", mode, dist, m, k, n, acc)
			out = append(out, ops.NewCase(op, name, ops.Params{"mode": mode, "accumulate": acc},
				map[string]int{"m": m, "k": k, "n": n}, dist, "mode:"+mode, "dist:"+dist))
		}
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			add(ops.DistUniform, 33, 52, 17, acc)
		}
		add(ops.DistSpecial, 16, 64, 16, ops.GEMMSequential)
		add(ops.DistLarge, 16, 64, 16, ops.GEMMSequential)
		add(ops.DistNormal, 8, 4, 3, ops.GEMMSequential)
		if mode == "fp16_fp32acc" {
			// A few isolated ±Inf in b at pruned k: finite outputs where a
			// dense product of the decompressed matrix gives NaN.
			add(ops.DistPrunedInf, 16, 64, 16, ops.GEMMSequential)
		}
		add(ops.DistUniform, 16, 512, 16, ops.GEMMBlocked16)
		// b and out in FRACTAL_NZ, N = 17 (two fractal columns of fp16,
		// one of int8's 32), m = 33, k = 52: a remainder in every fractal.
		out = append(out, ops.NewCase(op, mode+"_nz-bo_33x52x17_sequential",
			ops.Params{"mode": mode, "accumulate": ops.GEMMSequential, "format_b": ops.FormatFractalNZ, "format_out": ops.FormatFractalNZ, "n": "17"},
			map[string]int{"m": 33, "k": 52, "n": 17}, ops.DistUniform, "mode:"+mode, "dist:"+ops.DistUniform, "layout:FRACTAL_NZ"))
		// Recipes (large, stored as hashes; docs/golden.md): K in the
		// thousands, and m ≥ 1024, with a remainder in every dimension.
		add(ops.DistUniform, 17, 4100, 33, ops.GEMMSequential)
		out[len(out)-1].Recipe = true
		add(ops.DistUniform, 1025, 132, 47, ops.GEMMBlocked16)
		out[len(out)-1].Recipe = true
	}
	return out
}

// gemm24Fuzz decodes a mode, an accumulate model, M ≤ 24, K = 4·(0…31),
// N ≤ 24 and the numerics; meta bytes come from the body (each reduced to
// one of the six valid pairs) and the operands take their bit patterns
// from the rest.
func gemm24Fuzz(data []byte) (FuzzInput, bool) {
	if len(data) < 6 {
		return FuzzInput{}, false
	}
	modes := []string{"fp16_fp32acc", "int8_int32acc"}
	p, err := ops.GEMM24.Validate(ops.Params{"mode": modes[data[0]%2], "accumulate": []string{ops.GEMMSequential, ops.GEMMBlocked16}[data[1]%2]})
	if err != nil {
		panic(fmt.Sprintf("gemm24 fuzz: params from a fixed table must validate: %v", err))
	}
	cfg, _ := ops.ParseGEMM24(p)
	m, k, n := 1+int(data[2])%24, 4*(int(data[3])%32), 1+int(data[4])%24
	num := tensor.Numerics{Overflow: tensor.Overflow(data[5] & 1), Subnormals: tensor.Subnormals(data[5] >> 1 & 1)}
	body := data[6:]
	meta := FromBytes(tensor.Uint8, body, 0, m, k/4)
	pairs := [][2]int{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}
	for i, b := range meta.U8() {
		if _, _, ok := ops.DecodeMeta24(b); !ok {
			pr := pairs[int(b)%len(pairs)]
			meta.U8()[i] = ops.EncodeMeta24(pr[0], pr[1])
		}
	}
	in := map[string]*tensor.Tensor{
		"a_values": FromBytes(cfg.Mode.In, body, 1, m, k/2),
		"a_meta":   meta,
		"b":        FromBytes(cfg.Mode.In, body, 2, k, n),
	}
	if cfg.Mode.Int8() {
		in["scale_a"], in["scale_b"] = FromBytes(tensor.Float32, body, 3, m), FromBytes(tensor.Float32, body, 4, 1)
	}
	return FuzzInput{Params: p, Inputs: in, Numerics: num}, true
}

// gemm24Samples: every mode × shape × N ∈ {1, 17} × distribution with
// the sequential model, and blocked16 for uniform inputs.
func gemm24Samples() []ops.Case {
	var out []ops.Case
	for _, mode := range []string{"fp16_fp32acc", "int8_int32acc"} {
		for _, s := range Sparse24Shapes {
			for _, n := range []int{1, 17} {
				add := func(dist, acc string) {
					out = append(out, sample("gemm24", fmt.Sprintf("%dx%dx%d dist=%s accumulate=%s", s[0], s[1], n, dist, acc),
						ops.Params{"mode": mode, "accumulate": acc}, map[string]int{"m": s[0], "k": s[1], "n": n}, dist,
						uint64(s[0]*1_000_000+s[1]*1000+n), "mode:"+mode))
				}
				for _, dist := range ops.GEMM24.Dists() {
					add(dist, ops.GEMMSequential)
				}
				add(ops.DistUniform, ops.GEMMBlocked16)
			}
		}
	}
	return out
}
