package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/npuverify/npuverify/tensor"
)

// This file holds what kv_update and decode_attention share: the cache
// parameters, the cache geometry of either layout, the validation of the
// cache's index tensors (seq_lens, seq_ids, block_tables) and the seeded
// generation of a cache whose unwritten positions hold NaN.
//
// Layouts. contiguous: a cache is [S,L,H,D], sequence s position p at row
// s·L+p. paged: a cache is [NB,BS,H,D] (NB physical blocks of BS
// positions) and block_tables [S,MB] int32 maps logical block j of
// sequence s to a physical block (−1: unallocated); position p of s sits
// at row block_tables[s,p/BS]·BS + p mod BS, and a sequence holds at most
// L = MB·BS positions. int8 caches carry fp32 scales, one per row and
// head: [S,L,H] or [NB,BS,H].

// The values of the shared KV-cache parameters.
const (
	KVContiguous = "contiguous"
	KVPaged      = "paged"
	KVFP16       = "fp16"
	KVInt8       = "int8"
)

// kvParamSpecs are the parameters both cache ops take.
func kvParamSpecs() []ParamSpec {
	return []ParamSpec{
		{Name: "layout", Default: KVContiguous, Values: []string{KVContiguous, KVPaged},
			Doc: "contiguous: caches [S,L,H,D]; paged: caches [NB,BS,H,D] with block_tables [S,MB] (−1 unallocated)"},
		{Name: "cache_dtype", Default: KVFP16, Values: []string{KVFP16, KVInt8},
			Doc: "fp16, or int8 with one fp32 scale per token-head (k_scale, v_scale)"},
	}
}

// KVGeom is the geometry of one KV cache, read off the inputs.
type KVGeom struct {
	Paged bool
	Int8  bool
	S     int // sequences
	L     int // positions a sequence can hold (paged: MB·BS)
	H     int // kv heads
	D     int // head size
	NB    int // physical blocks (paged)
	BS    int // positions per block (paged)
	MB    int // logical blocks per sequence (paged)
}

// CacheShape is the shape of k_cache and v_cache.
func (g KVGeom) CacheShape() []int {
	if g.Paged {
		return []int{g.NB, g.BS, g.H, g.D}
	}
	return []int{g.S, g.L, g.H, g.D}
}

// Rows is the number of cache rows (token slots): S·L or NB·BS.
func (g KVGeom) Rows() int {
	if g.Paged {
		return g.NB * g.BS
	}
	return g.S * g.L
}

// CacheDType is the dtype of the cache values.
func (g KVGeom) CacheDType() tensor.DType {
	if g.Int8 {
		return tensor.Int8
	}
	return tensor.Float16
}

// Row returns the cache row of position pos of sequence s, or −1 when its
// block is unallocated. bt is block_tables (nil for contiguous).
func (g KVGeom) Row(bt []int32, s, pos int) int {
	if !g.Paged {
		return s*g.L + pos
	}
	blk := bt[s*g.MB+pos/g.BS]
	if blk < 0 {
		return -1
	}
	return int(blk)*g.BS + pos%g.BS
}

// kvGeom reads the geometry from p and the cache inputs: k_cache must be
// rank 4, and for paged, block_tables rank 2. heads is the name of the
// input whose rank and D are checked against the cache ("x" or "q").
func kvGeom(op Op, p Params, in map[string]*tensor.Tensor) (KVGeom, error) {
	g := KVGeom{Paged: p["layout"] == KVPaged, Int8: p["cache_dtype"] == KVInt8}
	kc, ok := in["k_cache"]
	if !ok || kc == nil {
		return g, fmt.Errorf("%s: input %q is missing", op.Name(), "k_cache")
	}
	want := "[S,L,H,D] (layout=contiguous)"
	if g.Paged {
		want = "[NB,BS,H,D] (layout=paged)"
	}
	if len(kc.Shape) != 4 {
		return g, fmt.Errorf("%s: input %q: rank %d (shape %v), want rank 4 %s", op.Name(), "k_cache", len(kc.Shape), kc.Shape, want)
	}
	sl, ok := in["seq_lens"]
	if !ok || sl == nil {
		return g, fmt.Errorf("%s: input %q is missing", op.Name(), "seq_lens")
	}
	if len(sl.Shape) != 1 {
		return g, fmt.Errorf("%s: input %q: shape %v, want [S]", op.Name(), "seq_lens", sl.Shape)
	}
	g.S, g.H, g.D = sl.Shape[0], kc.Shape[2], kc.Shape[3]
	if !g.Paged {
		if kc.Shape[0] != g.S {
			return g, fmt.Errorf("%s: input %q: shape %v has S=%d sequences, seq_lens has %d", op.Name(), "k_cache", kc.Shape, kc.Shape[0], g.S)
		}
		g.L = kc.Shape[1]
		return g, nil
	}
	g.NB, g.BS = kc.Shape[0], kc.Shape[1]
	bt, ok := in["block_tables"]
	if !ok || bt == nil {
		return g, fmt.Errorf("%s: input %q is missing (required by layout=paged)", op.Name(), "block_tables")
	}
	if len(bt.Shape) != 2 {
		return g, fmt.Errorf("%s: input %q: rank %d (shape %v), want [S,MB]", op.Name(), "block_tables", len(bt.Shape), bt.Shape)
	}
	g.MB = bt.Shape[1]
	g.L = g.MB * g.BS
	return g, nil
}

// kvCacheSpecs are the cache tensors of g in contract order.
func kvCacheSpecs(g KVGeom) []TensorSpec {
	specs := []TensorSpec{
		{Name: "k_cache", DType: g.CacheDType(), Shape: g.CacheShape()},
		{Name: "v_cache", DType: g.CacheDType(), Shape: g.CacheShape()},
	}
	if g.Int8 {
		sh := g.CacheShape()[:3]
		specs = append(specs,
			TensorSpec{Name: "k_scale", DType: tensor.Float32, Shape: sh},
			TensorSpec{Name: "v_scale", DType: tensor.Float32, Shape: sh})
	}
	if g.Paged {
		specs = append(specs, TensorSpec{Name: "block_tables", DType: tensor.Int32, Shape: []int{g.S, g.MB}})
	}
	return specs
}

// matchesSpecs reports whether every spec'd input is present with its
// dtype and shape, so value checks can read them.
// kvInputs completes an op's input contract, head (its own tensors),
// with the caches, seq_lens [S] and seq_ids [B], and, once in matches
// that contract, checks the index tensors (kvCheckIndices).
func kvInputs(op Op, g KVGeom, b int, head []TensorSpec, in map[string]*tensor.Tensor, write, dupOK bool) ([]TensorSpec, error) {
	specs := append(head, kvCacheSpecs(g)...)
	specs = append(specs,
		TensorSpec{Name: "seq_lens", DType: tensor.Int32, Shape: []int{g.S}},
		TensorSpec{Name: "seq_ids", DType: tensor.Int32, Shape: []int{b}})
	if matchesSpecs(specs, in) {
		if err := kvCheckIndices(op, g, in, write, dupOK); err != nil {
			return nil, err
		}
	}
	return specs, nil
}

func matchesSpecs(specs []TensorSpec, in map[string]*tensor.Tensor) bool {
	for _, s := range specs {
		t, ok := in[s.Name]
		if !ok || t == nil {
			if s.Optional {
				continue
			}
			return false
		}
		if t.DType != s.DType || !t.SameShape(s.Shape) {
			return false
		}
	}
	return true
}

// kvCheckIndices validates the index tensors' values, naming the entry at
// fault: seq_lens in [0, L]; seq_ids −1 (padding) or in [0, S), distinct
// unless dupOK; block_tables entries −1 or in [0, NB), allocated for every
// position a sequence named by seq_ids holds (< seq_len) and, when write,
// for its write position seq_len (unless full).
func kvCheckIndices(op Op, g KVGeom, in map[string]*tensor.Tensor, write, dupOK bool) error {
	lens, ids := in["seq_lens"].I32(), in["seq_ids"].I32()
	for s, n := range lens {
		if n < 0 {
			return fmt.Errorf("%s: input %q: seq_lens[%d] = %d is negative", op.Name(), "seq_lens", s, n)
		}
		if int(n) > g.L {
			return fmt.Errorf("%s: input %q: seq_lens[%d] = %d exceeds L = %d positions per sequence", op.Name(), "seq_lens", s, n, g.L)
		}
	}
	var bt []int32
	if g.Paged {
		bt = in["block_tables"].I32()
		for i, v := range bt {
			if v < -1 || int(v) >= g.NB {
				return fmt.Errorf("%s: input %q: block_tables[%d,%d] = %d is outside [-1, NB=%d)", op.Name(), "block_tables", i/g.MB, i%g.MB, v, g.NB)
			}
		}
	}
	seen := map[int32]int{}
	rows := map[int]int{}
	for b, s := range ids {
		if s == -1 {
			continue
		}
		if s < 0 || int(s) >= g.S {
			return fmt.Errorf("%s: input %q: seq_ids[%d] = %d is outside [0, S=%d) and not -1 (padding)", op.Name(), "seq_ids", b, s, g.S)
		}
		if prev, dup := seen[s]; dup && !dupOK {
			return fmt.Errorf("%s: input %q: seq_ids[%d] = %d duplicates seq_ids[%d]", op.Name(), "seq_ids", b, s, prev)
		}
		seen[s] = b
		if !g.Paged {
			continue
		}
		n := int(lens[s])
		for j := 0; j*g.BS < n; j++ {
			if bt[int(s)*g.MB+j] < 0 {
				return fmt.Errorf("%s: input %q: block_tables[%d,%d] = -1 (unallocated) but sequence %d (seq_ids[%d]) holds %d positions", op.Name(), "block_tables", s, j, s, b, n)
			}
		}
		if write && n < g.L {
			j := n / g.BS
			if bt[int(s)*g.MB+j] < 0 {
				return fmt.Errorf("%s: input %q: block_tables[%d,%d] = -1 (unallocated) at the write position %d of sequence %d (seq_ids[%d])", op.Name(), "block_tables", s, j, n, s, b)
			}
			r := g.Row(bt, int(s), n)
			if prev, dup := rows[r]; dup {
				return fmt.Errorf("%s: input %q: seq_ids[%d] and seq_ids[%d] write the same cache row %d (shared physical block %d)", op.Name(), "block_tables", prev, b, r, r/g.BS)
			}
			rows[r] = b
		}
	}
	return nil
}

// KVGenDims are the generation sizes of the cache ops.
type kvGenDims struct {
	B, S, L, H, D, BS, NB int
}

// kvDims reads the generation sizes: b, s, l, d and, for paged, bs (block
// size; l is rounded up to a multiple) and nb (physical blocks; default
// S·MB + 2 spare ones that no table names). Heads are read by the op.
// kvGenGeom checks the distribution and returns the cache geometry a
// KV op's generation sizes describe for params p (layout, cache dtype,
// H = dim h), with the sizes; a cache past half the element cap is an
// error.
func kvGenGeom(op Op, p Params, g Gen) (KVGeom, kvGenDims, error) {
	geo := KVGeom{Paged: p["layout"] == KVPaged, Int8: p["cache_dtype"] == KVInt8}
	if err := checkDist(op, g.Dist); err != nil {
		return geo, kvGenDims{}, err
	}
	d, err := kvDims(op, g, geo.Paged)
	if err != nil {
		return geo, d, err
	}
	h, err := dim(op, g, "h")
	if err != nil {
		return geo, d, err
	}
	geo.S, geo.L, geo.H, geo.D, geo.NB, geo.BS = d.S, d.L, h, d.D, d.NB, d.BS
	if geo.Paged {
		geo.MB = geo.L / geo.BS
	}
	if n, err := tensor.NumElements(append(geo.CacheShape(), 1)); err != nil || n > tensor.MaxElements/2 {
		return geo, d, fmt.Errorf("%s: cache %v too large", op.Name(), geo.CacheShape())
	}
	return geo, d, nil
}

func kvDims(op Op, g Gen, paged bool) (kvGenDims, error) {
	var d kvGenDims
	var err error
	for _, f := range []struct {
		name string
		dst  *int
	}{{"b", &d.B}, {"s", &d.S}, {"l", &d.L}, {"d", &d.D}} {
		if *f.dst, err = dim(op, g, f.name); err != nil {
			return d, err
		}
	}
	if d.D == 0 || d.L == 0 {
		return d, fmt.Errorf("%s: generation sizes l and d must be positive (l=%d d=%d)", op.Name(), d.L, d.D)
	}
	if !paged {
		return d, nil
	}
	if d.BS, err = dim(op, g, "bs"); err != nil {
		return d, err
	}
	if d.BS == 0 {
		return d, fmt.Errorf("%s: generation size bs must be positive", op.Name())
	}
	mb := (d.L + d.BS - 1) / d.BS
	d.L = mb * d.BS
	d.NB = d.S*mb + 2
	if v, ok := g.Dims["nb"]; ok {
		if v < d.S*mb {
			return d, fmt.Errorf("%s: generation size nb=%d is below S·MB = %d", op.Name(), v, d.S*mb)
		}
		d.NB = v
	}
	return d, nil
}

// kvGenIndices makes seq_lens, seq_ids and (paged) block_tables: lengths
// mix empty, full, and len mod BS ∈ {0, 1, BS−1} with random ones;
// seq_ids is a shuffled choice of distinct sequences with every fourth
// entry padding (−1); block tables are a shuffled permutation of the
// physical blocks, entries beyond what a sequence needs (after its write
// position) left −1 half of the time. The first five sequences have the
// lengths BS, 0, L, BS+1 and 2·BS−1 (contiguous: BS = 16), so a batch
// covering them meets every block-boundary case and a full sequence.
func kvGenIndices(rng *rand.Rand, g KVGeom, b int, write bool) (lens, ids, bt *tensor.Tensor) {
	lens = tensor.MustNew(tensor.Int32, g.S)
	ids = tensor.MustNew(tensor.Int32, b)
	bs := g.BS
	if !g.Paged {
		bs = 16
	}
	// The first sequences take the lengths where kernels break: a block
	// multiple, empty, full, one past and one short of a block boundary.
	designated := []int{bs, 0, g.L, bs + 1, 2*bs - 1}
	for s := range g.S {
		var n int
		switch {
		case s < len(designated):
			n = designated[s]
		case rng.IntN(4) == 0:
			n = (rng.IntN(g.L/bs+1))*bs + []int{0, 1, bs - 1}[rng.IntN(3)]
		default:
			n = rng.IntN(g.L + 1)
		}
		if write && s >= len(designated) && n >= g.L && rng.IntN(2) == 0 {
			n = g.L - 1
		}
		lens.I32()[s] = int32(min(max(n, 0), g.L))
	}
	perm := rng.Perm(g.S)
	k := 0
	for i := range b {
		ids.I32()[i] = -1
		if i%4 != 3 && k < len(perm) {
			ids.I32()[i] = int32(perm[k])
			k++
		}
	}
	if !g.Paged {
		return lens, ids, nil
	}
	bt = tensor.MustNew(tensor.Int32, g.S, g.MB)
	phys := rng.Perm(g.NB)
	k = 0
	for s := range g.S {
		need := (int(lens.I32()[s]) + 1 + g.BS - 1) / g.BS // through the write position
		for j := range g.MB {
			v := int32(-1)
			if j < need || rng.IntN(2) == 0 {
				v = int32(phys[k])
				k++
			}
			bt.I32()[s*g.MB+j] = v
		}
	}
	return lens, ids, bt
}

// kvGenCache fills one cache (and for int8 its scale) with values of
// dist at every position < seq_len of every sequence, and NaN (int8: NaN
// scales over random codes) everywhere else, so that a kernel reading an
// unwritten position produces NaN.
func kvGenCache(rng *rand.Rand, dist string, g KVGeom, lens, bt *tensor.Tensor) (cache, scale *tensor.Tensor) {
	cache = tensor.MustNew(g.CacheDType(), g.CacheShape()...)
	codes := cache.I8()
	if g.Int8 {
		scale = tensor.MustNew(tensor.Float32, g.CacheShape()[:3]...)
		scale.Fill(math.NaN(), generationNumerics)
		for i := range codes {
			codes[i] = int8(rng.IntN(255) - 127)
		}
	} else {
		cache.Fill(math.NaN(), generationNumerics)
	}
	var btv []int32
	if bt != nil {
		btv = bt.I32()
	}
	rowLen := g.H * g.D
	row := make([]float64, g.D) // one head's values, stored at once
	for s := range g.S {
		for pos := range int(lens.I32()[s]) {
			r := g.Row(btv, s, pos)
			for h := range g.H {
				off := r*rowLen + h*g.D
				if g.Int8 {
					sc := kvSample(rng, dist) // a non-unit positive scale
					sc = float64(math.Abs(sc)/64) + 1.0/512
					scale.SetFloat64(r*g.H+h, sc, generationNumerics)
					for i := range g.D {
						codes[off+i] = int8(rng.IntN(255) - 127)
					}
					continue
				}
				for i := range row {
					row[i] = kvSample(rng, dist)
				}
				cache.SetFloat64s(off, row, generationNumerics)
			}
		}
	}
	return cache, scale
}

// The distributions of the cache ops.
const (
	// DistPeaked makes attention scores peaked: q is scaled up so one or
	// two positions take almost all the softmax weight.
	DistPeaked = "peaked"
)

// kvSample draws one value: uniform [−1,1), normal, or for special a mix
// of zeros, fp16 subnormals, ties and ordinary values.
func kvSample(rng *rand.Rand, dist string) float64 {
	switch dist {
	case DistNormal:
		return rng.NormFloat64()
	case DistSpecial:
		switch rng.IntN(6) {
		case 0:
			return 0
		case 1:
			return math.Copysign(0, -1)
		case 2:
			return float64(rng.IntN(1023)-511) * math.Ldexp(1, -24) // fp16 subnormals
		case 3:
			return 0.5
		}
	}
	return float64(2*rngFloat64(rng)) - 1
}

// parseKVScale parses decode_attention's scale ("" = 1/√D).
func parseKVScale(op Op, v string) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: param %q: %q is not a number", op.Name(), "scale", v)
	}
	if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
		return 0, fmt.Errorf("%s: param %q: must be finite and positive, got %q", op.Name(), "scale", v)
	}
	return x, nil
}

// KVGeomOf returns the cache geometry of op's validated params and inputs
// (which should hold to its contract).
func KVGeomOf(op Op, p Params, in map[string]*tensor.Tensor) (KVGeom, error) {
	return kvGeom(op, p, in)
}
