package ops

import (
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// BenchmarkFill is the cost of drawing inputs: 2^20 fp16 values of the
// uniform and the special distribution.
func BenchmarkFill(b *testing.B) {
	for _, dist := range []string{DistUniform, DistSpecial} {
		b.Run(dist, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				if _, err := Fill(rng, dist, tensor.Float16, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
