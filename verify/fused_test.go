package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
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
// for the fused sums to bound.Expected.Refs, and the maxima it gathers
// to chunkMax's of the values it keeps, bit for bit, on compact
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
				var vm valueMax
				if !computeExact(p, got, compact, 0, n, gb, rb, true, &vm) {
					t.Fatalf("verify computeExact %s %v case=%d seed=%d: did not take the compact Expected", d, num, k, seed)
				}
				for i := range rb {
					if math.Float64bits(rb[i]) != math.Float64bits(want[i]) {
						t.Fatalf("verify computeExact %s %v case=%d seed=%d: element %d (exact %v, got %v): kept %v (%#x) / want Refs %v (%#x)",
							d, num, k, seed, i, rs[i], gb[i], rb[i], math.Float64bits(rb[i]), want[i], math.Float64bits(want[i]))
					}
				}
				// The maxima gathered on the way are chunkMax's of the
				// kept values (a floating output's; an integer one's
				// are left to chunkMax).
				if vm.ok != (d != tensor.Int8) {
					t.Fatalf("verify computeExact %s %v case=%d seed=%d: maxima gathered = %v, want %v", d, num, k, seed, vm.ok, d != tensor.Int8)
				}
				if we, wv := chunkMaxGo(gb, rb); vm.ok && (math.Float64bits(vm.e) != math.Float64bits(we) || math.Float64bits(vm.v) != math.Float64bits(wv)) {
					t.Fatalf("verify computeExact %s %v case=%d seed=%d: maxima gathered = %g, %g / want chunkMax's %g, %g", d, num, k, seed, vm.e, vm.v, we, wv)
				}
				nonFinite := false
				for i := range gb {
					nonFinite = nonFinite || !isFinite(gb[i]) || !isFinite(rb[i])
				}
				if vm.ok && vm.nonFinite != nonFinite {
					t.Fatalf("verify computeExact %s %v case=%d seed=%d: non-finite value noted = %v, want %v", d, num, k, seed, vm.nonFinite, nonFinite)
				}
			}
		}
	}
}

// TestComputeExactMaxima holds the maxima computeExact gathers to
// chunkMax's where the inline run decides them: a correctly rounded fp16
// output of small values with one large element, whose exact value
// rounds down (the largest value is an r) or up (a g), placed at every
// position of a run in the vector loop and in the portable one.
func TestComputeExactMaxima(t *testing.T) {
	const seed = 45
	defer func(v bool) { useAVX2 = v }(useAVX2)
	r := rand.New(rand.NewPCG(seed, 0))
	for _, vec := range []bool{false, useAVX2} {
		useAVX2 = vec
		for _, big := range []float64{1000.2, 1000.3, -1000.2, -1000.3} {
			for _, n := range []int{5, 8, 13, 40} {
				for at := range n {
					rs := make([]float64, n)
					for i := range rs {
						rs[i] = float64(float32(r.Float64()*2 - 1)) // exact in float64, rounds in fp16
					}
					rs[at] = big
					compact := bound.NewExactFrom(n, tensor.Float16, tensor.Numerics{}, func(off int, dst []float64) { copy(dst, rs[off:off+len(dst)]) })
					got := tensor.MustNew(tensor.Float16, n)
					for i, v := range rs {
						got.SetFloat64(i, v, tensor.Numerics{})
					}
					gb, rb := make([]float64, n), make([]float64, n)
					var vm valueMax
					if !computeExact(newMetricsPart(), got, compact, 0, n, gb, rb, true, &vm) || !vm.ok || vm.nonFinite {
						t.Fatalf("verify computeExact fp16 n=%d big=%g at=%d seed=%d (AVX2 %v): maxima gathered %v, a non-finite value noted %v, want true, false", n, big, at, seed, vec, vm.ok, vm.nonFinite)
					}
					if we, wv := chunkMaxGo(gb, rb); vm.e != we || vm.v != wv {
						t.Fatalf("verify computeExact fp16 n=%d big=%g at=%d seed=%d (AVX2 %v): maxima gathered = %g, %g / want chunkMax's %g, %g", n, big, at, seed, vec, vm.e, vm.v, we, wv)
					}
				}
			}
		}
	}
}
