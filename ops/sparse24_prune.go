package ops

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
)

// Sparse24Prune is the sparse24_prune contract.
var Sparse24Prune = Register(sparse24Prune{})

// sparse24_prune: w [M,K] fp16, K a multiple of 4 → values [M,K/2] fp16,
// meta [M,K/4] uint8. In every group of four along K the two largest |w|
// are kept (a NaN counts as larger than every number; equal magnitudes
// and NaNs among themselves go to the lower index), in ascending index
// order; meta holds the first kept index in bits 0–1 and the second in
// bits 2–3 (bits 4–7 zero). The values are bit copies of w (NaN payloads
// and the sign of zero included), so both outputs are judged exactly (a
// NaN as any NaN: see Expect).
type sparse24Prune struct{}

// DistTies is the distribution of constructed ties, where a tie rule of
// the contract decides the result. sparse24_prune draws from
// {0, ±0.5, ±1}: groups of four with equal magnitudes, where the tie rule
// decides what is kept. kv_update builds rounding ties of its int8
// quantiser (ops/kv_update_ties.go).
const DistTies = "ties"

// EncodeMeta24 packs a group's kept indices first < second (both < 4)
// into a meta byte.
func EncodeMeta24(first, second int) uint8 { return uint8(first | second<<2) }

// DecodeMeta24 unpacks a meta byte. ok is false for a malformed byte: bits
// above 3 set (an index of 4 or more spilled out of its field) or first ≥
// second.
func DecodeMeta24(b uint8) (first, second int, ok bool) {
	first, second = int(b&3), int(b>>2&3)
	return first, second, b < 16 && first < second
}

// CheckMeta24 fails on the first malformed byte of a meta tensor [M,G],
// naming the tensor and the entry.
func CheckMeta24(op, name string, meta *tensor.Tensor) error {
	g := meta.Shape[len(meta.Shape)-1]
	for i, b := range meta.U8() {
		if _, _, ok := DecodeMeta24(b); !ok {
			why := "first index ≥ second"
			if b >= 16 {
				why = "bits 4–7 set (an index ≥ 4)"
			}
			return fmt.Errorf("%s: input %q: entry [%d,%d] = 0x%02x is malformed: %s", op, name, i/g, i%g, b, why)
		}
	}
	return nil
}

func (sparse24Prune) Name() string { return "sparse24_prune" }

func (sparse24Prune) Doc() string {
	return "2:4 structured pruning: keep the two largest |w| of every four along K (NaN largest, ties to the lower index); values and meta"
}

func (sparse24Prune) ParamSpecs() []ParamSpec { return nil }

func (sparse24Prune) DimSpecs() []DimSpec {
	return []DimSpec{{Name: "m", Doc: "rows of w"}, {Name: "k", Doc: "columns of w, a multiple of 4", Multiple: 4}}
}

// Dists: uniform, normal, special and large fill w element-wise; ties
// draws from {0, ±0.5, ±1} so most groups hold equal magnitudes.
func (sparse24Prune) Dists() []string {
	return []string{DistUniform, DistNormal, DistSpecial, DistLarge, DistTies}
}

func (op sparse24Prune) Validate(p Params) (Params, error) { return validate(op, p) }

// fillTies fills a tensor from {0, ±0.5, ±1}.
func fillTies(rng *rand.Rand, d tensor.DType, shape ...int) (*tensor.Tensor, error) {
	t, err := tensor.New(d, shape...)
	if err != nil {
		return nil, err
	}
	vals := []float64{0, 0.5, -0.5, 1, -1, math.Copysign(0, -1)}
	for i := 0; i < t.Len(); i++ {
		t.SetFloat64(i, vals[rng.IntN(len(vals))], generationNumerics)
	}
	return t, nil
}

func (op sparse24Prune) Generate(p Params, g Gen) (map[string]*tensor.Tensor, error) {
	if err := checkDist(op, g.Dist); err != nil {
		return nil, err
	}
	m, err := dim(op, g, "m")
	if err != nil {
		return nil, err
	}
	k, err := dim(op, g, "k")
	if err != nil {
		return nil, err
	}
	if k%4 != 0 {
		return nil, fmt.Errorf("%s: generation size \"k\" = %d is not a multiple of 4", op.Name(), k)
	}
	var w *tensor.Tensor
	if g.Dist == DistTies {
		w, err = fillTies(g.Rand(), tensor.Float16, m, k)
	} else {
		w, err = Fill(g.Rand(), g.Dist, tensor.Float16, m, k)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name(), err)
	}
	return map[string]*tensor.Tensor{"w": w}, nil
}

// pruneDims returns M and K of w, failing with a message naming w when it
// is missing, not a matrix, or K is not a multiple of 4.
func pruneDims(op Op, in map[string]*tensor.Tensor) (m, k int, err error) {
	w := in["w"]
	if w == nil {
		return 0, 0, fmt.Errorf("%s: input %q is missing", op.Name(), "w")
	}
	if len(w.Shape) != 2 {
		return 0, 0, fmt.Errorf("%s: input %q: shape %v, want [M,K]", op.Name(), "w", w.Shape)
	}
	if w.Shape[1]%4 != 0 {
		return 0, 0, fmt.Errorf("%s: input %q: K = %d is not a multiple of 4", op.Name(), "w", w.Shape[1])
	}
	return w.Shape[0], w.Shape[1], nil
}

func (op sparse24Prune) Inputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	m, k, err := pruneDims(op, in)
	if err != nil {
		return nil, err
	}
	return []TensorSpec{{Name: "w", DType: tensor.Float16, Shape: []int{m, k}}}, nil
}

func (op sparse24Prune) Outputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	m, k, err := pruneDims(op, in)
	if err != nil {
		return nil, err
	}
	return []TensorSpec{
		{Name: "values", DType: tensor.Float16, Shape: []int{m, k / 2}},
		{Name: "meta", DType: tensor.Uint8, Shape: []int{m, k / 4}},
	}, nil
}

// Expect: the selection is exact (magnitudes of fp16 values compare
// exactly), so both outputs have one acceptable value per element, and
// both are compact all-exact Expected sets (bound.NewExactFrom): values
// over the kept w's bits, gathered here into a tensor of the output's
// shape (2 bytes an element where an ordinary Expected took 17), meta
// over the meta bytes. A kept value is a copy, exact under copyNumerics
// whatever num says: it must be the kept w bit for bit, −0 ≠ +0, a NaN
// accepted as any NaN (bound.Identical: the bound policy does not judge
// payloads; the exact policy against a golden does). A meta byte is an
// exact small integer, which an exact element accepts exactly as Bound 0
// would (TestSparse24PruneExpectMatchesReference holds both outputs to
// the float64 reference, reference.Prune24, element by element).
func (op sparse24Prune) Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	m, k, _ := pruneDims(op, in)
	groups := m * k / 4
	kept, err := tensor.New(tensor.Float16, m, k/2)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name(), err)
	}
	metaB := make([]uint8, groups)
	bits, vb := in["w"].F16(), kept.F16()
	// The selection made on w's bits (prune24Meta), the kept bits gathered.
	parallel.For(groups, 4096, func(lo, hi int) {
		for g := lo; g < hi; g++ {
			q := bits[4*g : 4*g+4 : 4*g+4]
			mb := prune24Meta(uint16(q[0]), uint16(q[1]), uint16(q[2]), uint16(q[3]))
			metaB[g] = mb
			a, b, _ := DecodeMeta24(mb)
			vb[2*g], vb[2*g+1] = q[a], q[b]
		}
	})
	vals := bound.NewExactFrom(2*groups, tensor.Float16, copyNumerics, kept.Float64sFrom)
	meta := bound.NewExactFrom(groups, tensor.Uint8, num, func(off int, r []float64) {
		for j, b := range metaB[off : off+len(r)] {
			r[j] = float64(b)
		}
	})
	return map[string]*bound.Expected{"values": vals, "meta": meta}, nil
}

// prune24Meta is the meta byte of one group of four fp16 values, given as
// their bits: reference.Prune24's selection made on the bits. A value's
// rank key is its magnitude's bits, |w| ordered as integers, ±0 equal,
// every NaN the one key above +Inf's; below the key, 3 − index, so that
// of equal magnitudes (or NaNs) the lower index ranks higher. The keys
// are distinct: their six pairwise comparisons are an order of the four,
// whose two highest a table gives (prune24MetaOf). Keys are below 2^17,
// so x > y is the sign bit of y − x as a uint32 (no branch: which of four
// values wins is random).
func prune24Meta(w0, w1, w2, w3 uint16) uint8 {
	s0 := min(uint32(w0)&0x7FFF, 0x7C01)<<2 | 3
	s1 := min(uint32(w1)&0x7FFF, 0x7C01)<<2 | 2
	s2 := min(uint32(w2)&0x7FFF, 0x7C01)<<2 | 1
	s3 := min(uint32(w3)&0x7FFF, 0x7C01) << 2
	c := (s1-s0)>>31 | (s2-s0)>>31<<1 | (s3-s0)>>31<<2 | (s2-s1)>>31<<3 | (s3-s1)>>31<<4 | (s3-s2)>>31<<5
	return prune24MetaOf[c&63]
}

// prune24MetaOf maps the comparisons of prune24Meta (bit 0: s0 > s1, 1:
// s0 > s2, 2: s0 > s3, 3: s1 > s2, 4: s1 > s3, 5: s2 > s3) of four
// distinct keys to the meta byte of the two highest. It is filled from
// every order of four keys; the comparisons no order gives stay 0.
var prune24MetaOf = func() (t [64]uint8) {
	for p := range 256 {
		s := [4]int{p & 3, p >> 2 & 3, p >> 4 & 3, p >> 6}
		if s[0] == s[1] || s[0] == s[2] || s[0] == s[3] || s[1] == s[2] || s[1] == s[3] || s[2] == s[3] {
			continue
		}
		c, bit := 0, 0
		for i := range 4 {
			for j := i + 1; j < 4; j++ {
				if s[i] > s[j] {
					c |= 1 << bit
				}
				bit++
			}
		}
		var kept []int
		for i := range 4 {
			if s[i] >= 2 { // the ranks 2 and 3 of 0..3: the two highest
				kept = append(kept, i)
			}
		}
		t[c] = EncodeMeta24(kept[0], kept[1])
	}
	return t
}()
