package ops

import (
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// benchGEMMInputs generates a fp16_fp32acc gemm case of n³ on normal values.
func benchGEMMInputs(b *testing.B, n int) (Params, map[string]*tensor.Tensor) {
	b.Helper()
	p, err := GEMM.Validate(Params{"mode": "fp16_fp32acc"})
	if err != nil {
		b.Fatal(err)
	}
	in, err := GEMM.Generate(p, Gen{Dims: map[string]int{"m": n, "k": n, "n": n}, Dist: DistNormal, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	return p, in
}

// BenchmarkGEMMExpect is gemm's whole Expect (reference d and s, then the
// per-element bound) at n³, fp16_fp32acc; GFLOP/s counts the reference's
// two products (4·n³).
func BenchmarkGEMMExpect(b *testing.B) {
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			p, in := benchGEMMInputs(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := GEMM.Expect(p, in, tensor.Numerics{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(4*float64(n*n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkGEMMReference is the reference alone (d and s from the fp16
// tensors) at n³, the part of BenchmarkGEMMExpect that is not the bound.
func BenchmarkGEMMReference(b *testing.B) {
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, in := benchGEMMInputs(b, n)
			d, s := make([]float64, n*n), make([]float64, n*n)
			b.ReportAllocs()
			for b.Loop() {
				reference.MatMulTensors(in["a"], in["b"], d, s)
			}
			b.ReportMetric(4*float64(n*n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
