package opdb

import (
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
)

// gemmMutationCases adds the two gemm size classes the checked-in set is
// too small for (the golden recipes have them too, but the mutation score
// leaves recipes out), in the default mode fp16_fp32acc, uniform values:
//
//   - more output blocks than AI cores (16×17×12817: 48 blocks of 16×272
//     on ascend910b's 24 cores, so every core stores a second block);
//   - K past kernels.GEMMSplitK (17×4097×33: 17 L1 panels, the last one a
//     single k), judged by ascend-dual as well as the bound: the
//     systematic precision loss of a split-K path stays inside γ_K·S for
//     K in the thousands, and only the dual benchmark's comparison with
//     the emulator's error statistics shows it. The emulator sums K in
//     the contract's sequential order, the least accurate a kernel would
//     use, so a valid kernel of any order is at least as good on average.
//
// The first case is checked against the tiling, so a profile or tiler
// change that leaves every core on one block fails here, not silently.
func gemmMutationCases(prof npu.Profile) ([]ops.Case, error) {
	const op, mode = "gemm", "fp16_fp32acc"
	cfg, err := ops.ParseGEMM(ops.Params{"mode": mode})
	if err != nil {
		return nil, err
	}
	tiles := [3]int{16, 17, 12817}
	t, err := kernels.NewGEMMTiling(prof, cfg, tiles[0], tiles[1], tiles[2])
	if err != nil {
		return nil, fmt.Errorf("gemm: tiling of %v: %w", tiles, err)
	}
	if t.MaxCoreBlocks() < 2 {
		return nil, fmt.Errorf("gemm: %v has at most %d output block per core on %d cores on profile %s: want a core with several", tiles, t.MaxCoreBlocks(), t.BlockDim, prof.Name)
	}
	deep := [3]int{17, kernels.GEMMSplitK + 1, 33}
	var out []ops.Case
	for _, d := range []struct {
		what   string
		dims   [3]int
		policy string
	}{{"tiles", tiles, ""}, {"deepk", deep, "ascend-dual"}} {
		name := fmt.Sprintf("%s_%s_%dx%dx%d", mode, d.what, d.dims[0], d.dims[1], d.dims[2])
		c := ops.NewCase(op, name, ops.Params{"mode": mode}, map[string]int{"m": d.dims[0], "k": d.dims[1], "n": d.dims[2]}, ops.DistUniform,
			"mode:"+mode, "size:"+d.what)
		c.Labels[0] = "UT"
		c.Policy = d.policy
		out = append(out, c)
	}
	return out, nil
}

// gemm24MutationCases adds gemm24's deep K (17×4100×33, fp16_fp32acc,
// sequential, uniform: 17 L1 panels past kernels.GEMMSplitK), judged by
// ascend-dual like gemm's: the stored recipe of that size is left out of
// the mutation score, and the split-K faults act only there.
func gemm24MutationCases(npu.Profile) ([]ops.Case, error) {
	const op, mode = "gemm24", "fp16_fp32acc"
	name := fmt.Sprintf("%s_deepk_17x%dx33", mode, kernels.GEMMSplitK+4)
	c := ops.NewCase(op, name, ops.Params{"mode": mode, "accumulate": ops.GEMMSequential},
		map[string]int{"m": 17, "k": kernels.GEMMSplitK + 4, "n": 33}, ops.DistUniform, "mode:"+mode, "size:deepk")
	c.Labels[0], c.Policy = "UT", GEMMDualPolicy
	return []ops.Case{c}, nil
}

// sparse24PruneMutationCases adds w past 2^16 elements (257×260 = 66820,
// uniform): the checked-in set stops at 24576 elements and the stored
// recipe is left out of the mutation score, so a 16-bit element offset
// would never wrap there.
func sparse24PruneMutationCases(npu.Profile) ([]ops.Case, error) {
	const op = "sparse24_prune"
	c := ops.NewCase(op, "uniform_257x260", ops.Params{}, map[string]int{"m": 257, "k": 260}, ops.DistUniform, "dtype:fp16", "size:past-2^16")
	c.Labels[0] = "UT"
	return []ops.Case{c}, nil
}
