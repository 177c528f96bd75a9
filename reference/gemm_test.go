package reference

import (
	"math"
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
