package verify

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// TestComputeFusedMatchesTwoPasses holds Compute with the fused sums
// (Stream.addExact: each chunk's metrics pass keeps its values for its
// sums) to Compute with the two passes (the sums convert and evaluate
// again), every field bit for bit, on compact Expecteds of every exact
// dtype and profile, at sizes on both sides of a computePart block and
// of a chunk, and over several chunks on one to three cores (so that
// the cores' ranges of chunks fall differently).
func TestComputeFusedMatchesTwoPasses(t *testing.T) {
	defer func(v bool) { fuseSums = v }(fuseSums)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for seed := uint64(1); seed <= 3; seed++ {
		runtime.GOMAXPROCS(int(seed))
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
			for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
				for _, n := range []int{1, 5, 2047, 2048, 2049, 4099, sumChunk - 1, sumChunk, sumChunk + 1, 2 * sumChunk, 5*sumChunk + 3} {
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
							t.Fatalf("verify Compute fused %s %v n=%d case=%d seed=%d GOMAXPROCS=%d: got %s / want (two passes) %s", d, num, n, k, seed, seed, c, want)
						}
					}
				}
			}
		}
	}
}

// TestComputeExactKeepsRefs holds the references computeExact keeps
// for the fused sums to bound.Expected.Refs, bit for bit, on compact
// Expecteds of every exact dtype and profile: every class of exact value
// (zeros of both signs, ties, subnormals, values near and past overflow,
// ±Inf, NaN, and for int8 values out of range and between integers), with
// got the correct rounding (the inline paths) or not (the others).
func TestComputeExactKeepsRefs(t *testing.T) {
	const seed = 41
	extra := []float64{math.Copysign(0, -1), 0, 2.5, -0.5, 127.5, -128.5, 1e300, -1e300, -129, 128, 300, math.NaN(), math.Inf(1), math.Inf(-1)}
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
		for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
			for k, mk := range []func(n int) (*tensor.Tensor, *bound.Expected, *bound.Expected){
				func(n int) (*tensor.Tensor, *bound.Expected, *bound.Expected) { return compactCase(d, num, n, seed) },
				func(n int) (*tensor.Tensor, *bound.Expected, *bound.Expected) {
					return periodicCase(d, num, n, 7, 2, seed)
				},
			} {
				g0, c, _ := mk(3000)
				src, _, _, _ := c.ExactSource()
				rs := make([]float64, g0.Len())
				src(0, rs)
				for _, v := range extra {
					rs = append(rs, v, v) // got its rounding, then one off
				}
				n := len(rs)
				compact := bound.NewExactFrom(n, d, num, func(off int, dst []float64) { copy(dst, rs[off:off+len(dst)]) })
				got := tensor.MustNew(d, n)
				for i := range g0.Len() {
					got.SetBits(i, g0.Bits(i))
				}
				for i := g0.Len(); i < n; i++ {
					g := num.Round(rs[i], d)
					if (i-g0.Len())%2 == 1 {
						g = num.Round(g+1, d)
					}
					got.SetFloat64(i, g, tensor.Numerics{})
				}
				want := compact.Refs(0, make([]float64, n))
				gb, rb := make([]float64, n), make([]float64, n)
				p := newMetricsPart()
				if !computeExact(p, got, compact, 0, n, gb, rb, true) {
					t.Fatalf("verify computeExact %s %v case=%d seed=%d: did not take the compact Expected", d, num, k, seed)
				}
				for i := range rb {
					if math.Float64bits(rb[i]) != math.Float64bits(want[i]) {
						t.Fatalf("verify computeExact %s %v case=%d seed=%d: element %d (exact %v, got %v): kept %v (%#x) / want Refs %v (%#x)",
							d, num, k, seed, i, rs[i], gb[i], rb[i], math.Float64bits(rb[i]), want[i], math.Float64bits(want[i]))
					}
				}
			}
		}
	}
}
