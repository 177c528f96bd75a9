package opdb

import (
	"fmt"
	"slices"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// VectorAdd is vector_add's record.
var VectorAdd = Register(&Info{
	Op:            ops.VectorAdd,
	Kernel:        kernels.VectorAddKernel,
	Faults:        kernels.VectorAddFaults,
	Variants:      vectorAddVariants,
	GoldenCases:   vectorAddGolden,
	Samples:       vectorAddSamples,
	MutationCases: vectorAddMutationCases,
	FuzzTarget:    "FuzzVectorAdd",
	// Header bytes: dtype, n (2 bytes LE), cores, tile (2 bytes LE),
	// saturate; then the element bit patterns.
	FuzzSeeds: [][]byte{
		{0, 2, 0, 1, 0, 0, 0, 0x00, 0x3c, 0x00, 0xbc},
		{0, 33, 0, 7, 16, 0, 0, 0xff, 0x7b, 0xff, 0x7b}, // fp16 max + max
		{0, 129, 0, 48, 1, 0, 1, 0x00, 0x7c, 0x00, 0xfc, 0x01, 0x7e},
		{1, 1, 1, 3, 5, 0, 0, 0x80, 0x7f, 0x01, 0x00},   // bf16 inf, subnormal
		{3, 31, 0, 2, 32, 0, 1, 0x7f, 0x7f, 0x80, 0x80}, // int8 saturation
		{2, 17, 0, 5, 9, 0, 0, 0xff, 0xff, 0x7f, 0x7f, 0x01, 0, 0, 0},
	},
	FuzzDecode: vectorAddFuzz,
})

// vectorAddVariants are the valid vector_add kernels the default checks
// must accept. vector_add has no reduction, so "another order" is another
// core count with unaligned tiles (every tile copied with DataCopyPad,
// shares of uneven size); the other runs on one core looping over many
// tiles of the largest size. The last two hold the sanitizer to no false
// alarm on other still-correct synchronisation: a single-buffered queue
// pipeline, and a double-buffered one whose small tiles reuse each
// ping-pong buffer many times per core.
var vectorAddVariants = []kernels.Variant{
	{Name: "summation-order", Op: "vector_add", Options: kernels.VectorAddOptions{BlockDim: 7, TileElems: 49}},
	{Name: "tiling-cores", Op: "vector_add", Options: kernels.VectorAddOptions{BlockDim: 1}},
	{Name: "single-buffer", Op: "vector_add", Options: kernels.VectorAddOptions{BlockDim: 3, TileElems: 64, BufferNum: 1}},
	{Name: "ping-pong-reuse", Op: "vector_add", Options: kernels.VectorAddOptions{BlockDim: 2, TileElems: 48}},
}

// VectorAddSizes are the sizes the default vector_add set covers for one
// dtype, derived from the emulator's tiling (kernels.NewVectorAddTiling)
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
	// left to the mutation cases and the UT and perf suites, which
	// generate it on the fly.
	Pass int
	// MultiTile is 48·Tile + 1: the largest tile on every core plus one
	// element, so the first core loops over two tiles.
	MultiTile int
}

// List returns every size of s: the edges, Tile and Pass each ±1, and a
// full pass at the largest tile ±1 (MultiTile − 2 … MultiTile), in that
// order. The UT samples run them all; the golden set stores the small
// ones and keeps the large as recipes.
func (s VectorAddSizes) List() []int {
	return slices.Concat(s.Edge, []int{s.Tile - 1, s.Tile, s.Tile + 1, s.Pass - 1, s.Pass, s.Pass + 1,
		s.MultiTile - 2, s.MultiTile - 1, s.MultiTile})
}

// NewVectorAddSizes computes the sizes for dtype d on prof.
func NewVectorAddSizes(prof npu.Profile, d tensor.DType) (VectorAddSizes, error) {
	s := VectorAddSizes{Edge: []int{0, 1, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257}}
	big, err := kernels.NewVectorAddTiling(prof, tensor.MaxElements, d)
	if err != nil {
		return s, fmt.Errorf("vector_add: tiling for %s: %w", d, err)
	}
	s.Pass = big.BlockDim * big.BlockElems
	s.Tile = big.MaxTileElems
	s.MultiTile = big.BlockDim*big.MaxTileElems + 1
	return s, nil
}

// saturate is the numerics profile of older parts: ±max on overflow, NaN→0.
var saturate = tensor.Numerics{Overflow: tensor.OverflowSaturate}

// vectorAddGolden is the default vector_add set: per dtype (fp16, bf16,
// fp32, int8)
//
//   - uniform inputs at every edge, tile and pass size (VectorAddSizes);
//   - special values (±0, ±inf, NaN, subnormals, max, sums that
//     overflow), cancellation (x ≈ −y) and large magnitudes at n = 257;
//   - special and large again under the saturate numerics profile;
//   - the large sizes of vectorAddRecipeSizes, as recipes.
//
// Names are <dtype>_<dist>_n<N>, with a _sat suffix for saturate.
func vectorAddGolden() []ops.Case {
	const op = "vector_add"
	var out []ops.Case
	for _, d := range VectorAddDTypes() {
		ds := d.String()
		sz, err := NewVectorAddSizes(npu.Ascend910B(), d)
		if err != nil {
			panic(err) // the default profile's tiling is a package invariant
		}
		add := func(dist string, n int, num *tensor.Numerics, labels ...string) {
			name := fmt.Sprintf("%s_%s_n%d", ds, dist, n)
			if num != nil {
				name += "_sat"
				labels = append(labels, "numerics:saturate")
			}
			c := ops.NewCase(op, name, ops.Params{"dtype": ds}, map[string]int{"n": n}, dist,
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
		for _, n := range vectorAddRecipeSizes[d] {
			add(ops.DistUniform, n, nil, "size:large")
			out[len(out)-1].Recipe = true
		}
	}
	return out
}

// vectorAddRecipeSizes are the large sizes of the default set, stored as
// golden recipes (case.json with hashes, no .npy; docs/golden.md): for
// fp16, around 2^16 elements, where a 16-bit index wraps (65535, 65536,
// 65537), 10^6 and 2^20 + 1, past the one-tile-per-core boundary
// (48·Tile + 1 = 786433), and 1000, an unaligned size no other case has;
// for every other dtype 2^16 + 1, so each dtype has a size past 2^16.
// The larger sizes cost about a second each in every default check, so
// they are not repeated per dtype (the mutation score's generated cases
// take every dtype past its tile loop boundary).
var vectorAddRecipeSizes = map[tensor.DType][]int{
	tensor.Float16:  {1000, 1<<16 - 1, 1 << 16, 1<<16 + 1, 1000000, 1<<20 + 1},
	tensor.BFloat16: {1<<16 + 1},
	tensor.Float32:  {1<<16 + 1},
	tensor.Int8:     {1<<16 + 1},
}

// vectorAddMutationCases adds, per dtype, the multi-tile size
// (VectorAddSizes.MultiTile, 0.4–1.6 M elements, uniform values): the
// golden set stops at one UB tile per core, so a bug in a core's tile
// loop (a skipped last tile, a stale double-buffer tile) never shows
// there.
func vectorAddMutationCases(prof npu.Profile) ([]ops.Case, error) {
	const op = "vector_add"
	var out []ops.Case
	for _, d := range VectorAddDTypes() {
		sz, err := NewVectorAddSizes(prof, d)
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%s_%s_n%d", d, ops.DistUniform, sz.MultiTile)
		c := ops.NewCase(op, name, ops.Params{"dtype": d.String()}, map[string]int{"n": sz.MultiTile}, ops.DistUniform,
			"dtype:"+d.String(), "size:multi-tile")
		c.Labels[0] = "UT"
		out = append(out, c)
	}
	return out, nil
}

// vectorAddFuzz decodes a dtype, a length below 5000, a core count and a
// tile size (kernel options, so the fuzzer explores tilings too) and the
// overflow mode; x and y take their bit patterns from the rest.
func vectorAddFuzz(data []byte) (FuzzInput, bool) {
	if len(data) < 7 {
		return FuzzInput{}, false
	}
	dtypes := VectorAddDTypes()
	d := dtypes[int(data[0])%len(dtypes)]
	n := int(uint16(data[1])|uint16(data[2])<<8) % 5000
	cores := 1 + int(data[3])%npu.Ascend910B().VectorCores
	tile := int(uint16(data[4])|uint16(data[5])<<8) % 4096
	var num tensor.Numerics
	if data[6]&1 == 1 {
		num.Overflow = tensor.OverflowSaturate
	}
	body := data[7:]
	return FuzzInput{
		Params:   ops.Params{"dtype": d.String()},
		Inputs:   map[string]*tensor.Tensor{"x": FromBytes(d, body, 0, n), "y": FromBytes(d, body, len(body)/2+1, n)},
		Numerics: num,
		Variant:  &kernels.Variant{Name: "fuzz", Op: "vector_add", Options: kernels.VectorAddOptions{BlockDim: cores, TileElems: tile}},
	}, true
}

// VectorAddDTypes are vector_add's dtypes, in the order its contract
// lists them (the dtype parameter's values).
func VectorAddDTypes() []tensor.DType {
	var out []tensor.DType
	for _, s := range ops.VectorAdd.ParamSpecs() {
		if s.Name != "dtype" {
			continue
		}
		for _, v := range s.Values {
			d, err := tensor.ParseDType(v)
			if err != nil {
				panic(fmt.Sprintf("opdb: vector_add's contract lists dtype %q: %v", v, err)) // a contract invariant
			}
			out = append(out, d)
		}
	}
	return out
}

// vectorAddSamples: every dtype × every size of VectorAddSizes on the
// default profile × every distribution (the sizes past 2^16 with uniform
// values only: they test tiling, not values).
func vectorAddSamples() []ops.Case {
	var out []ops.Case
	for _, d := range VectorAddDTypes() {
		sz, err := NewVectorAddSizes(npu.Ascend910B(), d)
		if err != nil {
			panic(err) // the default profile's tiling is a package invariant
		}
		for _, n := range sz.List() {
			for _, dist := range []string{ops.DistUniform, ops.DistNormal, ops.DistSpecial, ops.DistCancel, ops.DistLarge} {
				if n > 1<<16 && dist != ops.DistUniform {
					continue
				}
				out = append(out, sample("vector_add", fmt.Sprintf("n=%d dist=%s", n, dist), ops.Params{"dtype": d.String()},
					map[string]int{"n": n}, dist, uint64(1000+n), "dtype:"+d.String()))
			}
		}
	}
	return out
}
