//go:build amd64 && !purego

package dgemm

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// BenchmarkFMAPeak is one core's multiply-add throughput in zmm
// registers, float64 and fp32 lanes (MAC/ns: multiply-adds a
// nanosecond): the peak that the products of the verification path
// (Mul's and MulAbsH32's tiles, gemm32's fp32 kernel) are held against in
// docs/performance.md. At 1024³, d in float64 and S in fp32 need at least
// 2^30/f64 + 2^30/f32 ns of one core's time.
func BenchmarkFMAPeak(b *testing.B) {
	if !cpu.X86.HasAVX512F {
		b.Skip("no AVX-512")
	}
	const steps = 1 << 16
	for _, c := range []struct {
		name string
		f32  bool
		macs float64 // multiply-adds a step
	}{{"f64", false, 96}, {"f32", true, 192}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				fmaPeak(steps, c.f32)
			}
			b.ReportMetric(c.macs*steps*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "MAC/ns")
		})
	}
}
