package verify

import (
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// BenchmarkLeanRunH16Sum times vector_add's lean loop (leanRunH16SumAVX2)
// on one core over a clean fp16 output (leanCase, seed 1): a chunk of
// sumChunk elements, which stays in the first two levels of cache, and
// 2^24 elements (96 MiB of got, x and y, more than the last level
// holds), read from memory. ns/elem is the
// figure to compare with the kernel's.
func BenchmarkLeanRunH16Sum(b *testing.B) {
	if !useF16C {
		b.Skip("no F16C")
	}
	sf, _ := bound.NewShortForm(tensor.Float16)
	for _, n := range []int{sumChunk, 1 << 24} {
		got, _, x, y := leanCase(tensor.Float16, tensor.Numerics{}, n, false, 0, 1, nil)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				for a := 0; a < n; a += sumChunk {
					var v leanVec
					v.set(&sf, false)
					if k := leanRunH16SumAVX2(&v, f16Ptr(got.F16()[a:]), f16Ptr(x.F16()[a:]), f16Ptr(y.F16()[a:]), sumChunk); k != sumChunk {
						b.Fatalf("fp16 n=%d seed=1: chunk at %d: gathered %d / want %d", n, a, k, sumChunk)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elem")
		})
	}
}
