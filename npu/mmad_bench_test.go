package npu

import (
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// BenchmarkMmadBlocked is the blocked16 model's cost on one base block
// (m = 64, k = 256, n = 256) of fp16 values into fp32 accumulators.
func BenchmarkMmadBlocked(b *testing.B) {
	const m, k, n = 64, 256, 256
	r := rand.New(rand.NewPCG(1, 2))
	a, bb, c := make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	t := f16Table()
	for i := range a {
		a[i] = t[r.IntN(0x3C00)] // finite fp16 values below 1, either sign
	}
	for i := range bb {
		bb[i] = t[r.IntN(0x3C00)|0x8000*r.IntN(2)]
	}
	g := mmadGeom{m: m, n: n, ku: k, lda: k, ldb: n}
	for b.Loop() {
		clear(c)
		mmadBlocked(tensor.Float32, c, a, bb, g)
	}
}
