package reference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
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

// TestMatMulPathsAgree checks every path of MatMul against the plain loop
// bit for bit (d and s; NaN matches NaN), on shapes that cross the
// blocking of dgemm and gonum and their parallel thresholds: fp32 values
// (dgemm) with zeros of both signs, fp16-like, large, and ±Inf/NaN;
// general float64 values (gonum); general values with Inf/NaN (the loop).
func TestMatMulPathsAgree(t *testing.T) {
	const seed = 12
	r := rand.New(rand.NewPCG(seed, 0))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 2}, {17, 130, 9}, {65, 64, 129}, {130, 300, 70}, {256, 257, 255}} {
		m, k, n := sh[0], sh[1], sh[2]
		for dist := range 6 {
			gen := func(cnt int) []float64 {
				x := make([]float64, cnt)
				for i := range x {
					switch v := r.NormFloat64(); {
					case dist == 1 && i%3 == 0:
						x[i] = math.Copysign(0, v) // ±0 to skip
					case dist == 1:
						x[i] = v // not fp32: the gonum path
					case dist == 2:
						x[i] = math.Ldexp(math.Round(v*1024)/1024, r.IntN(60)-30) // fp16-ish, wide range
					case dist == 3:
						x[i] = float64(float32(v * 1e30)) // near-overflowing float64 products
					case dist >= 4 && i%11 == 0:
						x[i] = []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0}[i/11%4]
					case dist == 5:
						x[i] = v // not fp32, with specials: the loop
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
				if !sameBits(d[i], wd[i]) || !sameBits(s[i], ws[i]) {
					t.Fatalf("reference MatMul %dx%dx%d dist=%d seed=%d: element %d: got d=%x s=%x / want loop d=%x s=%x",
						m, k, n, dist, seed, i, math.Float64bits(d[i]), math.Float64bits(s[i]), math.Float64bits(wd[i]), math.Float64bits(ws[i]))
				}
			}
		}
	}
}

// sameBits reports whether x and y are identical, or both NaN (whose sign
// and payload the contract leaves open).
func sameBits(x, y float64) bool {
	return math.Float64bits(x) == math.Float64bits(y) || (math.IsNaN(x) && math.IsNaN(y))
}

// TestMatMulTensors checks that packing straight from fp16, bf16, fp32,
// int8 and float64 tensors gives the plain loop's bits on their values,
// whole and a block of rows at a time.
func TestMatMulTensors(t *testing.T) {
	const seed = 13
	r := rand.New(rand.NewPCG(seed, 0))
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8, tensor.Float64} {
		for _, sh := range [][3]int{{1, 1, 1}, {5, 131, 17}, {100, 40, 1030}} {
			m, k, n := sh[0], sh[1], sh[2]
			a, b := tensor.MustNew(dt, m, k), tensor.MustNew(dt, k, n)
			for _, x := range []*tensor.Tensor{a, b} {
				for i := range x.Len() {
					v := r.NormFloat64() * 100
					if i%13 == 0 {
						v = []float64{math.Inf(1), math.NaN(), math.Copysign(0, -1), 1e-6}[i/13%4]
					}
					x.SetFloat64(i, v, tensor.Numerics{})
				}
			}
			d, s := make([]float64, m*n), make([]float64, m*n)
			MatMulTensors(a, b, d, s)
			wd, ws := make([]float64, m*n), make([]float64, m*n)
			matMulLoop(m, k, n, a.Float64s(), b.Float64s(), wd, ws)
			for i := range wd {
				if !sameBits(d[i], wd[i]) || !sameBits(s[i], ws[i]) {
					t.Fatalf("reference MatMulTensors %s %dx%dx%d seed=%d: element %d: got d=%x s=%x / want loop d=%x s=%x",
						dt, m, k, n, seed, i, math.Float64bits(d[i]), math.Float64bits(s[i]), math.Float64bits(wd[i]), math.Float64bits(ws[i]))
				}
			}
			// A block of rows alone, and d alone, give those rows' bits.
			for _, rr := range [][2]int{{0, m}, {m / 3, m/3 + 1}, {m / 2, m}} {
				r0, r1 := rr[0], rr[1]
				bd, bs, bd2 := make([]float64, (r1-r0)*n), make([]float64, (r1-r0)*n), make([]float64, (r1-r0)*n)
				MatMulTensorRows(a, b, r0, r1, bd, bs)
				MulTensorRows(a, b, r0, r1, bd2)
				for i := range bd {
					w := r0*n + i
					if !sameBits(bd[i], wd[w]) || !sameBits(bs[i], ws[w]) || !sameBits(bd2[i], wd[w]) {
						t.Fatalf("reference MatMulTensorRows %s %dx%dx%d rows [%d, %d) seed=%d: element %d: got d=%x s=%x, MulTensorRows d=%x / want loop d=%x s=%x",
							dt, m, k, n, r0, r1, seed, i, math.Float64bits(bd[i]), math.Float64bits(bs[i]), math.Float64bits(bd2[i]), math.Float64bits(wd[w]), math.Float64bits(ws[w]))
					}
				}
			}
		}
	}
}

// BenchmarkMatMul is MatMul (d and s) at n³ on fp16 values held as
// float64; GFLOP/s counts both products (4·n³).
func BenchmarkMatMul(b *testing.B) {
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 0))
			gen := func() []float64 {
				x := make([]float64, n*n)
				for i := range x {
					x[i] = math.Ldexp(math.Round(math.Ldexp(r.NormFloat64(), 10)), -10)
				}
				return x
			}
			x, y := gen(), gen()
			d, s := make([]float64, n*n), make([]float64, n*n)
			b.ReportAllocs()
			for b.Loop() {
				MatMulInto(n, n, n, x, y, d, s)
			}
			b.ReportMetric(4*float64(n*n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
