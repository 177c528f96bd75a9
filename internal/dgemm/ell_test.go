package dgemm

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ellLoop is MulAbsELL's definition: each row's entries in order, the
// product rounded, then the sum, from +0.
func ellLoop(m, kh, n int, vals []float64, cols []int, b, d, s []float64) {
	for i := range m {
		for j := range n {
			var dd, ss float64
			for t := range kh {
				x, y := vals[i*kh+t], b[cols[i*kh+t]*n+j]
				dd += float64(x * y)
				ss += float64(math.Abs(x) * math.Abs(y))
			}
			d[i*n+j], s[i*n+j] = dd, ss
		}
	}
}

// ellCase is a seeded m×k a with kh entries a row, at ascending columns
// drawn from [0, k), and b [k,n], both of dist.
func ellCase(r *rand.Rand, dist, m, k, kh, n int) (vals []float64, cols []int, b []float64) {
	vals, b = gen(r, dist, m*kh), gen(r, dist, k*n)
	for range m {
		row := r.Perm(k)[:kh]
		slices.Sort(row)
		cols = append(cols, row...)
	}
	return vals, cols, b
}

func TestMulAbsELLMatchesLoop(t *testing.T) {
	const seed = 41
	r := rand.New(rand.NewPCG(seed, 0))
	for _, dist := range []int{distFP16, distFP32, distZeros, distSubnorm, distSpecial} {
		for _, sh := range [][4]int{{1, 1, 1, 1}, {3, 8, 4, 16}, {17, 40, 20, 33}, {5, 9, 0, 20}, {33, 64, 32, 50}, {2, 100, 50, 15}, {20, 16, 16, 48}, {9, 700, 300, 40}, {4, 600, 3, 16}} {
			m, k, kh, n := sh[0], sh[1], sh[2], sh[3]
			vals, cols, b := ellCase(r, dist, m, k, kh, n)
			want, wantS := make([]float64, m*n), make([]float64, m*n)
			ellLoop(m, kh, n, vals, cols, b, want, wantS)
			got, gotS := make([]float64, m*n), make([]float64, m*n)
			for i := range got { // overwritten, whatever was there
				got[i], gotS[i] = math.NaN(), -1
			}
			MulAbsELL(m, k, kh, n, vals, cols, b, got, gotS)
			for i := range want {
				if !same(got[i], want[i]) || !same(gotS[i], wantS[i]) {
					t.Errorf("dist=%d m=%d k=%d kh=%d n=%d seed=%d: MulAbsELL element (%d,%d) = d %v s %v, want %v %v (the loop)", dist, m, k, kh, n, seed, i/n, i%n, got[i], gotS[i], want[i], wantS[i])
					break
				}
			}
		}
	}
}

// TestELLKernelMatchesGo holds the assembly row kernel to ellRowGo on
// whole panels, special values included.
func TestELLKernelMatchesGo(t *testing.T) {
	if ellKernel == nil {
		t.Skip("no assembly row kernel on this machine")
	}
	const seed = 43
	r := rand.New(rand.NewPCG(seed, 0))
	for _, dist := range []int{distFP16, distFP32, distZeros, distSubnorm, distSpecial} {
		for _, kh := range []int{1, 2, 7, 64} {
			const k = 130
			vals, cols, panel := ellCase(r, dist, 1, k, kh, ellWidth)
			var d, s, wd, ws [ellWidth]float64
			ellKernel(kh, &vals[0], &cols[0], &panel[0], &d[0], &s[0])
			ellRowGo(kh, ellWidth, vals, cols, panel, wd[:], ws[:])
			for j := range d {
				if !same(d[j], wd[j]) || !same(s[j], ws[j]) {
					t.Fatalf("dist=%d kh=%d seed=%d: ellKernel column %d = d %v s %v, want %v %v (ellRowGo)", dist, kh, seed, j, d[j], s[j], wd[j], ws[j])
				}
			}
		}
	}
}

// BenchmarkMulAbsELL is gemm24's reference product at its BenchmarkSteps
// shape, 512×1024×512 with two of every four k kept: MulAbsELL on the kept
// values beside MulAbs on the dense form (the anchor: what the reference
// ran before), in the same run.
func BenchmarkMulAbsELL(b *testing.B) {
	const m, k, n, seed = 512, 1024, 512, 1
	r := rand.New(rand.NewPCG(seed, 0))
	vals, cols, y := ellCase(r, distFP16, m, k, k/2, n)
	dense := make([]float64, m*k)
	for i, c := range cols {
		dense[i/(k/2)*k+c] = vals[i]
	}
	d, s := make([]float64, m*n), make([]float64, m*n)
	b.Run("anchor-dense-MulAbs", func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			MulAbs(m, k, n, Slice(dense), Slice(y), d, s)
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	})
	b.Run("ell", func(b *testing.B) {
		cpu0 := cpuTime()
		for b.Loop() {
			MulAbsELL(m, k, k/2, n, vals, cols, y, d, s)
		}
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	})
}
