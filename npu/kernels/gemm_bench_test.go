package kernels

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// benchInputs makes fp16 a [n,n], b [n,n] with standard normal values.
func benchInputs(n int) map[string]*tensor.Tensor {
	r := rand.New(rand.NewPCG(uint64(n), 7))
	in := map[string]*tensor.Tensor{"a": tensor.MustNew(tensor.Float16, n, n), "b": tensor.MustNew(tensor.Float16, n, n)}
	for _, name := range []string{"a", "b"} {
		t := in[name]
		for i := 0; i < t.Len(); i++ {
			t.SetFloat64(i, r.NormFloat64(), tensor.Numerics{})
		}
	}
	return in
}

func reportGFLOPs(b *testing.B, n int) {
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// cpuMeter reports the process CPU time per op ("cpu-ms/op", all threads)
// from its start to the call of the returned function: on a shared
// machine the wall time per op includes waiting for the cores, the CPU
// time does not (the 2-core ceiling of GFLOP/s is 2·flops per cpu-s).
func cpuMeter(b *testing.B) func() {
	start := processCPU()
	return func() {
		b.ReportMetric(float64(processCPU()-start)/1e6/float64(b.N), "cpu-ms/op")
	}
}

// BenchmarkGemmEmulator is the emulated fp16_fp32acc gemm (sequential).
func BenchmarkGemmEmulator(b *testing.B) {
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			in := benchInputs(n)
			cfg, _ := ops.ParseGEMM(ops.Params{})
			b.ResetTimer()
			done := cpuMeter(b)
			for i := 0; i < b.N; i++ {
				if _, _, err := GEMM(context.Background(), testDev, cfg, in, GEMMOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			done()
			reportGFLOPs(b, n)
		})
	}
}

// BenchmarkGemmEmulatorModes is the emulated gemm at 512³ in every
// precision mode (inputs of the mode's dtype, standard normal; int8 small
// integers with unit scales) and, for fp16_fp32acc, with blocked16.
func BenchmarkGemmEmulatorModes(b *testing.B) {
	const n = 512
	for _, mode := range ops.GEMMModes() {
		for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
			if acc == ops.GEMMBlocked16 && mode.Name != "fp16_fp32acc" {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s/%d", mode.Name, acc, n), func(b *testing.B) {
				r := rand.New(rand.NewPCG(n, 9))
				in := map[string]*tensor.Tensor{}
				for _, name := range []string{"a", "b"} {
					t := tensor.MustNew(mode.In, n, n)
					for i := range t.Len() {
						v := r.NormFloat64()
						if mode.Int8() {
							v = float64(r.IntN(255) - 127)
						}
						t.SetFloat64(i, v, tensor.Numerics{})
					}
					in[name] = t
				}
				if mode.Int8() {
					for _, name := range []string{"scale_a", "scale_b"} {
						t := tensor.MustNew(tensor.Float32, 1)
						t.SetFloat64(0, 1, tensor.Numerics{})
						in[name] = t
					}
				}
				cfg, err := ops.ParseGEMM(ops.Params{"mode": mode.Name, "accumulate": acc})
				if err != nil {
					b.Fatal(err)
				}
				done := cpuMeter(b)
				for b.Loop() {
					if _, _, err := GEMM(context.Background(), testDev, cfg, in, GEMMOptions{}); err != nil {
						b.Fatal(err)
					}
				}
				done()
				reportGFLOPs(b, n)
			})
		}
	}
}

// BenchmarkGemmEmulatorBlocked16 is the same with accumulate=blocked16.
func BenchmarkGemmEmulatorBlocked16(b *testing.B) {
	in := benchInputs(256)
	cfg, _ := ops.ParseGEMM(ops.Params{"accumulate": ops.GEMMBlocked16})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := GEMM(context.Background(), testDev, cfg, in, GEMMOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	reportGFLOPs(b, 256)
}

// BenchmarkGemmReference is the float64 reference (reference.GEMM).
func BenchmarkGemmReference(b *testing.B) {
	const n = 256
	in := benchInputs(n)
	a, bb := in["a"].Float64s(), in["b"].Float64s()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		reference.GEMM(n, n, n, a, bb, 1, 0, nil, nil, nil)
	}
	reportGFLOPs(b, n)
}

// gonumGemm multiplies the fp16 inputs, widened to float32, with gonum's
// blas32.Gemm (alpha 1, beta 0).
func gonumGemm(a, b *tensor.Tensor, c []float32) {
	m, k, n := a.Shape[0], a.Shape[1], b.Shape[1]
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1,
		blas32.General{Rows: m, Cols: k, Stride: k, Data: toF32(a)},
		blas32.General{Rows: k, Cols: n, Stride: n, Data: toF32(b)},
		0, blas32.General{Rows: m, Cols: n, Stride: n, Data: c})
}

func toF32(t *tensor.Tensor) []float32 {
	out := make([]float32, t.Len())
	for i := range out {
		out[i] = float32(t.Float64(i))
	}
	return out
}

// BenchmarkGemmGonum is gonum's blas32.Gemm on the same fp16 values (the
// floor the emulator must reach); the float32 conversion of the inputs is
// outside the timed loop.
func BenchmarkGemmGonum(b *testing.B) {
	for _, n := range []int{256, 1024} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			in := benchInputs(n)
			m, k := n, n
			af := blas32.General{Rows: m, Cols: k, Stride: k, Data: toF32(in["a"])}
			bf := blas32.General{Rows: k, Cols: n, Stride: n, Data: toF32(in["b"])}
			c := blas32.General{Rows: m, Cols: n, Stride: n, Data: make([]float32, m*n)}
			b.ResetTimer()
			done := cpuMeter(b)
			for i := 0; i < b.N; i++ {
				blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, af, bf, 0, c)
			}
			done()
			reportGFLOPs(b, n)
		})
	}
}

// gonum's blas32.Gemm keeps k ascending per output element and, on
// fp16-valued inputs (exact products), each step is RN32(c + a·b): it
// computes the sequential model's fp32 accumulators bit for bit. Its
// output rounded to fp16 therefore equals the emulator's fp16_fp32acc
// sequential output. (gonum skips a zero a[i,k], so with Inf or NaN in B
// it would differ; finite inputs only here.)
func TestGonumGemmMatchesSequentialModel(t *testing.T) {
	for _, sh := range [][3]int{{1, 1, 1}, {33, 700, 47}, {64, 4096, 64}, {300, 300, 300}} {
		m, k, n := sh[0], sh[1], sh[2]
		vp, cfg, in := genGEMM(t, ops.Params{}, ops.DistNormal, m, k, n, 5)
		_ = cfg
		got, _, err := GEMM(context.Background(), testDev, cfg, in, GEMMOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := make([]float32, m*n)
		gonumGemm(in["a"], in["b"], c)
		want := tensor.MustNew(tensor.Float16, m, n)
		var diff int
		for i, v := range c {
			want.SetFloat64(i, float64(v), tensor.Numerics{})
			if got.Bits(i) != want.Bits(i) {
				diff++
			}
		}
		if diff > 0 {
			_, i := tensor.BitsEqual(got, want)
			t.Errorf("gemm %v %dx%dx%d seed=5: %d elements differ from gonum blas32.Gemm, first %d: got %g / want %g", vp, m, k, n, diff, i, got.Float64(i), want.Float64(i))
		}
		// The fp32 accumulators themselves: the sequential model with exact
		// products is acc ← RN32(acc + a·b) in float32 arithmetic.
		a, b := toF32(in["a"]), toF32(in["b"])
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var acc float32
				for kk := 0; kk < k; kk++ {
					acc = acc + float32(a[i*k+kk]*b[kk*n+j])
				}
				if v := c[i*n+j]; v != acc {
					t.Fatalf("gemm %dx%dx%d seed=5: fp32 accumulator (%d,%d): got gonum %g / want sequential model %g", m, k, n, i, j, v, acc)
				}
			}
		}
	}
}
