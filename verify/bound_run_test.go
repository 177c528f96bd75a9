package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// ordinaryCase builds, from seed, what a gemm gives Compute: an ordinary
// Expected (Ref, Bound and Alt arrays, no exact element) of n float64
// dot products of a few binades, each bound an accumulation error plus
// half an ulp of the output dtype d (so rarely a power of two), and a got
// that is d's rounding of the dot product moved by part of the
// accumulation error. With mixAll, some elements are made what addBlock
// handles apart or what only just passes its tests: errors of up to 40
// ulps, values out of bound, NaN and ±Inf in got and reference, bounds
// of 0, −0, +Inf, NaN and powers of two, alternatives (ambiguous
// elements), zero and subnormal and near-overflow references (beyond the
// largest finite too, where the ulp stops growing), errors
// right at the 1e-3 and 5e-3 relative errors, and a recurring element;
// with mixTies, only a recurring element at e/b = 1 and its scalings by
// powers of two (the same e/b, other errors), so that the worst elements
// held are those, and the others tie with the last of them.
func ordinaryCase(d tensor.DType, n int, seed uint64, mix ordinaryMix) (*tensor.Tensor, *bound.Expected) {
	r := rand.New(rand.NewPCG(seed, 23))
	f, isFloat := d.FloatFormat()
	num := tensor.Numerics{}
	got := tensor.MustNew(d, n)
	want := bound.NewExpected(n)
	// The recurring element of the ties: the same got, reference and
	// bound, e/b = 1, at scales 2^-1, 1, 2, 4 (the same e/b, other errors).
	tieR := 1 + float64(r.Float64())
	tieG := num.Round(tieR, d)
	tieB := math.Abs(tieG - tieR)
	for i := range n {
		x := float64(r.NormFloat64() * math.Ldexp(32, r.IntN(6)-3))
		acc := float64(math.Abs(x) * 0x1p-20 * r.Float64())
		half := 0.5
		if isFloat {
			half = float64(f.Ulp(math.Abs(x)+acc) / 2)
		}
		ref, bnd := x, acc+half
		g := num.Round(x+float64((2*float64(r.Float64())-1)*acc/2), d)
		var alt bound.Special
		if mix == mixTies && r.IntN(20) == 0 {
			sc := math.Ldexp(1, r.IntN(4)-1)
			ref, g, bnd = tieR*sc, tieG*sc, tieB*sc
		}
		if mix == mixAll {
			ulp := 1.0
			if isFloat {
				ulp = f.Ulp(x)
			}
			switch k := r.IntN(100); {
			case k < 8: // a few ulps off: out of bound or, with a wide bound, in
				g = num.Round(x+float64(float64(r.IntN(81)-40)*ulp), d)
				if r.IntN(2) == 0 {
					bnd = math.Abs(g-x) * (1 + float64(r.Float64()))
				}
			case k == 8:
				g = math.NaN()
			case k == 9:
				g = math.Inf(1 - 2*r.IntN(2))
			case k == 10:
				ref = math.Inf(1)
			case k == 11:
				ref = math.NaN()
			case k == 12: // an overflow-ambiguous element, finite or not
				alt = bound.PosInf
				if r.IntN(2) == 0 {
					g = math.Inf(1)
				}
			case k == 13: // an allowed NaN at a finite reference
				alt = bound.NaN
			case k == 14:
				bnd = []float64{0, math.Copysign(0, -1), math.Inf(1), math.NaN(), -1}[r.IntN(5)]
			case k == 15: // a zero bound, met exactly
				ref, bnd = g, 0
			case k == 16: // a power-of-two bound
				bnd = math.Ldexp(1, r.IntN(8)-14)
			case k == 17: // zeros of either sign, and near zero
				ref = []float64{0, math.Copysign(0, -1), 1e-300, f.MinSubnormal()}[r.IntN(4)]
				g = []float64{0, math.Copysign(0, -1), f.MinSubnormal()}[r.IntN(3)]
				bnd = f.MinSubnormal() * float64(r.IntN(3))
			case k == 18: // subnormal references
				ref = f.MinSubnormal() * float64(r.IntN(64)) * (1 + float64(r.Float64()/8))
				g = num.Round(ref, d)
				bnd = f.MinSubnormal() * float64(1+r.IntN(4))
			case k == 19: // near overflow
				ref = f.MaxFinite() * (1 - float64(r.Float64()/64))
				g = num.Round(ref, d)
				bnd = f.Ulp(ref)
			case k == 20: // relative errors right at 1e-3 and 5e-3
				rel := []float64{1e-3, 5e-3}[r.IntN(2)]
				g = x
				ref = g / (1 + rel)
				bnd = math.Abs(g - ref)
			case k < 26: // the recurring element
				ref, g, bnd = tieR, tieG, tieB
			case k == 26: // an error that is zero
				ref = g
			case k == 28: // a reference beyond the largest finite, its got that, within 1e-3
				ref = math.Ldexp(1+float64(r.Float64()*0x1p-12), f.Emax+1)
				g = f.MaxFinite()
				bnd = (ref - g) * (1 + float64(r.Float64()))
			case k == 27: // a non-finite got or reference within an infinite bound
				bnd = math.Inf(1)
				if r.IntN(2) == 0 {
					g = math.Inf(1 - 2*r.IntN(2))
				} else {
					ref = math.Inf(1 - 2*r.IntN(2))
				}
			}
		}
		got.SetFloat64(i, g, num)
		want.Ref[i], want.Bound[i], want.Alt[i] = ref, bnd, alt
	}
	return got, want
}

// ordinaryMix picks what ordinaryCase mixes into a clean output.
type ordinaryMix int

const (
	mixNone ordinaryMix = iota
	mixTies             // the recurring element at e/b = 1 and its scalings: the worst elements tie
	mixAll              // every kind of exception
)

// TestComputeOrdinaryMatchesSerial holds Compute on ordinary Expected
// (the path addBoundBlock gathers inline) to the single loop, every
// field bit for bit and the worst elements, for every output dtype, at
// sizes below and above a block and split over cores, both with the AVX2
// run and with the portable one. Clean outputs leave the run only for
// the worst elements; mixed ones leave it at every kind of exception.
func TestComputeOrdinaryMatchesSerial(t *testing.T) {
	vec := useAVX2
	defer func() { useAVX2 = vec }()
	for _, seed := range []uint64{61, 62} {
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Float64, tensor.Int32} {
			for _, n := range []int{0, 3, 63, 64, 2049, 70001} {
				for _, mix := range []ordinaryMix{mixNone, mixTies, mixAll} {
					got, want := ordinaryCase(d, n, seed, mix)
					serial := fmt.Sprintf("%+v", computeSerial(got, want))
					for _, v := range []bool{false, true} {
						if v && !vec {
							continue
						}
						useAVX2 = v
						if m := fmt.Sprintf("%+v", Compute(got, want)); m != serial {
							t.Fatalf("verify Compute ordinary %s n=%d mix=%d avx2=%v seed=%d: got %s / want %s", d, n, mix, v, seed, m, serial)
						}
					}
				}
			}
		}
	}
}

// BenchmarkComputeOrdinary is Compute on a gemm-like fp16 output of 2^20
// elements against an ordinary Expected (ordinaryCase): clean, and with
// exceptions mixed in.
func BenchmarkComputeOrdinary(b *testing.B) {
	const n = 1 << 20
	for _, mix := range []ordinaryMix{mixNone, mixAll} {
		got, want := ordinaryCase(tensor.Float16, n, 1, mix)
		name := "clean"
		if mix == mixAll {
			name = "mixed"
		}
		b.Run(name, func(b *testing.B) {
			c0 := cpuTime()
			for b.Loop() {
				Compute(got, want)
			}
			b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/n, "cpu-ns/elem")
		})
	}
}
