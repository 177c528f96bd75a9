package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// benchNpy writes a seeded standard-normal fp16 tensor of the given shape
// to dir/name.npy, as ../shared/bench/vs_numpy.py does, and returns the path.
func benchNpy(b *testing.B, dir, name string, seed uint64, shape ...int) string {
	b.Helper()
	t := tensor.MustNew(tensor.Float16, shape...)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range t.Len() {
		t.SetFloat64(i, r.NormFloat64(), tensor.Numerics{})
	}
	p := filepath.Join(dir, name+".npy")
	if err := tensor.WriteNpyFile(p, t); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchRun times the whole `npuverify run` (read, emulate, reference,
// bound, verify, write) in process, the path vs_numpy.py measures.
func benchRun(b *testing.B, args ...string) {
	b.Helper()
	out := filepath.Join(b.TempDir(), "o")
	args = append(args, "--out", out)
	b.ResetTimer()
	for b.Loop() {
		if code := run(args, io.Discard, io.Discard); code != 0 {
			b.Fatalf("npuverify %v: exit %d", args, code)
		}
	}
}

// BenchmarkRunGEMM is `run gemm` fp16_fp32acc on standard normal inputs:
// n×n×n cubes (named n), and 16×4096×11008 (M×K×N), an LLM's projection
// at decoding, where M is a batch of a few tokens.
func BenchmarkRunGEMM(b *testing.B) {
	for _, s := range [][3]int{{256, 256, 256}, {1024, 1024, 1024}, {4096, 4096, 4096}, {16, 4096, 11008}} {
		m, k, n := s[0], s[1], s[2]
		name := fmt.Sprint(n)
		if m != k || k != n {
			name = fmt.Sprintf("%dx%dx%d", m, k, n)
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			a, bb := benchNpy(b, dir, "a", 1, m, k), benchNpy(b, dir, "b", 2, k, n)
			benchRun(b, "run", "gemm", "--param", "mode=fp16_fp32acc", "--in", "a="+a, "--in", "b="+bb)
			b.ReportMetric(2*float64(m)*float64(k)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkRunVectorAdd is `run vector_add` fp16 on 2^24 standard normal elements.
func BenchmarkRunVectorAdd(b *testing.B) {
	const n = 1 << 24
	dir := b.TempDir()
	x, y := benchNpy(b, dir, "x", 1, n), benchNpy(b, dir, "y", 2, n)
	benchRun(b, "run", "vector_add", "--param", "dtype=fp16", "--in", "x="+x, "--in", "y="+y)
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Melem/s")
}

// BenchmarkRunDecodeAttention is `run decode_attention` (contiguous fp16
// cache) at B=16, Hq=32, Hkv=8, D=128, L=2048 on generated inputs: every
// sequence full, as npu/kernels' BenchmarkDecodeAttention.
func BenchmarkRunDecodeAttention(b *testing.B) {
	const bsz, hq, hkv, d, l = 16, 32, 8, 128, 2048
	dir := b.TempDir()
	q := benchNpy(b, dir, "q", 1, bsz, hq, d)
	k := benchNpy(b, dir, "k_cache", 2, bsz, l, hkv, d)
	v := benchNpy(b, dir, "v_cache", 3, bsz, l, hkv, d)
	lens, ids := tensor.MustNew(tensor.Int32, bsz), tensor.MustNew(tensor.Int32, bsz)
	for i := range bsz {
		lens.I32()[i], ids.I32()[i] = l, int32(i)
	}
	lp, ip := filepath.Join(dir, "seq_lens.npy"), filepath.Join(dir, "seq_ids.npy")
	if err := tensor.WriteNpyFile(lp, lens); err != nil {
		b.Fatal(err)
	}
	if err := tensor.WriteNpyFile(ip, ids); err != nil {
		b.Fatal(err)
	}
	benchRun(b, "run", "decode_attention", "--in", "q="+q, "--in", "k_cache="+k, "--in", "v_cache="+v,
		"--in", "seq_lens="+lp, "--in", "seq_ids="+ip)
}
