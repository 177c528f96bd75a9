package ops

import (
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// TestGemm24ExpectMatchesInterval holds gemm24's Expect (rows over all
// cores, their fast path) to the reference product evaluated serially on
// the interval path, bit for bit, in both modes, on every distribution,
// on shapes crossing the product's blocking. (reference's
// TestGemm24IntoMatchesLoop holds the product to the sparse loop.)
func TestGemm24ExpectMatchesInterval(t *testing.T) {
	const seed = 41
	for _, mode := range []string{"fp16_fp32acc", "int8_int32acc"} {
		for _, dims := range []map[string]int{{"m": 7, "k": 12, "n": 5}, {"m": 33, "k": 520, "n": 17}, {"m": 100, "k": 64, "n": 9}} {
			for _, dist := range GEMM24.Dists() {
				for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
					p, err := GEMM24.Validate(Params{"mode": mode})
					if err != nil {
						t.Fatal(err)
					}
					in, err := GEMM24.Generate(p, Gen{Dims: dims, Dist: dist, Seed: seed})
					if err != nil {
						t.Fatal(err)
					}
					got, err := GEMM24.Expect(p, in, num)
					if err != nil {
						t.Fatal(err)
					}
					cfg, _ := ParseGEMM24(p)
					m, k, n := dims["m"], dims["k"], dims["n"]
					keep := MetaKeep(in["a_meta"])
					vals, b := in["a_values"].Float64s(), in["b"].Float64s()
					d, s := reference.Gemm24(m, k, n, vals, keep, b)
					dense := reference.Decompress24(m, k, vals, keep)
					ev, err := newGEMMEval(cfg, k/2, num)
					if err != nil {
						t.Fatal(err)
					}
					ev.plain = false
					var sa, sb []float64
					if cfg.Mode.Int8() {
						sa, sb = in["scale_a"].Float64s(), in["scale_b"].Float64s()
					}
					want := bound.NewExpected(m * n)
					ev.rows(want, 0, 0, m, d, s, &gemmDense{af: dense, bf: b}, nil, sa, sb, k, n)
					if i := firstExpectedDiff(got["out"], want); i >= 0 {
						t.Fatalf("gemm24 mode=%s %v dist=%s num=%s seed=%d: element %d: got %s / want %s (sparse loop, interval path)", mode, dims, dist, num, seed, i, expectedAt(got["out"], i), expectedAt(want, i))
					}
				}
			}
		}
	}
}
