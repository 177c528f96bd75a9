package suites

import (
	"context"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = registerOp("sparse24_prune", describeSparse24Prune)
var _ = registerOp("gemm24", describeGEMM24)

// describeSparse24Prune declares sparse24_prune's own specs against b:
// idempotence, pruning the decompressed output keeps the same positions
// and values.
func describeSparse24Prune(b Backend) {
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

// describeGEMM24 declares gemm24's own specs against b: with finite b,
// gemm24(prune(w), b) equals gemm(decompress(prune(w)), b) bit for bit
// under either accumulate model.
func describeGEMM24(b Backend) {
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
}
