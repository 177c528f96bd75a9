package ops

import "testing"

// BenchmarkGEMMMag32 is S = |A|·|B| in fp32 at 1024³ (fp16 inputs), rows
// on all cores: the packing and the row blocks of gemmMag32.
func BenchmarkGEMMMag32(b *testing.B) {
	const n = 1024
	p, _ := GEMM.Validate(Params{"mode": "fp16_fp32acc"})
	in, err := GEMM.Generate(p, Gen{Dims: map[string]int{"m": n, "k": n, "n": n}, Dist: DistNormal, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	s := make([]float64, n*n)
	for b.Loop() {
		g := newGEMMMag32(in["a"], in["b"], n, n)
		g.rows(0, n, s, func(int, int) {})
	}
	b.ReportMetric(2*float64(n*n*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
