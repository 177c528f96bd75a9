package opdb

import (
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Sample labels. A sample case carries the group it is reported under
// (its first "mode:" label, else its first "dtype:" label) and, when it is
// part of the long sweep, LabelLong.
const (
	// LabelLong marks a sample of the long sweep: larger shapes the
	// default run leaves out (suites run them with NPUVERIFY_LONG=1).
	LabelLong = "long"
)

// sample builds one sample case: name describes it within its group.
func sample(op, name string, p ops.Params, dims map[string]int, dist string, seed uint64, labels ...string) ops.Case {
	return ops.Case{Name: name, Op: op, Params: p, Dims: dims, Dist: dist, Seed: seed, Labels: append([]string{"UT", "op:" + op}, labels...)}
}

// VectorAddDTypes are vector_add's dtypes, in the order its contract
// lists them (the dtype parameter's values).
func VectorAddDTypes() []tensor.DType {
	var out []tensor.DType
	for _, s := range ops.VectorAdd.ParamSpecs() {
		if s.Name != "dtype" {
			continue
		}
		for _, v := range s.Values {
			d, err := tensor.ParseDType(v)
			if err != nil {
				panic(fmt.Sprintf("opdb: vector_add's contract lists dtype %q: %v", v, err)) // a contract invariant
			}
			out = append(out, d)
		}
	}
	return out
}

// vectorAddSamples: every dtype × every size of VectorAddSizes on the
// default profile × every distribution (the sizes past 2^16 with uniform
// values only: they test tiling, not values).
func vectorAddSamples() []ops.Case {
	var out []ops.Case
	for _, d := range VectorAddDTypes() {
		sz, err := NewVectorAddSizes(npu.Ascend910B(), d)
		if err != nil {
			panic(err) // the default profile's tiling is a package invariant
		}
		for _, n := range sz.List() {
			for _, dist := range []string{ops.DistUniform, ops.DistNormal, ops.DistSpecial, ops.DistCancel, ops.DistLarge} {
				if n > 1<<16 && dist != ops.DistUniform {
					continue
				}
				out = append(out, sample("vector_add", fmt.Sprintf("n=%d dist=%s", n, dist), ops.Params{"dtype": d.String()},
					map[string]int{"n": n}, dist, uint64(1000+n), "dtype:"+d.String()))
			}
		}
	}
	return out
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

// Sparse24Shapes are the M×K shapes the sparse24_prune and gemm24 samples
// cover (K a multiple of 4): empty K, one group, K off the 32 and 64
// fractal edges, many rows.
var Sparse24Shapes = [][2]int{{1, 0}, {1, 4}, {3, 8}, {16, 28}, {17, 36}, {33, 68}, {16, 128}, {64, 260}}

// sparse24PruneSamples: every shape × distribution (selection is exact).
func sparse24PruneSamples() []ops.Case {
	var out []ops.Case
	for _, s := range Sparse24Shapes {
		for _, dist := range ops.Sparse24Prune.Dists() {
			out = append(out, sample("sparse24_prune", fmt.Sprintf("%dx%d dist=%s", s[0], s[1], dist), ops.Params{},
				map[string]int{"m": s[0], "k": s[1]}, dist, uint64(s[0]*1000+s[1])))
		}
	}
	return out
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
