package ops

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// Sparse24Prune is the sparse24_prune contract.
var Sparse24Prune Op = sparse24Prune{}

// sparse24_prune: w [M,K] fp16, K a multiple of 4 → values [M,K/2] fp16,
// meta [M,K/4] uint8. In every group of four along K the two largest |w|
// are kept (a NaN counts as larger than every number; equal magnitudes
// and NaNs among themselves go to the lower index), in ascending index
// order; meta holds the first kept index in bits 0–1 and the second in
// bits 2–3 (bits 4–7 zero). The values are bit copies of w (NaN payloads
// and the sign of zero included), so both outputs are judged exactly.
type sparse24Prune struct{}

// DistTies draws from {0, ±0.5, ±1}: groups of four with equal
// magnitudes, where the tie rule decides what is kept.
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
	return []DimSpec{{Name: "m", Doc: "rows of w"}, {Name: "k", Doc: "columns of w, a multiple of 4"}}
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
// exactly), so both outputs have one acceptable value per element, bound
// 0: the kept w bit for bit (a NaN accepted as any NaN) and the meta byte.
// values is an ordinary Expected (Ref the kept w, Bound 0, or NaN with
// Alt its class for a non-finite one); meta, whose every element is an
// exact small integer, is compact (bound.NewExactFrom over the meta
// bytes): an integer exact element accepts exactly the value that Bound
// 0 accepts, so the verdicts and metrics are those of the ordinary form
// (TestSparse24PruneExpectMatchesReference holds both to the float64
// reference, reference.Prune24, bit for bit).
func (op sparse24Prune) Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	m, k, _ := pruneDims(op, in)
	w := in["w"]
	groups := m * k / 4
	vals := bound.NewExpected(2 * groups)
	metaB := make([]uint8, groups)
	bits := w.F16()
	// A block of groups at a time: w's values converted by the tensor
	// (exact), the selection made on its bits (prune24Meta).
	const blockGroups = 1024
	parallel.For(groups, 4*blockGroups, func(lo, hi int) {
		buf := make([]float64, 4*blockGroups)
		for g0 := lo; g0 < hi; g0 += blockGroups {
			g1 := min(hi, g0+blockGroups)
			wv := buf[:4*(g1-g0)]
			w.Float64sFrom(4*g0, wv)
			ref, bnd, alt := vals.Ref[2*g0:2*g1], vals.Bound[2*g0:2*g1], vals.Alt[2*g0:2*g1]
			for j := range g1 - g0 {
				g := g0 + j
				mb := prune24Meta(bits[4*g : 4*g+4 : 4*g+4])
				metaB[g] = mb
				for t, x := range [2]float64{wv[4*j+int(mb&3)], wv[4*j+int(mb>>2)]} {
					ref[2*j+t] = x
					if c := bound.Of(x); c != 0 {
						alt[2*j+t], bnd[2*j+t] = c, math.NaN()
					}
				}
			}
		}
	})
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
// are distinct, and the two kept are those that fewer than two others
// outrank.
func prune24Meta(w []float16.Float16) uint8 {
	w = w[:4]
	var s [4]uint32
	for i, b := range w {
		s[i] = min(uint32(b)&0x7FFF, 0x7C01)<<2 | uint32(3-i)
	}
	g01, g02, g03 := b2u(s[0] > s[1]), b2u(s[0] > s[2]), b2u(s[0] > s[3])
	g12, g13, g23 := b2u(s[1] > s[2]), b2u(s[1] > s[3]), b2u(s[2] > s[3])
	// above[i]: how many of the others outrank i.
	above0 := 3 - g01 - g02 - g03
	above1 := g01 + 2 - g12 - g13
	above2 := g02 + g12 + 1 - g23
	above3 := g03 + g13 + g23
	mask := b2u(above0 < 2) | b2u(above1 < 2)<<1 | b2u(above2 < 2)<<2 | b2u(above3 < 2)<<3
	return prune24MetaOf[mask]
}

// prune24MetaOf maps a mask of the two kept positions to its meta byte.
var prune24MetaOf = func() (t [16]uint8) {
	for a := range 4 {
		for b := a + 1; b < 4; b++ {
			t[1<<a|1<<b] = EncodeMeta24(a, b)
		}
	}
	return t
}()

// b2u is 1 for true and 0 for false.
func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
