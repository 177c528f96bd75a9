package verify

import (
	"fmt"
	"math"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// TestComputeFusedMatchesTwoPasses holds Compute with the fused sums
// (fusedSums: one pass's values kept for the sums) to Compute with the
// two passes (orderedSums converts and evaluates again), every field bit
// for bit, on compact Expecteds of every exact dtype and profile, at sizes
// on both sides of a computePart block and of the one-chunk limit.
func TestComputeFusedMatchesTwoPasses(t *testing.T) {
	defer func(v bool) { fuseSums = v }(fuseSums)
	for seed := uint64(1); seed <= 3; seed++ {
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
			for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
				for _, n := range []int{1, 5, 2047, 2048, 2049, 4099, sumChunk - 1, sumChunk, sumChunk + 1} {
					for k, mk := range []func() (*tensor.Tensor, *bound.Expected, *bound.Expected){
						func() (*tensor.Tensor, *bound.Expected, *bound.Expected) { return compactCase(d, num, n, seed) },
						func() (*tensor.Tensor, *bound.Expected, *bound.Expected) {
							return periodicCase(d, num, n, 3+int(seed), int(seed)%3, seed)
						},
					} {
						got, compact, _ := mk()
						fuseSums = false
						want := fmt.Sprintf("%+v", Compute(got, compact))
						fuseSums = true
						if c := fmt.Sprintf("%+v", Compute(got, compact)); c != want {
							t.Fatalf("verify Compute fused %s %v n=%d case=%d seed=%d: got %s / want (two passes) %s", d, num, n, k, seed, c, want)
						}
					}
				}
			}
		}
	}
}

// TestRefsOfExactMatchesRefs holds refsOfExact to bound.Expected.Refs
// on the exact values of compact Expecteds of every exact dtype and
// profile (every class of value: zeros of both signs, ties, subnormals,
// values near and past overflow, ±Inf, NaN, and for int8 values out of
// range and between integers).
func TestRefsOfExactMatchesRefs(t *testing.T) {
	const seed, n = 41, 3000
	extra := []float64{math.Copysign(0, -1), 0, 2.5, -0.5, 127.5, -128.5, 1e300, -1e300, -129, 128, math.NaN(), math.Inf(1), math.Inf(-1)}
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
		for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
			_, c, _ := compactCase(d, num, n, seed)
			src, _, _, _ := c.ExactSource()
			rs := make([]float64, n)
			src(0, rs)
			rs = append(rs, extra...)
			compact := bound.NewExactFrom(len(rs), d, num, func(off int, dst []float64) { copy(dst, rs[off:off+len(dst)]) })
			want := compact.Refs(0, make([]float64, len(rs)))
			got := append([]float64(nil), rs...)
			refsOfExact(got, d, num)
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("verify refsOfExact %s %v seed=%d: element %d (exact %v): got %v (%#x) / want %v (%#x)",
						d, num, seed, i, rs[i], got[i], math.Float64bits(got[i]), want[i], math.Float64bits(want[i]))
				}
			}
		}
	}
}
