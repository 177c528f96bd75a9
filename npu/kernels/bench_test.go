package kernels

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

// BenchmarkVectorAdd adds two 1M-element fp16 vectors on the default
// profile and reports emulated elements per second.
func BenchmarkVectorAdd(b *testing.B) {
	const n = 1 << 20
	dev := npu.MustNewDevice(npu.Ascend910B())
	r := rand.New(rand.NewPCG(1, 2))
	x := tensor.MustNew(tensor.Float16, n)
	y := tensor.MustNew(tensor.Float16, n)
	for i := range n {
		x.SetFloat64(i, r.NormFloat64(), tensor.Numerics{})
		y.SetFloat64(i, r.NormFloat64(), tensor.Numerics{})
	}
	ctx := context.Background()
	b.SetBytes(3 * n * 2)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := VectorAdd(ctx, dev, x, y, VectorAddOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "elem/s")
}
