//go:build amd64 && !purego

package dgemm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKernelsAgree runs the AVX2 micro-kernel and the portable one on the
// same packed panels and tiles and requires identical bits (NaN aside),
// for every step count up to past an unrolled pair, with and without
// loading the accumulators, on every value distribution.
func TestKernelsAgree(t *testing.T) {
	if kernelName != "avx2" {
		t.Skip("no AVX2+FMA on this CPU")
	}
	const ldc = nr + 5
	for dist := range numDists {
		for kcc := 1; kcc <= 9; kcc++ {
			for _, load := range []bool{false, true} {
				seed := uint64(100*dist + kcc)
				r := rand.New(rand.NewPCG(seed, 0))
				a := gen(r, dist, kcc*mr)
				b := make([]float64, kcc*2*nr)
				for kk, v := range gen(r, dist, kcc*nr) {
					b[kk/nr*2*nr+kk%nr] = v
					b[kk/nr*2*nr+nr+kk%nr] = math.Abs(v)
				}
				d0, s0 := gen(r, dist, mr*ldc), gen(r, dist, mr*ldc)
				for i := range s0 {
					s0[i] = math.Abs(s0[i])
				}
				gd, gs := append([]float64(nil), d0...), append([]float64(nil), s0...)
				wd, ws := append([]float64(nil), d0...), append([]float64(nil), s0...)
				kernelAVX2(kcc, a, b, gd, gs, ldc, load)
				kernelGo(kcc, a, b, wd, ws, ldc, load)
				for i := range wd {
					if !same(gd[i], wd[i]) || !same(gs[i], ws[i]) {
						t.Fatalf("dgemm kernelAVX2 kcc=%d load=%v dist=%d seed=%d: element %d: got d=%#x s=%#x / want kernelGo d=%#x s=%#x",
							kcc, load, dist, seed, i, math.Float64bits(gd[i]), math.Float64bits(gs[i]), math.Float64bits(wd[i]), math.Float64bits(ws[i]))
					}
				}
			}
		}
	}
}

// TestMulKernelsAgree is TestKernelsAgree for Mul's micro-kernels.
func TestMulKernelsAgree(t *testing.T) {
	if kernelName != "avx2" {
		t.Skip("no AVX2+FMA on this CPU")
	}
	const ldc = nr + 5
	for dist := range numDists {
		for kcc := 1; kcc <= 9; kcc++ {
			for _, load := range []bool{false, true} {
				seed := uint64(200*dist + kcc)
				r := rand.New(rand.NewPCG(seed, 0))
				a, b := gen(r, dist, kcc*mrMul), gen(r, dist, kcc*nr)
				d0 := gen(r, dist, mrMul*ldc)
				gd, wd := append([]float64(nil), d0...), append([]float64(nil), d0...)
				kernelMulAVX2(kcc, a, b, gd, nil, ldc, load)
				kernelMulGo(kcc, a, b, wd, nil, ldc, load)
				for i := range wd {
					if !same(gd[i], wd[i]) {
						t.Fatalf("dgemm kernelMulAVX2 kcc=%d load=%v dist=%d seed=%d: element %d: got d=%#x / want kernelMulGo d=%#x",
							kcc, load, dist, seed, i, math.Float64bits(gd[i]), math.Float64bits(wd[i]))
					}
				}
			}
		}
	}
}
