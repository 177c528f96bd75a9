package perf

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// TestPeaksOfAscend910B derives the built-in device's peaks by hand from
// its profile (24 AI cores, 16×16×16 fp16 and 16×32×16 int8 fractals, 48
// vector cores × 256 B, 1.8 GHz, HBM 1600 GB/s, 500-cycle DMA latency).
func TestPeaksOfAscend910B(t *testing.T) {
	got := PeaksOf(npu.Ascend910B())
	want := Peaks{
		Name:           "ascend910b",
		GMGBps:         1600,
		CubeFP16TFLOPS: 24 * 4096 * 2 * 1.8e9 / 1e12, // 353.89
		CubeFP32TFLOPS: 24 * 4096 * 2 * 1.8e9 / 1e12 / 2,
		CubeInt8TOPS:   24 * 8192 * 2 * 1.8e9 / 1e12, // 707.79
		VectorGBps:     48 * 256 * 1.8,               // 22118.4
		LatencyNS:      2 * 500 / 1.8,                // 555.6
	}
	for _, f := range []struct {
		name      string
		got, want float64
	}{
		{"gm_gbps", got.GMGBps, want.GMGBps}, {"cube_fp16_tflops", got.CubeFP16TFLOPS, want.CubeFP16TFLOPS},
		{"cube_fp32_tflops", got.CubeFP32TFLOPS, want.CubeFP32TFLOPS}, {"cube_int8_tops", got.CubeInt8TOPS, want.CubeInt8TOPS},
		{"vector_gbps", got.VectorGBps, want.VectorGBps}, {"latency_ns", got.LatencyNS, want.LatencyNS},
	} {
		if math.Abs(f.got-f.want) > 1e-12*f.want {
			t.Errorf("ascend910b %s: got %v, want %v", f.name, f.got, f.want)
		}
	}
	if err := got.Validate(); err != nil {
		t.Errorf("ascend910b peaks: %v", err)
	}
}

const goodDevice = `{"name": "chip", "gm_gbps": 100, "cube_fp16_tflops": 10, "cube_fp32_tflops": 5, "cube_int8_tops": 20, "vector_gbps": 1000, "latency_ns": 0}`

func TestParsePeaks(t *testing.T) {
	p, err := ParsePeaks([]byte(goodDevice))
	if err != nil || p.Name != "chip" || p.GMGBps != 100 || p.CubeInt8TOPS != 20 || p.LatencyNS != 0 {
		t.Fatalf("good device: got %+v, %v", p, err)
	}
	for _, tc := range []struct{ name, json, field string }{
		{"unknown field", strings.Replace(goodDevice, `"name"`, `"hbm": 1, "name"`, 1), "hbm"},
		{"missing field", strings.Replace(goodDevice, `"vector_gbps": 1000, `, "", 1), "vector_gbps"},
		{"missing name", strings.Replace(goodDevice, `"name": "chip", `, "", 1), "name"},
		{"zero rate", strings.Replace(goodDevice, `"gm_gbps": 100`, `"gm_gbps": 0`, 1), "gm_gbps"},
		{"negative rate", strings.Replace(goodDevice, `"cube_fp32_tflops": 5`, `"cube_fp32_tflops": -5`, 1), "cube_fp32_tflops"},
		{"negative latency", strings.Replace(goodDevice, `"latency_ns": 0`, `"latency_ns": -1`, 1), "latency_ns"},
		{"string", strings.Replace(goodDevice, `"cube_int8_tops": 20`, `"cube_int8_tops": "20"`, 1), "cube_int8_tops"},
		{"overflow", strings.Replace(goodDevice, `"cube_fp16_tflops": 10`, `"cube_fp16_tflops": 1e999`, 1), "cube_fp16_tflops"},
		{"trailing data", goodDevice + "{}", "trailing"},
	} {
		_, err := ParsePeaks([]byte(tc.json))
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("device file with %s: got error %v, want one naming %q", tc.name, err, tc.field)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "d.json")
	if err := os.WriteFile(path, []byte(goodDevice), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPeaks(path); err != nil {
		t.Errorf("LoadPeaks(%s): %v", path, err)
	}
	if _, err := LoadPeaks(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("LoadPeaks of a missing file: got %v, want an error naming it", err)
	}
}

// mk makes a tensor of dtype d and shape, filled with vals (the rest 0).
func mk(t *testing.T, d tensor.DType, shape []int, vals ...float64) *tensor.Tensor {
	t.Helper()
	x, err := tensor.New(d, shape...)
	if err != nil {
		t.Fatal(err)
	}
	x.SetFloat64s(0, vals, tensor.Numerics{})
	return x
}

func gen(t *testing.T, op ops.Op, p ops.Params, dims map[string]int) (ops.Params, map[string]*tensor.Tensor) {
	t.Helper()
	p, err := op.Validate(p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := op.Generate(p, ops.Gen{Dims: dims, Dist: ops.DistUniform, Seed: 1})
	if err != nil {
		t.Fatalf("%s %v %v seed 1: %v", op.Name(), p, dims, err)
	}
	return p, in
}

// TestWorkOf checks each op's count against the formula of its doc,
// worked out by hand for the sizes given.
func TestWorkOf(t *testing.T) {
	type want struct {
		bytes  int64
		cube   float64
		class  string
		vector float64
		width  int
	}
	check := func(name string, p ops.Params, in map[string]*tensor.Tensor, w want) {
		t.Helper()
		got, err := WorkOf(name, p, in)
		if err != nil {
			t.Fatalf("%s %v seed 1: %v", name, p, err)
		}
		if got.Bytes != w.bytes || got.CubeFlops != w.cube || got.Cube != w.class || got.VectorOps != w.vector || got.VectorElemBytes != w.width {
			t.Errorf("%s %v seed 1: got %+v, want %+v", name, p, got, w)
		}
	}
	// vector_add fp16, n = 1000: x, y, z of 2 B each; 1000 adds at 2 B.
	p, in := gen(t, ops.VectorAdd, ops.Params{"dtype": "fp16"}, map[string]int{"n": 1000})
	check("vector_add", p, in, want{bytes: 3 * 2000, vector: 1000, width: 2})
	// gemm fp16_fp32acc 32×64×16: a 2·2048, b 2·1024, out 2·512 bytes;
	// 2·32·16·64 = 65536 flops on the fp16 cube.
	p, in = gen(t, ops.GEMM, ops.Params{}, map[string]int{"m": 32, "k": 64, "n": 16})
	check("gemm", p, in, want{bytes: 2 * (2048 + 1024 + 512), cube: 65536, class: CubeFP16})
	p, in = gen(t, ops.GEMM, ops.Params{"mode": "fp32"}, map[string]int{"m": 32, "k": 64, "n": 16})
	check("gemm", p, in, want{bytes: 4 * (2048 + 1024 + 512), cube: 65536, class: CubeFP32})
	// int8: a, b 1 B; scales fp32 [M] or [1] as generated; out fp16.
	p, in = gen(t, ops.GEMM, ops.Params{"mode": "int8_int32acc"}, map[string]int{"m": 32, "k": 64, "n": 16})
	check("gemm", p, in, want{bytes: 2048 + 1024 + size(in["scale_a"]) + size(in["scale_b"]) + 2*512, cube: 65536, class: CubeInt8})
	// gemm24 32×64×16: values [32,32] and b [64,16] fp16, meta [32,16]
	// uint8, out [32,16] fp16; only K/2 = 32 products: 2·32·16·32 flops.
	p, in = gen(t, ops.GEMM24, ops.Params{}, map[string]int{"m": 32, "k": 64, "n": 16})
	check("gemm24", p, in, want{bytes: 2*1024 + 512 + 2*1024 + 2*512, cube: 32768, class: CubeFP16})
	// sparse24_prune 8×16: w 2·128 read, values 2·64 and meta 32 written;
	// 128 comparisons at fp16.
	p, in = gen(t, ops.Sparse24Prune, ops.Params{}, map[string]int{"m": 8, "k": 16})
	check("sparse24_prune", p, in, want{bytes: 256 + 128 + 32, vector: 128, width: 2})
	// sparse_compress H=2 L=10 D=4, keep_ratio 0.5: keep 5. k read whole
	// (2·80), v's kept rows read and k_out, v_out written (3 × 2·40),
	// indices 4·10, mask 20; 2·80 fp32 vector operations.
	p, in = gen(t, ops.SparseCompress, ops.Params{"keep_ratio": "0.5"}, map[string]int{"h": 2, "l": 10, "d": 4})
	check("sparse_compress", p, in, want{bytes: 160 + 3*80 + 40 + 20, vector: 160, width: 4})

	// kv_update, contiguous fp16 cache S=3 L=4 H=2 D=4, B=3 entries:
	// seq 0 (len 1) written, padding, seq 2 full (len 4) skipped. Reads x
	// 2·24, w_k and w_v 2·32 each, seq_ids 12, two seq_lens entries 8;
	// writes new_k, new_v 2·24 each, written 3, and for the one written
	// row K and V rows 2·(2·8) + its seq_lens entry 4. Two non-padding
	// entries project through w_k and w_v: 2·2·2·H·D² = 2·2·2·32 = 256.
	kv := map[string]*tensor.Tensor{
		"x":        mk(t, tensor.Float16, []int{3, 2, 4}),
		"w_k":      mk(t, tensor.Float16, []int{2, 4, 4}),
		"w_v":      mk(t, tensor.Float16, []int{2, 4, 4}),
		"k_cache":  mk(t, tensor.Float16, []int{3, 4, 2, 4}),
		"v_cache":  mk(t, tensor.Float16, []int{3, 4, 2, 4}),
		"seq_lens": mk(t, tensor.Int32, []int{3}, 1, 0, 4),
		"seq_ids":  mk(t, tensor.Int32, []int{3}, 0, -1, 2),
	}
	p, err := ops.KVUpdate.Validate(ops.Params{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.CheckInputs(ops.KVUpdate, p, kv); err != nil {
		t.Fatal(err)
	}
	check("kv_update", p, kv, want{bytes: 48 + 64 + 64 + 12 + 8 + 48 + 48 + 3 + 32 + 4, cube: 256, class: CubeFP16})

	// decode_attention, the same cache, q [3,2,4] (Hq = H = 2), seq_ids
	// {0, 2, 0}: sequence 0 (len 1) read once for two entries, sequence 2
	// (len 4). Reads q 48, seq_ids 12, three seq_lens entries 12, K and V
	// rows 2·(1+4)·2·4·2 = 160; writes out 48. Scores and weighted sums
	// 2·2·len·Hq·D per entry: 4·(1+4+1)·8 = 192; one exponential per score
	// (1+4+1)·2 = 12 at fp32.
	da := map[string]*tensor.Tensor{
		"q":        mk(t, tensor.Float16, []int{3, 2, 4}),
		"k_cache":  kv["k_cache"],
		"v_cache":  kv["v_cache"],
		"seq_lens": kv["seq_lens"],
		"seq_ids":  mk(t, tensor.Int32, []int{3}, 0, 2, 0),
	}
	p, err = ops.DecodeAttention.Validate(ops.Params{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ops.CheckInputs(ops.DecodeAttention, p, da); err != nil {
		t.Fatal(err)
	}
	check("decode_attention", p, da, want{bytes: 48 + 12 + 12 + 160 + 48, cube: 192, class: CubeFP16, vector: 12, width: 4})
}

// TestWorkOfEveryOp: every registered op has its work counted, so a new
// op cannot reach the roofline without one (its cases would say "no
// roofline").
func TestWorkOfEveryOp(t *testing.T) {
	for _, name := range ops.Names() {
		if workers[name] == nil {
			t.Errorf("op %s: perf.WorkOf does not count its work (add it to workers)", name)
		}
	}
	if _, err := WorkOf("no_such_op", nil, nil); err == nil || !strings.Contains(err.Error(), "no_such_op") {
		t.Errorf("unknown op: got %v, want an error naming it", err)
	}
}

// TestRoofline: on a made-up device with round rates the roofs and the
// bound follow by hand.
func TestRoofline(t *testing.T) {
	dev, err := ParsePeaks([]byte(goodDevice)) // 100 GB/s, fp16 10 TFLOPS, int8 20, vector 1000 GB/s
	if err != nil {
		t.Fatal(err)
	}
	// 1 MB at 100 GB/s = 10 µs; 10^8 fp16 flops at 10 TFLOPS = 10 µs... make
	// the cube 2·10^8: 20 µs, cube-bound.
	r := RooflineOf(Work{Bytes: 1e6, CubeFlops: 2e8, Cube: CubeFP16}, dev)
	if r.Bound != "cube fp16" || math.Abs(r.Seconds-20e-6) > 1e-18 || math.Abs(r.MemorySeconds-10e-6) > 1e-18 {
		t.Errorf("cube-bound work on %s: got %+v, want 20 µs bound by cube fp16, memory 10 µs", dev.Name, r)
	}
	// The same flops in int8 run at 20 TOPS: 10 µs, a tie; memory stays
	// the bound (ties go to memory, the first roof).
	r = RooflineOf(Work{Bytes: 1e6, CubeFlops: 2e8, Cube: CubeInt8}, dev)
	if r.Bound != BoundMemory || math.Abs(r.Seconds-10e-6) > 1e-18 {
		t.Errorf("int8 work on %s: got %+v, want 10 µs memory-bound", dev.Name, r)
	}
	// 10^7 fp32 vector ops at 1000 GB/s / 4 B = 40 µs.
	r = RooflineOf(Work{Bytes: 1e6, VectorOps: 1e7, VectorElemBytes: 4}, dev)
	if r.Bound != BoundVector || math.Abs(r.Seconds-40e-6) > 1e-18 {
		t.Errorf("vector work on %s: got %+v, want 40 µs vector-bound", dev.Name, r)
	}
	if got := r.Efficiency(80e-6); got != 0.5 {
		t.Errorf("efficiency at twice the roofline: got %v, want 0.5", got)
	}
	if got := r.GBps(10e-6); math.Abs(got-100) > 1e-9 {
		t.Errorf("GB/s of 1 MB in 10 µs: got %v, want 100", got)
	}
	if got := r.GFLOPs(10e-6); math.Abs(got-1000) > 1e-9 {
		t.Errorf("GFLOP/s of 10^7 ops in 10 µs: got %v, want 1000", got)
	}
}

func TestJudgeEfficiency(t *testing.T) {
	dev, _ := ParsePeaks([]byte(goodDevice))
	r := RooflineOf(Work{Bytes: 1e6}, dev) // 10 µs
	for _, tc := range []struct {
		name  string
		times []float64
		min   float64
		want  string
	}{
		{"at the roof", []float64{10e-6, 10e-6, 10e-6}, 0.6, StateEfficient},
		{"efficiency 0.625", []float64{15e-6, 16e-6, 17e-6}, 0.6, StateEfficient},
		{"efficiency 0.5", []float64{19e-6, 20e-6, 21e-6}, 0.6, StateInefficient},
		{"no times", nil, 0.6, StateNoTimes},
	} {
		state, detail := JudgeEfficiency(r, tc.times, tc.min)
		if state != tc.want {
			t.Errorf("%s: roofline %s, times %v, min %g: got %s (%s), want %s", tc.name, Duration(r.Seconds), tc.times, tc.min, state, detail, tc.want)
		}
	}
	dev.LatencyNS = 20e3 // 20 µs: the 10 µs roofline is below it
	r = RooflineOf(Work{Bytes: 1e6}, dev)
	if state, detail := JudgeEfficiency(r, []float64{1}, 0.6); state != StateLatencyBound {
		t.Errorf("roofline 10 µs under a 20 µs latency: got %s (%s), want %s", state, detail, StateLatencyBound)
	}
}

func TestReadBaseline(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "b.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b, err := ReadBaseline(write(`{"title": "x", "cases": [{"id": "a/b", "kernel_seconds": [1e-6, 2e-6], "verdict": "pass"}, {"id": "a/c"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Times) != 2 || len(b.Times["a/b"]) != 2 || b.Times["a/b"][1] != 2e-6 || b.Times["a/c"] != nil {
		t.Errorf("baseline: got %v, want a/b with 2 times and a/c with none", b.Times)
	}
	for _, tc := range []struct{ json, want string }{
		{`{"title": "x"}`, `no "cases"`},
		{`[1, 2]`, "not a npuverify JSON report"},
		{`{"cases": [{"kernel_seconds": [1]}]}`, "cases[0]: no id"},
		{`{"cases": [{"id": "a/b"}, {"id": "a/b"}]}`, "a/b appears twice"},
		{`{"cases": [{"id": "a/b", "kernel_seconds": [1, -1]}]}`, "kernel_seconds[1]"},
		{`{"cases": []} x`, "trailing data"},
	} {
		if _, err := ReadBaseline(write(tc.json)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("baseline %s: got error %v, want one containing %q", tc.json, err, tc.want)
		}
	}
}
