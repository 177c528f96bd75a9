package ops

import (
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// BenchmarkFill is the cost of drawing inputs: 2^20 fp16 uniform values.
func BenchmarkFill(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		if _, err := Fill(rng, DistUniform, tensor.Float16, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}
