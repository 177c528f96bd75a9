package ops

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// GEMM24 is the gemm24 contract.
var GEMM24 = Register(gemm24{})

// gemm24 is the 2:4 structured-sparse GEMM (the cube's sparse mode):
// a_values [M,K/2] and a_meta [M,K/4] (as made by sparse24_prune), b [K,N]
// → out [M,N]. Row i's compressed value t multiplies row k_t of b, where
// k_t = 4·(t/2) + (first or second index of meta[i, t/2]); pruned k are
// never multiplied. Modes fp16_fp32acc (default; out fp16) and
// int8_int32acc (scale_a [M] or [1], scale_b [N] or [1] in fp32, as in
// gemm; out fp16). accumulate as in gemm over the kept k ascending:
// sequential, one rounding per kept product, or blocked16, one rounding per
// 16-wide block of the dense K (its 8 kept products), so that gemm24(a, b)
// equals gemm(decompress(a), b) bit for bit under either model whenever b
// is finite (a zero product leaves an accumulator that is never −0
// unchanged). No alpha, beta or c.
//
// The bound is gemm's (ops/gemm_bound.go, the same code) with K/2
// products per dot product. Malformed meta (bits 4–7 set, i.e. an index
// ≥ 4, or first ≥ second) and shapes that disagree (K not a multiple of
// 4, a_values not [M,K/2], a_meta not [M,K/4]) are input errors naming the
// tensor.
type gemm24 struct{}

var gemm24Modes = []string{"fp16_fp32acc", "int8_int32acc"}

// ParseGEMM24 validates p and returns it as a gemm configuration (alpha 1,
// beta 0), the form gemm's bound and epilogue take.
func ParseGEMM24(p Params) (GEMMConfig, error) {
	v, err := gemm24{}.Validate(p)
	if err != nil {
		return GEMMConfig{}, err
	}
	cfg, err := ParseGEMM(Params{"mode": v["mode"], "accumulate": v["accumulate"]})
	cfg.Layout = layoutOf(v)
	return cfg, err
}

func (gemm24) Name() string { return "gemm24" }

func (gemm24) Doc() string {
	return "2:4 structured-sparse GEMM: out = A·B with A as sparse24_prune's values and meta (only kept k multiplied); fp16_fp32acc or int8_int32acc"
}

// ParamSpecs: b and out take FRACTAL_NZ like gemm's; n is needed when b
// is NZ and N is not a multiple of its C0 (M and K come from a_values and
// a_meta). There is no format_a (Validate refuses one other than ND,
// naming it): a is sparse24_prune's output, the kept values [M,K/2] with
// their 2:4 metadata [M,K/4], a compressed matrix in the sparse cube's own
// index format (each meta byte names the kept positions of one group of
// four values of its row). An NZ a_values would spread a row's groups
// over fractal columns that a_meta, one byte per group in row order, no
// longer lines up with, and Ascend's sparse matmul takes the compressed a
// and its index from the compression tool as they are.
func (gemm24) ParamSpecs() []ParamSpec {
	return append([]ParamSpec{
		{Name: "mode", Default: "fp16_fp32acc", Values: gemm24Modes,
			Doc: "precision (in/acc/out): fp16_fp32acc fp16/fp32/fp16, int8_int32acc int8/int32/fp16 with fp32 scale_a, scale_b"},
		{Name: "accumulate", Default: GEMMSequential, Values: []string{GEMMSequential, GEMMBlocked16},
			Doc: "sequential: acc ← RN(acc + a_k·b_k) over the kept k ascending; blocked16: one rounding per 16-wide block of K"},
	}, gemmLayoutSpecs(false, []string{"n"})...)
}

func (gemm24) DimSpecs() []DimSpec {
	return []DimSpec{
		{Name: "m", Doc: "rows of a and out"},
		{Name: "k", Doc: "dense columns of a, rows of b (a multiple of 4)", Multiple: 4},
		{Name: "n", Doc: "columns of b and out"},
	}
}

// Dists: fp16 draws a dense w (uniform, normal, large or special) and
// prunes it with the reference; int8 draws the values and random valid
// meta. b is drawn from the same distribution. prunedinf is uniform with,
// in fp16, a few isolated ±Inf in b (one per column in up to three
// columns), each at a k that some row of a prunes: there the contract's
// output stays finite while a dense product of the decompressed matrix
// gives 0·inf = NaN (int8 holds no infinity: uniform).
func (gemm24) Dists() []string {
	return []string{DistUniform, DistNormal, DistLarge, DistSpecial, DistPrunedInf}
}

// DistPrunedInf is gemm24's distribution of isolated infinities in b at
// pruned positions (see gemm24.Dists).
const DistPrunedInf = "prunedinf"

func (op gemm24) Validate(p Params) (Params, error) {
	if f, ok := p["format_a"]; ok {
		if f != FormatND {
			return nil, fmt.Errorf("%s: param %q: invalid value %q: a stays ND (sparse24_prune's values and their 2:4 meta are the sparse cube's own format); only format_b and format_out take %s",
				op.Name(), "format_a", f, FormatFractalNZ)
		}
		// ND is what a is: accepted, and left out of the canonical form.
		p = p.Clone()
		delete(p, "format_a")
	}
	v, err := validate(op, p)
	if err != nil {
		return nil, err
	}
	if err := validateLayout(op, v, []string{"n"}); err != nil {
		return nil, err
	}
	return v, nil
}

func (op gemm24) Generate(p Params, g Gen) (map[string]*tensor.Tensor, error) {
	if err := checkDist(op, g.Dist); err != nil {
		return nil, err
	}
	var dims [2]int
	for i, name := range []string{"m", "k"} {
		v, err := dim(op, g, name)
		if err != nil {
			return nil, err
		}
		dims[i] = v
	}
	m, k := dims[0], dims[1]
	if k%4 != 0 {
		return nil, fmt.Errorf("%s: generation size \"k\" = %d is not a multiple of 4", op.Name(), k)
	}
	cfg, err := ParseGEMM24(p)
	if err != nil {
		return nil, err
	}
	l := cfg.Layout
	n, err := genExtent(op, g, "n", l.N, []string{l.B}, []int{TransDataC0(cfg.Mode.In)})
	if err != nil {
		return nil, err
	}
	if err := checkGEMMSize(op, cfg, m, k/2, n); err != nil {
		return nil, err
	}
	rng := g.Rand()
	dist := g.Dist
	if dist == DistPrunedInf {
		dist = DistUniform // the infinities are placed below
	}
	in := map[string]*tensor.Tensor{}
	if cfg.Mode.Int8() {
		if in["a_values"], err = Fill(rng, dist, tensor.Int8, m, k/2); err != nil {
			return nil, fmt.Errorf("%s: %w", op.Name(), err)
		}
		in["a_meta"] = randomMeta(rng, m, k/4)
	} else {
		w, err := Fill(rng, dist, tensor.Float16, m, k)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op.Name(), err)
		}
		in["a_values"], in["a_meta"] = Prune24Tensors(w)
	}
	if in["b"], err = Fill(rng, dist, cfg.Mode.In, k, n); err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name(), err)
	}
	if g.Dist == DistPrunedInf && !cfg.Mode.Int8() {
		prunedInfs(rng, in["a_meta"], in["b"])
	}
	if cfg.Mode.Int8() {
		for _, s := range []struct {
			name string
			n    int
		}{{"scale_a", m}, {"scale_b", n}} {
			t := tensor.MustNew(tensor.Float32, s.n)
			for i := 0; i < s.n; i++ {
				t.SetFloat64(i, (1+float64(2*rngFloat64(rng)))/256, generationNumerics)
			}
			in[s.name] = t
		}
	}
	if err := layOut(op, in, map[string]string{"b": l.B}); err != nil {
		return nil, err
	}
	return in, nil
}

// prunedInfs sets ±Inf in b [K,N] at one k of each of up to three
// columns, a k that at least one row of meta [M,K/4] prunes (tried in a
// random order; a column where no row prunes any k is left finite).
func prunedInfs(rng *rand.Rand, meta, b *tensor.Tensor) {
	k, n := b.Shape[0], b.Shape[1]
	m := meta.Shape[0]
	prunedBy := func(kk int) bool {
		for i := range m {
			f, s, _ := DecodeMeta24(meta.U8()[i*(k/4)+kk/4])
			if kk%4 != f && kk%4 != s {
				return true
			}
		}
		return false
	}
	for _, j := range rng.Perm(n)[:min(n, 3)] {
		for _, kk := range rng.Perm(k) {
			if prunedBy(kk) {
				b.SetFloat64(kk*n+j, math.Copysign(math.Inf(1), float64(rng.IntN(2))-0.5), generationNumerics)
				break
			}
		}
	}
}

// randomMeta draws a valid meta byte for each of rows × groups.
func randomMeta(rng *rand.Rand, rows, groups int) *tensor.Tensor {
	pairs := [][2]int{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}
	t := tensor.MustNew(tensor.Uint8, rows, groups)
	for i := range t.U8() {
		p := pairs[rng.IntN(len(pairs))]
		t.U8()[i] = EncodeMeta24(p[0], p[1])
	}
	return t
}

// Prune24Tensors is the reference 2:4 pruning of an fp16 w [M,K] (K a
// multiple of 4) as tensors: the kept values (bit copies) and the meta.
func Prune24Tensors(w *tensor.Tensor) (values, meta *tensor.Tensor) {
	m, k := w.Shape[0], w.Shape[1]
	keep := reference.Prune24(w.Float64s(), m, k)
	values, meta = tensor.MustNew(w.DType, m, k/2), tensor.MustNew(tensor.Uint8, m, k/4)
	for g := 0; g < m*k/4; g++ {
		values.SetBits(2*g, w.Bits(4*g+keep[2*g]))
		values.SetBits(2*g+1, w.Bits(4*g+keep[2*g+1]))
		meta.U8()[g] = EncodeMeta24(keep[2*g], keep[2*g+1])
	}
	return values, meta
}

// MetaKeep decodes a valid meta tensor into kept positions, two per
// group (the form reference.Gemm24 takes).
func MetaKeep(meta *tensor.Tensor) []int {
	keep := make([]int, 2*meta.Len())
	for g, b := range meta.U8() {
		keep[2*g], keep[2*g+1], _ = DecodeMeta24(b)
	}
	return keep
}

// gemm24Dims returns M, K, N: M from a_values, K and N from b. K not a
// multiple of 4 is an error naming b; the other shapes are held to [M,K/2]
// and [M,K/4] by CheckInputs.
func gemm24Dims(op Op, in map[string]*tensor.Tensor) (m, k, n int, err error) {
	for _, name := range []string{"a_values", "a_meta", "b"} {
		t := in[name]
		if t == nil {
			return 0, 0, 0, fmt.Errorf("%s: input %q is missing", op.Name(), name)
		}
		if len(t.Shape) != 2 {
			return 0, 0, 0, fmt.Errorf("%s: input %q: shape %v, want a matrix", op.Name(), name, t.Shape)
		}
	}
	b := in["b"]
	if b.Shape[0]%4 != 0 {
		return 0, 0, 0, fmt.Errorf("%s: input %q: K = %d rows is not a multiple of 4", op.Name(), "b", b.Shape[0])
	}
	return in["a_values"].Shape[0], b.Shape[0], b.Shape[1], nil
}

// gemm24Shape is gemm24Dims in cfg's layout: M from a_values, K from
// a_meta (4 per byte) and b, N from b (or the param n).
func gemm24Shape(op Op, cfg GEMMConfig, in map[string]*tensor.Tensor) (m, k, n int, err error) {
	l := cfg.Layout
	if l.B == FormatND && l.N == 0 {
		return gemm24Dims(op, in)
	}
	for _, name := range []string{"a_values", "a_meta", "b"} {
		if in[name] == nil {
			return 0, 0, 0, fmt.Errorf("%s: input %q is missing", op.Name(), name)
		}
	}
	meta := in["a_meta"]
	if len(meta.Shape) != 2 || len(in["a_values"].Shape) != 2 {
		return 0, 0, 0, fmt.Errorf("%s: inputs \"a_values\" %v and \"a_meta\" %v: want matrices", op.Name(), in["a_values"].Shape, meta.Shape)
	}
	bR, bC, err := operandCarriers(op, "b", "format_b", l.B, in["b"], cfg.Mode.In)
	if err != nil {
		return 0, 0, 0, err
	}
	if k, err = resolveExtent(op, "k", 0, []gemmCarrier{{tensor: "a_meta", v: 4 * meta.Shape[1]}, bR}); err != nil {
		return 0, 0, 0, err
	}
	if n, err = resolveExtent(op, "n", l.N, []gemmCarrier{bC}); err != nil {
		return 0, 0, 0, err
	}
	return in["a_values"].Shape[0], k, n, nil
}

// GEMM24Shape returns M, K, N of a gemm24 case in any layout (GEMM24Dims
// reads an ND b only).
func GEMM24Shape(p Params, in map[string]*tensor.Tensor) (m, k, n int, err error) {
	cfg, err := ParseGEMM24(p)
	if err != nil {
		return 0, 0, 0, err
	}
	return gemm24Shape(gemm24{}, cfg, in)
}

// GEMM24Dims returns M, K, N of a gemm24 input set.
func GEMM24Dims(in map[string]*tensor.Tensor) (m, k, n int, err error) {
	return gemm24Dims(gemm24{}, in)
}

func (op gemm24) Inputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	cfg, err := ParseGEMM24(p)
	if err != nil {
		return nil, err
	}
	m, k, n, err := gemm24Shape(op, cfg, in)
	if err != nil {
		return nil, err
	}
	if err := checkGEMMSize(op, cfg, m, k/2, n); err != nil {
		return nil, err
	}
	specs := []TensorSpec{
		{Name: "a_values", DType: cfg.Mode.In, Shape: []int{m, k / 2}},
		{Name: "a_meta", DType: tensor.Uint8, Shape: []int{m, k / 4}},
		{Name: "b", DType: cfg.Mode.In, Shape: operandShape(cfg.Layout.B, k, n, cfg.Mode.In)},
	}
	if err := checkLayoutPadding(op, in, []layoutOperand{{"b", cfg.Layout.B, "format_b", k, n}}, specs); err != nil {
		return nil, err
	}
	if meta := in["a_meta"]; meta.DType == tensor.Uint8 && meta.SameShape(specs[1].Shape) {
		if err := CheckMeta24(op.Name(), "a_meta", meta); err != nil {
			return nil, err
		}
	}
	if cfg.Mode.Int8() {
		for _, s := range []struct {
			name string
			n    int
		}{{"scale_a", m}, {"scale_b", n}} {
			shape := []int{s.n}
			if t, ok := in[s.name]; ok && t != nil && t.SameShape([]int{1}) {
				shape = []int{1}
			}
			specs = append(specs, TensorSpec{Name: s.name, DType: tensor.Float32, Shape: shape})
		}
	}
	return specs, nil
}

func (op gemm24) Outputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	cfg, err := ParseGEMM24(p)
	if err != nil {
		return nil, err
	}
	m, _, n, err := gemm24Shape(op, cfg, in)
	if err != nil {
		return nil, err
	}
	return []TensorSpec{{Name: "out", DType: tensor.Float16, Shape: operandShape(cfg.Layout.Out, m, n, tensor.Float16)}}, nil
}

// Expect: the float64 sparse product (reference.Gemm24Into, kept k only)
// and gemm's bound (gemmEval.rows, as gemm's Expect) for K/2 products per
// output.
//
// In another layout, b is converted to ND and an NZ out's Expected is the
// ND one mapped through the layout (padding +0 exactly), as for gemm.
func (op gemm24) Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	cfg, _ := ParseGEMM24(p)
	if l := cfg.Layout; !l.ND() {
		m, k, n, err := gemm24Shape(op, cfg, in)
		if err != nil {
			return nil, err
		}
		pND, inND, err := GEMMLayoutToND(p, in, l, m, k, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op.Name(), err)
		}
		e, err := op.Expect(pND, inND, num)
		if err != nil {
			return nil, err
		}
		if l.Out == FormatFractalNZ {
			e["out"] = nzExpected(e["out"], m, n, tensor.Float16, num)
		}
		return e, nil
	}
	m, k, n, _ := gemm24Dims(op, in)
	keep := MetaKeep(in["a_meta"])
	vals, b := in["a_values"].Float64s(), in["b"].Float64s()
	var sa, sb []float64
	if cfg.Mode.Int8() {
		sa, sb = in["scale_a"].Float64s(), in["scale_b"].Float64s()
	}
	ev, err := newGEMMEval(cfg, k/2, num)
	if err != nil {
		return nil, err
	}
	e := bound.NewExpected(m * n)
	d, s := e.Ref, e.Bound
	reference.Gemm24Into(m, k, n, vals, keep, b, d, s)
	// dotPosNeg (the partial-sum overflow test), which few elements need,
	// reads a dense: its pruned zeros give no positive or negative finite
	// product.
	values := &gemmDense{load: func() ([]float64, []float64) { return reference.Decompress24(m, k, vals, keep), b }}
	parallel.For(m, max(1, (1<<12)/max(n, 1)), func(lo, hi int) {
		ev.rows(e, 0, lo, hi, d, s, values, nil, sa, sb, k, n)
	})
	return map[string]*bound.Expected{"out": e}, nil
}
