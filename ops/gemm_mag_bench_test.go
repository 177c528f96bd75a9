package ops

import (
	"fmt"
	"testing"
)

// BenchmarkGEMMMag32 is S = |A|·|B| in fp32 (fp16 inputs), rows on all
// cores: the packing and the row blocks of gemmMag32, at 1024³ (|B|
// packed whole) and at a decoding step's 16×4096×11008 (|B| packed 256
// rows of K at a time, its packing most of the work).
func BenchmarkGEMMMag32(b *testing.B) {
	for _, sh := range [][3]int{{1024, 1024, 1024}, {16, 4096, 11008}} {
		m, k, n := sh[0], sh[1], sh[2]
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			p, _ := GEMM.Validate(Params{"mode": "fp16_fp32acc"})
			in, err := GEMM.Generate(p, Gen{Dims: map[string]int{"m": m, "k": k, "n": n}, Dist: DistNormal, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			s := make([]float64, m*n)
			for b.Loop() {
				g := newGEMMMag32(in["a"], in["b"], k, n)
				g.rows(0, m, s, func(int, int) {})
			}
			b.ReportMetric(2*float64(m*n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
