package reference

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemm24IntoMatchesLoop holds Gemm24 (dgemm.MulAbsELL where a and b
// are fp32 values) to the plain sparse loop, d and S bit for bit (NaN
// aside), on shapes crossing MulAbsELL's panels and row blocks, with
// fp16-like values, ±0, and with an Inf or NaN in a's kept values or in b
// (which only the rows whose kept values meet it may see).
func TestGemm24IntoMatchesLoop(t *testing.T) {
	const seed = 43
	r := rand.New(rand.NewPCG(seed, 0))
	for _, sh := range [][3]int{{1, 4, 1}, {7, 12, 5}, {33, 520, 17}, {100, 64, 9}, {20, 8, 48}} {
		m, k, n := sh[0], sh[1], sh[2]
		for _, special := range []string{"none", "zeros", "a-inf", "a-nan", "b-inf", "b-nan"} {
			w := make([]float64, m*k)
			for i := range w {
				w[i] = math.Ldexp(math.Round(math.Ldexp(r.NormFloat64(), 10)), -10)
			}
			b := make([]float64, k*n)
			for i := range b {
				b[i] = math.Ldexp(math.Round(math.Ldexp(r.NormFloat64(), 10)), -10)
				if special == "zeros" && i%3 == 0 {
					b[i] = math.Copysign(0, -1)
				}
			}
			keep := Prune24(w, m, k)
			values := make([]float64, m*k/2)
			for g := range m * k / 4 {
				values[2*g], values[2*g+1] = w[4*g+keep[2*g]], w[4*g+keep[2*g+1]]
			}
			switch special {
			case "a-inf":
				values[r.IntN(len(values))] = math.Inf(1)
			case "a-nan":
				values[r.IntN(len(values))] = math.NaN()
			case "b-inf":
				b[r.IntN(len(b))] = math.Inf(-1)
			case "b-nan":
				b[r.IntN(len(b))] = math.NaN()
			}
			d, s := Gemm24(m, k, n, values, keep, b)
			wd, ws := make([]float64, m*n), make([]float64, m*n)
			gemm24Loop(m, k, n, values, keep, b, wd, ws)
			for i := range wd {
				if !sameBits(d[i], wd[i]) || !sameBits(s[i], ws[i]) {
					t.Fatalf("gemm24 m=%d k=%d n=%d special=%s seed=%d: element %d: got d=%v s=%v / want the sparse loop's d=%v s=%v",
						m, k, n, special, seed, i, d[i], s[i], wd[i], ws[i])
				}
			}
		}
	}
}
