package golden

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// opDefaults maps an op to the function that lists its default golden
// cases. An op adds its set here (one function per op, in its own
// defaults_<op>.go file); DefaultCases concatenates them in op order.
var opDefaults = map[string]func() []ops.Case{
	"vector_add": vectorAddDefaults,
}

// DefaultCases returns the default golden case set: the checked-in,
// embedded cases, sorted by op and name. Names are stable: they are the
// directory names under golden/cases/<op>/.
func DefaultCases() []ops.Case {
	var out []ops.Case
	for _, op := range slices.Sorted(maps.Keys(opDefaults)) {
		cs := opDefaults[op]()
		slices.SortFunc(cs, func(a, b ops.Case) int {
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
		out = append(out, cs...)
	}
	return out
}

// CaseSeed derives a case's seed from its op and name, so seeds never
// change when cases are added or reordered.
func CaseSeed(op, name string) uint64 {
	h := fnv.New32a()
	h.Write([]byte(op + "/" + name))
	return uint64(h.Sum32())
}

// newCase builds a default case with its seed and the common labels.
func newCase(op, name string, params ops.Params, dims map[string]int, dist string, labels ...string) ops.Case {
	return ops.Case{
		Name: name, Op: op, Params: params, Dims: dims, Dist: dist, Seed: CaseSeed(op, name),
		Labels: append([]string{"ST", "op:" + op}, labels...),
	}
}

// saturate is the numerics profile of older parts: ±max on overflow, NaN→0.
var saturate = tensor.Numerics{Overflow: tensor.OverflowSaturate}

// VectorAddSizes are the sizes the default vector_add set covers for one
// dtype, derived from the emulator's tiling (kernels.VectorAddTilingWith)
// on the default ascend910b profile.
type VectorAddSizes struct {
	// Edge are the fixed edge sizes: 0, 1, and ±1 around 16, 32, 128, 256.
	Edge []int
	// Tile is the largest UB tile in elements (the double-buffered x, y, z
	// of 2×3 buffers filling the 192 KiB UB: 32 KiB per buffer, so 16384
	// fp16/bf16, 8192 fp32, 32768 int8 elements). The set has Tile−1,
	// Tile, Tile+1.
	Tile int
	// Pass is the smallest multi-core pass: one 32-byte UB block on every
	// vector core (48 × 16 fp16/bf16, 48 × 8 fp32, 48 × 32 int8). The set
	// has Pass−1 (the last core's block is partial), Pass (every core one
	// whole block) and Pass+1 (the first core takes a second block).
	//
	// A full pass at the largest tile on every core (48 × Tile elements)
	// would be 1.5 MiB per tensor, 4.5 MiB per case; the checked-in set
	// stays small, so the per-core tile loop boundary at 48·Tile ± 1 is
	// left to the UT and perf suites, which generate it on the fly.
	Pass int
}

// vectorAddSizes computes the default sizes for dtype d.
func vectorAddSizes(d tensor.DType) VectorAddSizes {
	prof := npu.Ascend910B()
	s := VectorAddSizes{Edge: []int{0, 1, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257}}
	big, err := kernels.NewVectorAddTiling(prof, tensor.MaxElements, d)
	if err != nil {
		panic(fmt.Sprintf("golden: vector_add tiling for %s: %v", d, err))
	}
	s.Pass = big.BlockDim * big.BlockElems
	s.Tile = big.MaxTileElems
	return s
}

// vectorAddDefaults is the default vector_add set: per dtype (fp16, bf16,
// fp32, int8)
//
//   - uniform inputs at every edge, tile and pass size (VectorAddSizes);
//   - special values (±0, ±inf, NaN, subnormals, max, sums that
//     overflow), cancellation (x ≈ −y) and large magnitudes at n = 257;
//   - special and large again under the saturate numerics profile.
//
// Names are <dtype>_<dist>_n<N>, with a _sat suffix for saturate.
func vectorAddDefaults() []ops.Case {
	const op = "vector_add"
	var out []ops.Case
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
		ds := d.String()
		sz := vectorAddSizes(d)
		add := func(dist string, n int, num *tensor.Numerics, labels ...string) {
			name := fmt.Sprintf("%s_%s_n%d", ds, dist, n)
			if num != nil {
				name += "_sat"
				labels = append(labels, "numerics:saturate")
			}
			c := newCase(op, name, ops.Params{"dtype": ds}, map[string]int{"n": n}, dist,
				append([]string{"dtype:" + ds, "dist:" + dist}, labels...)...)
			c.Numerics = num
			out = append(out, c)
		}
		for _, n := range sz.Edge {
			add(ops.DistUniform, n, nil, "size:edge")
		}
		for _, n := range []int{sz.Tile - 1, sz.Tile, sz.Tile + 1} {
			add(ops.DistUniform, n, nil, "size:tile")
		}
		for _, n := range []int{sz.Pass - 1, sz.Pass, sz.Pass + 1} {
			add(ops.DistUniform, n, nil, "size:pass")
		}
		for _, dist := range []string{ops.DistSpecial, ops.DistCancel, ops.DistLarge} {
			add(dist, 257, nil, "values:"+dist)
		}
		for _, dist := range []string{ops.DistSpecial, ops.DistLarge} {
			num := saturate
			add(dist, 257, &num, "values:"+dist)
		}
	}
	return out
}
