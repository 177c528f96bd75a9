package suites

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Sparse24Shapes are the M×K shapes the sparse24_prune and gemm24 specs
// cover (K a multiple of 4): empty K, one group, K off the 32 and 64
// fractal edges, many rows.
var Sparse24Shapes = [][2]int{{1, 0}, {1, 4}, {3, 8}, {16, 28}, {17, 36}, {33, 68}, {16, 128}, {64, 260}}

var _ = registerOp("sparse24_prune", DescribeSparse24Prune)
var _ = registerOp("gemm24", DescribeGEMM24)

// DescribeSparse24Prune declares the sparse24_prune UT specs against b:
// every shape × distribution judged exactly, and idempotence: pruning the
// decompressed output keeps the same positions and values.
func DescribeSparse24Prune(b Backend) bool {
	return Describe("sparse24_prune", Label("UT", "op:sparse24_prune"), func() {
		var entries []TableEntry
		for _, s := range Sparse24Shapes {
			for _, dist := range ops.Sparse24Prune.Dists() {
				entries = append(entries, Entry(nil, s, dist))
			}
		}
		DescribeTable("selects exactly",
			func(ctx context.Context, s [2]int, dist string) {
				c := ops.Case{Op: "sparse24_prune", Params: ops.Params{}, Dims: map[string]int{"m": s[0], "k": s[1]}, Dist: dist, Seed: uint64(s[0]*1000 + s[1])}
				runWithinBound(ctx, b(), c)
			},
			func(s [2]int, dist string) string { return fmt.Sprintf("%dx%d dist=%s", s[0], s[1], dist) },
			entries,
		)
		It("is idempotent on its own output", func(ctx context.Context) {
			for _, dist := range []string{ops.DistTies, ops.DistSpecial, ops.DistUniform} {
				c := ops.Case{Op: "sparse24_prune", Params: ops.Params{}, Dims: map[string]int{"m": 9, "k": 64}, Dist: dist, Seed: 24}
				res := runWithinBound(ctx, b(), c)
				vals, meta := res.Outputs["values"], res.Outputs["meta"]
				w2 := decompress24(vals, meta)
				out, _, err := b().Run(ctx, "sparse24_prune", ops.Params{}, map[string]*tensor.Tensor{"w": w2})
				Expect(err).NotTo(HaveOccurred(), "%s: second prune", harness.Subject(c))
				for _, name := range []string{"values", "meta"} {
					same, i := tensor.BitsEqual(out[name], res.Outputs[name])
					Expect(same).To(BeTrue(), "%s: prune(decompress(prune(w))) differs in %q at element %d", harness.Subject(c), name, i)
				}
			}
		})
	})
}

// decompress24 scatters values [M,K/2] into a dense fp16 [M,K] by meta,
// +0 at the pruned positions (bit copies of the values).
func decompress24(vals, meta *tensor.Tensor) *tensor.Tensor {
	m, k := vals.Shape[0], 2*vals.Shape[1]
	w := tensor.MustNew(vals.DType, m, k)
	keep := ops.MetaKeep(meta)
	for g := 0; g < m*k/4; g++ {
		w.SetBits(4*g+keep[2*g], vals.Bits(2*g))
		w.SetBits(4*g+keep[2*g+1], vals.Bits(2*g+1))
	}
	return w
}

// DescribeGEMM24 declares the gemm24 UT specs against b: every mode ×
// shape × accumulate model × distribution within gemm's bound for K/2
// terms, and the property that with finite b, gemm24(prune(w), b) equals
// gemm(decompress(prune(w)), b) bit for bit under either accumulate model.
func DescribeGEMM24(b Backend) bool {
	return Describe("gemm24", Label("UT", "op:gemm24"), func() {
		for _, mode := range []string{"fp16_fp32acc", "int8_int32acc"} {
			Context(mode, func() {
				var entries []TableEntry
				for _, s := range Sparse24Shapes {
					for _, n := range []int{1, 17} {
						for _, dist := range ops.GEMM24.Dists() {
							entries = append(entries, Entry(nil, [3]int{s[0], s[1], n}, dist, ops.GEMMSequential))
						}
						entries = append(entries, Entry(nil, [3]int{s[0], s[1], n}, ops.DistUniform, ops.GEMMBlocked16))
					}
				}
				DescribeTable("is within bound",
					func(ctx context.Context, s [3]int, dist, acc string) {
						c := ops.Case{Op: "gemm24", Params: ops.Params{"mode": mode, "accumulate": acc},
							Dims: map[string]int{"m": s[0], "k": s[1], "n": s[2]}, Dist: dist, Seed: uint64(s[0]*1_000_000 + s[1]*1000 + s[2])}
						runWithinBound(ctx, b(), c)
					},
					func(s [3]int, dist, acc string) string {
						return fmt.Sprintf("%dx%dx%d dist=%s accumulate=%s", s[0], s[1], s[2], dist, acc)
					},
					entries,
				)
			})
		}
		It("equals gemm on the decompressed operand bit for bit", func(ctx context.Context) {
			for _, acc := range []string{ops.GEMMSequential, ops.GEMMBlocked16} {
				for _, s := range [][3]int{{17, 68, 9}, {32, 256, 33}} {
					c := ops.Case{Op: "gemm24", Params: ops.Params{"accumulate": acc},
						Dims: map[string]int{"m": s[0], "k": s[1], "n": s[2]}, Dist: ops.DistNormal, Seed: 2424}
					res := runWithinBound(ctx, b(), c)
					in := res.Inputs
					dense := decompress24(in["a_values"], in["a_meta"])
					out, _, err := b().Run(ctx, "gemm", ops.Params{"mode": "fp16_fp32acc", "accumulate": acc},
						map[string]*tensor.Tensor{"a": dense, "b": in["b"]})
					Expect(err).NotTo(HaveOccurred(), "%s: dense gemm", harness.Subject(c))
					same, i := tensor.BitsEqual(res.Outputs["out"], out["out"])
					Expect(same).To(BeTrue(), "%s: gemm24 and gemm(decompress) differ at element %d: got %v, want %v",
						harness.Subject(c), i, res.Outputs["out"].Float64(max(i, 0)), out["out"].Float64(max(i, 0)))
				}
			}
		})
	})
}
