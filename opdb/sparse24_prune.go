package opdb

import (
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Sparse24Prune is sparse24_prune's record.
var Sparse24Prune = Register(&Info{
	Op:            ops.Sparse24Prune,
	Kernel:        kernels.Sparse24PruneKernel,
	Faults:        kernels.Sparse24PruneFaults,
	Variants:      sparse24PruneVariants,
	GoldenCases:   sparse24PruneGolden,
	Samples:       sparse24PruneSamples,
	MutationCases: sparse24PruneMutationCases,
	FuzzTarget:    "FuzzSparse24Prune",
	// Header bytes: m, k/4, cores, tile; then the fp16 bit patterns.
	FuzzSeeds: [][]byte{
		{2, 1, 0, 0, 0x00, 0x3c, 0x00, 0xbc, 0x00, 0x3c, 0x00, 0x00},
		{3, 5, 2, 1, 0x00, 0x7e, 0x00, 0x7c, 0x01, 0x00, 0x00, 0x80},
		{1, 40, 7, 3, 0xff, 0x7b, 0xff, 0xfb, 0x00, 0x38},
	},
	FuzzDecode: sparse24PruneFuzz,
})

// sparse24PruneVariants: another core count with tiles that cut the
// shares unevenly (selection is exact, so the outputs must not change).
var sparse24PruneVariants = []kernels.Variant{
	{Name: "tiling-cores", Op: "sparse24_prune", Options: kernels.Sparse24PruneOptions{BlockDim: 3, TileGroups: 7}},
}

// sparse24PruneGolden: edge shapes (K = 0, one group, one row), ties,
// special values (NaN, ±Inf, ±0, subnormals) and a multi-core shape.
func sparse24PruneGolden() []ops.Case {
	const op = "sparse24_prune"
	var out []ops.Case
	add := func(dist string, m, k int) {
		name := fmt.Sprintf("%s_%dx%d", dist, m, k)
		out = append(out, ops.NewCase(op, name, ops.Params{}, map[string]int{"m": m, "k": k}, dist, "dtype:fp16", "dist:"+dist))
	}
	add(ops.DistUniform, 33, 68)
	add(ops.DistUniform, 1, 4)
	add(ops.DistUniform, 5, 0)
	add(ops.DistTies, 17, 64)
	add(ops.DistSpecial, 16, 64)
	add(ops.DistNormal, 96, 256)
	// A recipe (large, stored as hashes; docs/golden.md): 363943 groups,
	// past the 48 cores × 7552 groups of one UB tile each (the kernel's
	// tile: w, values and meta double-buffered in the 192 KiB UB), so each
	// core loops over a second tile; w has 1.46 M elements.
	add(ops.DistUniform, 1031, 1412)
	out[len(out)-1].Recipe = true
	return out
}

// sparse24PruneFuzz decodes M ≤ 32, K = 4·(0…63), a core count and a tile
// size; w takes its fp16 bit patterns from the rest.
func sparse24PruneFuzz(data []byte) (FuzzInput, bool) {
	if len(data) < 4 {
		return FuzzInput{}, false
	}
	m, k := 1+int(data[0])%32, 4*(int(data[1])%64)
	cores := 1 + int(data[2])%npu.Ascend910B().VectorCores
	tile := 1 + int(data[3])%97
	return FuzzInput{
		Params:  ops.Params{},
		Inputs:  map[string]*tensor.Tensor{"w": FromBytes(tensor.Float16, data[4:], 0, m, k)},
		Variant: &kernels.Variant{Name: "fuzz", Op: "sparse24_prune", Options: kernels.Sparse24PruneOptions{BlockDim: cores, TileGroups: tile}},
	}, true
}

// Sparse24Shapes are the M×K shapes the sparse24_prune and gemm24 samples
// cover (K a multiple of 4): empty K, one group, K off the 32 and 64
// fractal edges, many rows.
var Sparse24Shapes = [][2]int{{1, 0}, {1, 4}, {3, 8}, {16, 28}, {17, 36}, {33, 68}, {16, 128}, {64, 260}}

// sparse24PruneSamples: every shape × distribution (selection is exact).
func sparse24PruneSamples() []ops.Case {
	var out []ops.Case
	for _, s := range Sparse24Shapes {
		for _, dist := range ops.Sparse24Prune.Dists() {
			out = append(out, sample("sparse24_prune", fmt.Sprintf("%dx%d dist=%s", s[0], s[1], dist), ops.Params{},
				map[string]int{"m": s[0], "k": s[1]}, dist, uint64(s[0]*1000+s[1])))
		}
	}
	return out
}
