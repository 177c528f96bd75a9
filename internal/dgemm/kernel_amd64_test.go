//go:build amd64 && !purego

package dgemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// TestKernelsAgree runs each assembly micro-kernel this CPU has (MulAbs's
// AVX2 one, Mul's AVX2 and AVX-512 ones on float64 panels and on fp16
// ones) and its portable twin on the same
// packed panels and tiles and requires identical bits (NaN aside), for
// every step count up to past an unrolled pair, with and without loading
// the accumulators, on every value distribution.
func TestKernelsAgree(t *testing.T) {
	if kernelName != "avx2" {
		t.Skip("no AVX2+FMA on this CPU")
	}
	const ldc = nr + 5
	type kernelPair struct {
		name      string
		mr        int
		abs, h    bool
		asm, twin kernelFunc
	}
	pairs := []kernelPair{{"kernelAVX2", mr, true, false, kernelAVX2, kernelGo}}
	for _, tile := range mulTiles() {
		if tile.name != "go" {
			pairs = append(pairs, kernelPair{"mul-" + tile.name, tile.mr, false, false, tile.kern, tile.twin})
		}
	}
	for _, tile := range mulHTiles() {
		pairs = append(pairs, kernelPair{"mul-" + tile.name, tile.mr, false, true, tile.kern, tile.twin})
	}
	for _, v := range pairs {
		w := variant{abs: v.abs, h: v.h}.panel()
		for dist := range numDists {
			for kcc := 1; kcc <= 9; kcc++ {
				for _, load := range []bool{false, true} {
					seed := uint64(100*dist + kcc)
					r := rand.New(rand.NewPCG(seed, 0))
					a := gen(r, dist, kcc*v.mr)
					b := make([]float64, kcc*w)
					if v.h {
						// fp16 panels: every bit pattern, NaN, ±Inf,
						// ±0 and subnormals among them.
						bh := halves(b)
						for i := range bh {
							bh[i] = float16.Float16(r.Uint32())
						}
					} else {
						for kk, x := range gen(r, dist, kcc*nr) {
							b[kk/nr*w+kk%nr] = x
							if v.abs {
								b[kk/nr*w+nr+kk%nr] = math.Abs(x)
							}
						}
					}
					d0, s0 := gen(r, dist, v.mr*ldc), gen(r, dist, v.mr*ldc)
					for i := range s0 {
						s0[i] = math.Abs(s0[i])
					}
					gd, gs := append([]float64(nil), d0...), append([]float64(nil), s0...)
					wd, ws := append([]float64(nil), d0...), append([]float64(nil), s0...)
					if !v.abs {
						gs, ws = nil, nil
					}
					v.asm(kcc, a, b, gd, gs, ldc, load)
					v.twin(kcc, a, b, wd, ws, ldc, load)
					for i := range wd {
						if !same(gd[i], wd[i]) || v.abs && !same(gs[i], ws[i]) {
							t.Fatalf("dgemm %s kcc=%d load=%v dist=%d seed=%d: element %d: got d=%#x s=%v / want the Go twin's d=%#x s=%v",
								v.name, kcc, load, dist, seed, i, math.Float64bits(gd[i]), at(gs, i), math.Float64bits(wd[i]), at(ws, i))
						}
					}
				}
			}
		}
	}
}

// at is s[i], or "-" for Mul's absent s.
func at(s []float64, i int) any {
	if s == nil {
		return "-"
	}
	return s[i]
}
