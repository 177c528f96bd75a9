package suites

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/suites/matchers"
	"github.com/npuverify/npuverify/tensor"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// DescribeEmulatorVectorAdd declares the specs that only make sense for the
// emulator's own vector_add kernel: results bit-identical whatever the core
// count and tile size, and cost-model budgets (label perf). They carry the
// label emulator: against another backend they would only test the
// emulator again, so the suites skip them then.
func DescribeEmulatorVectorAdd(prof npu.Profile) bool {
	return Describe("emulator vector_add", Label(PrefixOp+"vector_add", LabelEmulator), func() {
		dev := npu.MustNewDevice(prof)
		gen := func(d tensor.DType, n int, dist string, seed uint64) (ops.Case, map[string]*tensor.Tensor) {
			GinkgoHelper()
			c := ops.Case{Op: "vector_add", Params: ops.Params{"dtype": d.String()}, Dims: map[string]int{"n": n}, Dist: dist, Seed: seed}
			pc, err := harness.Prepare(c)
			Expect(err).NotTo(HaveOccurred())
			return c, pc.Inputs
		}

		Context("tiling", Label("UT"), func() {
			for _, d := range opdb.VectorAddDTypes() {
				It("gives bit-identical results for every core count and tile size, "+d.String(), Label("dtype:"+d.String()), func(ctx context.Context) {
					for _, n := range []int{0, 1, 33, 1000, 4097} {
						c, in := gen(d, n, ops.DistSpecial, uint64(n))
						ref, _, err := kernels.VectorAdd(ctx, dev, in["x"], in["y"], kernels.VectorAddOptions{})
						Expect(err).NotTo(HaveOccurred())
						blocks := 32 / d.Size()
						for _, opt := range []kernels.VectorAddOptions{
							{BlockDim: 1}, {BlockDim: 2}, {BlockDim: 7}, {BlockDim: prof.VectorCores},
							{TileElems: 1}, {TileElems: blocks}, {TileElems: 3 * blocks}, {BlockDim: 5, TileElems: blocks + 1},
						} {
							z, _, err := kernels.VectorAdd(ctx, dev, in["x"], in["y"], opt)
							Expect(err).NotTo(HaveOccurred(), "%s n=%d options %+v", harness.Subject(c), n, opt)
							Expect(z).To(matchers.MatchGoldenBits(ref, harness.Subject(c)), "n=%d options %+v vs default tiling", n, opt)
						}
					}
				})
			}
		})

		Context("cost model", Label("perf"), func() {
			It("stays within every golden case's cycle and GM-byte budget", func(ctx context.Context) {
				results, err := golden.Check(ctx, golden.Embedded(), emulator.New(prof), golden.CheckOptions{Exact: golden.ExactNever})
				Expect(err).NotTo(HaveOccurred())
				for _, r := range results {
					Expect(r.Err).NotTo(HaveOccurred())
					Expect(r.Checks).NotTo(BeEmpty(), "%s: no budget checked", r.ID)
					for _, b := range r.Checks {
						Expect(b.Pass).To(BeTrue(), "%s: %s: %s", harness.Subject(r.Case), b.Name, b.Detail)
					}
				}
			})

			for _, d := range opdb.VectorAddDTypes() {
				sz, err := opdb.NewVectorAddSizes(prof, d)
				if err != nil {
					panic(err)
				}
				sizes := sz.List()
				It("moves exactly 3·N·itemsize GM bytes, "+d.String(), Label("dtype:"+d.String()), func(ctx context.Context) {
					for _, n := range sizes {
						c, in := gen(d, n, ops.DistUniform, 1)
						_, cost, err := kernels.VectorAdd(ctx, dev, in["x"], in["y"], kernels.VectorAddOptions{})
						Expect(err).NotTo(HaveOccurred())
						Expect(cost.GMBytesIn+cost.GMBytesOut).To(Equal(int64(3*n*d.Size())),
							"%s n=%d: GM bytes in+out = %d+%d, want 3·%d·%d", harness.Subject(c), n, cost.GMBytesIn, cost.GMBytesOut, n, d.Size())
						Expect(cost.GMBytesOut).To(Equal(int64(n*d.Size())), "%s n=%d: GM bytes out", harness.Subject(c), n)
					}
				})
				It("keeps every core within 10% of the busiest once N fills every core, "+d.String(), Label("dtype:"+d.String()), func(ctx context.Context) {
					t, err := kernels.NewVectorAddTiling(prof, tensor.MaxElements, d)
					Expect(err).NotTo(HaveOccurred())
					// From one block per core up to several tiles per core, and
					// awkward sizes in between.
					for _, n := range []int{t.BlockDim * t.BlockElems, t.BlockDim*t.BlockElems*3 + 1, t.BlockDim*t.MaxTileElems - 1, t.BlockDim*t.MaxTileElems*2 + 12345} {
						c, in := gen(d, n, ops.DistUniform, 2)
						_, cost, err := kernels.VectorAdd(ctx, dev, in["x"], in["y"], kernels.VectorAddOptions{})
						Expect(err).NotTo(HaveOccurred())
						Expect(cost.BlockDim).To(Equal(prof.VectorCores), "%s n=%d: cores launched", harness.Subject(c), n)
						Expect(cost.LoadBalance).To(BeNumerically(">=", 0.9),
							"%s n=%d: load balance (min/max core cycles %s), want ≥ 0.9", harness.Subject(c), n, fmt.Sprint(cost.CoreCycles))
					}
				})
			}
		})
	})
}
