package reference

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestGEMM(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5, 6}  // [2,3]
	b := []float64{1, -1, 0, 2, 4, 0} // [3,2]
	d, s := MatMul(2, 3, 2, a, b)
	wantD := []float64{13, 3, 28, 6}
	wantS := []float64{13, 5, 28, 14}
	for i := range wantD {
		if d[i] != wantD[i] || s[i] != wantS[i] {
			t.Fatalf("reference MatMul: element %d: got d=%g s=%g / want d=%g s=%g", i, d[i], s[i], wantD[i], wantS[i])
		}
	}
	c := []float64{math.NaN(), 1, 1, 1}
	out, _ := GEMM(2, 3, 2, a, b, 2, 0, c, nil, nil)
	if out[0] != 26 {
		t.Errorf("reference GEMM beta=0: element 0: got %g / want 26 (c not read)", out[0])
	}
	out, _ = GEMM(2, 3, 2, a, b, 1, -1, c, []float64{0.5}, []float64{1, 2})
	if !math.IsNaN(out[0]) || out[1] != 0.5*2*3-1 || out[2] != 0.5*28-1 {
		t.Errorf("reference GEMM scales, beta=-1: got %v / want [NaN 2 13 ...]", out)
	}
	inf := math.Inf(1)
	d, _ = MatMul(1, 2, 1, []float64{inf, 1}, []float64{0, 1})
	if !math.IsNaN(d[0]) {
		t.Errorf("reference MatMul: Inf·0: got %g / want NaN", d[0])
	}
}

// TestMatMulPathsAgree checks MatMul's Dgemm path against the plain loop
// bit for bit (d and s), on shapes that cross gonum's 64-blocks and its
// parallel threshold, with zeros of both signs, fp16-like, large and
// cancelling values. Inputs are finite: non-finite ones take the loop.
func TestMatMulPathsAgree(t *testing.T) {
	const seed = 12
	r := rand.New(rand.NewPCG(seed, 0))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 2}, {17, 130, 9}, {65, 64, 129}, {130, 300, 70}, {256, 257, 255}} {
		m, k, n := sh[0], sh[1], sh[2]
		for dist := range 4 {
			gen := func(cnt int) []float64 {
				x := make([]float64, cnt)
				for i := range x {
					switch v := r.NormFloat64(); {
					case dist == 1 && i%3 == 0:
						x[i] = math.Copysign(0, v) // ±0 to skip
					case dist == 2:
						x[i] = math.Ldexp(math.Round(v*1024)/1024, r.IntN(60)-30) // fp16-ish, wide range
					case dist == 3:
						x[i] = float64(float32(v * 1e30)) // near-overflowing float64 products
					default:
						x[i] = float64(float32(v))
					}
				}
				return x
			}
			a, b := gen(m*k), gen(k*n)
			d, s := MatMul(m, k, n, a, b)
			wd, ws := make([]float64, m*n), make([]float64, m*n)
			matMulLoop(m, k, n, a, b, wd, ws)
			for i := range wd {
				if math.Float64bits(d[i]) != math.Float64bits(wd[i]) || math.Float64bits(s[i]) != math.Float64bits(ws[i]) {
					t.Fatalf("reference MatMul %dx%dx%d dist=%d seed=%d: element %d: got d=%x s=%x / want loop d=%x s=%x",
						m, k, n, dist, seed, i, math.Float64bits(d[i]), math.Float64bits(s[i]), math.Float64bits(wd[i]), math.Float64bits(ws[i]))
				}
			}
		}
	}
}
