package harness_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// stepShapes are the benchmark shapes of BenchmarkSteps: for each
// operator added after gemm, a case of a few million elements, the size
// a decoding or pruning step meets in practice (the KV shapes are those
// of npu/kernels' BenchmarkKVUpdate and BenchmarkDecodeAttention); and
// gemm at a decoding step's shape (16 tokens against a 4096×11008
// weight), whose float64 reference does twice the fp32 kernel's work per
// multiply-add; and the two shapes ../shared/bench/vs_numpy.py times
// whole runs at (gemm 1024³, vector_add 2^24), and a transdata of 3.2
// million elements, so that every operator has its steps side by side
// (tag tells a second shape of an op and mode from the first).
var stepShapes = []struct {
	op     string
	params ops.Params
	dims   map[string]int
	tag    string
}{
	{"gemm", ops.Params{"mode": "fp16_fp32acc"}, map[string]int{"m": 16, "k": 4096, "n": 11008}, ""},
	{"kv_update", ops.Params{}, map[string]int{"b": 16, "s": 16, "h": 8, "d": 128, "l": 2048}, ""},
	{"decode_attention", ops.Params{}, map[string]int{"b": 16, "s": 16, "hq": 32, "h": 8, "d": 128, "l": 2048}, ""},
	{"sparse_compress", ops.Params{}, map[string]int{"h": 8, "l": 4096, "d": 128}, ""},
	{"sparse24_prune", ops.Params{}, map[string]int{"m": 1024, "k": 2048}, ""},
	{"gemm24", ops.Params{"mode": "fp16_fp32acc"}, map[string]int{"m": 512, "k": 1024, "n": 512}, ""},
	{"gemm24", ops.Params{"mode": "int8_int32acc"}, map[string]int{"m": 512, "k": 1024, "n": 512}, ""},
	{"gemm", ops.Params{"mode": "fp16_fp32acc"}, map[string]int{"m": 1024, "k": 1024, "n": 1024}, "1024"},
	{"vector_add", ops.Params{"dtype": "fp16"}, map[string]int{"n": 1 << 24}, ""},
	{"transdata", ops.Params{}, map[string]int{"n": 16, "c": 64, "h": 56, "w": 56}, ""},
}

// BenchmarkSteps times the three steps of a run on each operator's
// benchmark shape, side by side: the emulated kernel (kernel), the
// reference and bounds (expect: ops.ExpectFor, given the kernel's outputs
// for the operators that judge by them) and the judgement (verify:
// verify.Check under the default policy). The rule is that no
// verification step is slower than the kernel it checks; compare
// expect and verify with kernel in the same run. Each step also reports
// the process's CPU time per op (cpu-ms/op, every core's), which waiting
// for a core on a busy machine does not inflate as it does ns/op.
func BenchmarkSteps(b *testing.B) {
	for _, sh := range stepShapes {
		op, err := ops.Lookup(sh.op)
		if err != nil {
			b.Fatal(err)
		}
		p, err := op.Validate(sh.params)
		if err != nil {
			b.Fatal(err)
		}
		const seed = 1
		in, err := op.Generate(p, ops.Gen{Dims: sh.dims, Dist: ops.DistNormal, Seed: seed})
		if err != nil {
			b.Fatal(err)
		}
		emu := emulator.New(npu.Ascend910B())
		name := sh.op
		if m := sh.params["mode"]; m != "" {
			name += "/" + m
		}
		if sh.tag != "" {
			name += "/" + sh.tag
		}
		out, _, err := emu.Run(context.Background(), sh.op, p, in)
		if err != nil {
			b.Fatalf("%s %s seed=%d: kernel: %v", sh.op, p, seed, err)
		}
		runtime.GC()
		b.Run(name+"/kernel", func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				if _, _, err := emu.Run(context.Background(), sh.op, p, in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/expect", func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				if _, err := ops.ExpectFor(op, p, in, out, tensor.Numerics{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		want, err := ops.ExpectFor(op, p, in, out, tensor.Numerics{})
		if err != nil {
			b.Fatal(err)
		}
		pol, err := verify.ParsePolicy("bound")
		if err != nil {
			b.Fatal(err)
		}
		subject := verify.Subject{Op: sh.op, Params: p.String(), Seed: seed}
		b.Run(name+"/verify", func(b *testing.B) {
			defer cpuPerOp(b)()
			for b.Loop() {
				r, err := verify.Check(subject, out, want, nil, []verify.Policy{pol})
				if err != nil {
					b.Fatal(err)
				}
				if !r.Pass {
					b.Fatalf("%s %s seed=%d: the emulator's outputs fail: %s", sh.op, p, seed, r.Failure())
				}
			}
		})
	}
}

// cpuPerOp starts measuring the process's CPU time; the function it
// returns, deferred, reports it per op as cpu-ms/op.
func cpuPerOp(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/1e6/float64(b.N), "cpu-ms/op")
		}
	}
}
