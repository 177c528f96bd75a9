package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/tensor"
)

// GEMM is the gemm contract.
var GEMM = Register(gemm{})

// gemm is the contract of the gemm operator:
//
//	out = alpha·(A·B) + beta·C          (fp modes)
//	out = alpha·(scale_a[i]·scale_b[j]·(A·B)) + beta·C   (int8_int32acc)
//
// Inputs: a [M,K] and b [K,N] in the mode's input dtype; c [M,N] in the
// output dtype, required iff beta ≠ 0 (with beta = 0, c may be given and
// is then not read at all, the BLAS convention, so a NaN in c does not
// propagate); for int8_int32acc only, scale_a [M] or [1] and scale_b [N]
// or [1] in fp32 ([1] broadcasts). Output: out [M,N] in the output dtype.
//
// Modes (input / accumulator / epilogue / output format):
//
//	fp32           fp32 / fp32  / fp32 / fp32
//	fp16_fp32acc   fp16 / fp32  / fp32 / fp16   (default)
//	fp16           fp16 / fp16  / fp16 / fp16
//	bf16_fp32acc   bf16 / fp32  / fp32 / bf16
//	int8_int32acc  int8 / int32 (exact) / fp32 / fp16
//
// Evaluation model (the emulator follows it bit for bit; the bounds of
// Expect hold for every summation order, tiling and split of K):
//
//  1. Dot product, one accumulator per output element starting at +0, in
//     the accumulator format. accumulate=sequential: for k ascending,
//     acc ← RN(acc + a_k·b_k) with the product exact, i.e. a fused
//     multiply-add with a single rounding (for fp16 and bf16 inputs in an
//     fp32 accumulator the product is exact in fp32, so this equals
//     multiply-then-add, except for bf16 products outside fp32's exponent
//     range; for fp32 inputs and for mode fp16 it is the FMA).
//     accumulate=blocked16: for each 16-wide block of k, ascending, the
//     block's products are summed exactly and added to acc exactly, then
//     rounded once: acc ← RN(acc + Σ_block a_k·b_k), as a cube fractal
//     step would. int32 accumulation is exact in both (K·128·128 must not
//     exceed 2^31−1).
//  2. Epilogue in the epilogue format E (fp16 for mode fp16, else fp32),
//     every step rounded to nearest even:
//     int8 only: v ← RN32(acc); s ← RN32(scale_a[i]·scale_b[j]); v ← RN32(s·v);
//     if alpha ≠ 1: v ← RN_E(RN_E(alpha)·v);
//     if beta ≠ 0:  v ← RN_E(v + RN_E(RN_E(beta)·c)).
//  3. Store: v converted to the output dtype under the device's numerics
//     profile (inf or saturate on overflow, keep or flush subnormals).
//     Intermediates are IEEE: overflow gives ±Inf, subnormals are kept
//     (under a flush profile the bounds also allow flushed intermediates).
//
// Special values follow IEEE arithmetic in every step (Inf·0 = NaN,
// Inf − Inf = NaN); the sign and payload of a NaN are unspecified. A zero
// sum is +0 unless all its terms are −0 (round to nearest), so padding a
// K with zero products is not neutral for a −0 accumulator (possible
// after an fp16 underflow): the emulator does not accumulate its padding,
// so its bits follow this model; for other implementations the sign of a
// zero is within any bound.
//
// Sizes: M·N·K ≤ GEMMMaxMACs (2^38, so that an LLM's projections are
// legal) and, for int8, K ≤ GEMMInt8MaxK; larger inputs are input errors.
//
// The bounds of Expect are documented in gemm_bound.go.
type gemm struct{}

// GEMMMode describes one precision mode of gemm.
type GEMMMode struct {
	Name     string
	In       tensor.DType // a and b
	Acc      tensor.DType // accumulator: Float32, Float16 or Int32 (exact)
	Epilogue tensor.DType // dequantisation, alpha and beta steps: Float32 or Float16
	Out      tensor.DType // out and c
}

// Int8 reports whether the mode takes int8 inputs with dequantisation scales.
func (m GEMMMode) Int8() bool { return m.In == tensor.Int8 }

var gemmModes = []GEMMMode{
	{"fp32", tensor.Float32, tensor.Float32, tensor.Float32, tensor.Float32},
	{"fp16_fp32acc", tensor.Float16, tensor.Float32, tensor.Float32, tensor.Float16},
	{"fp16", tensor.Float16, tensor.Float16, tensor.Float16, tensor.Float16},
	{"bf16_fp32acc", tensor.BFloat16, tensor.Float32, tensor.Float32, tensor.BFloat16},
	{"int8_int32acc", tensor.Int8, tensor.Int32, tensor.Float32, tensor.Float16},
}

// gemmDefaultMode is the mode of params that name none.
const gemmDefaultMode = "fp16_fp32acc"

// GEMMModes lists gemm's precision modes in contract order.
func GEMMModes() []GEMMMode { return append([]GEMMMode(nil), gemmModes...) }

// The accumulate models of gemm.
const (
	GEMMSequential = "sequential"
	GEMMBlocked16  = "blocked16"
)

// GEMMBlockK is the k-block width of accumulate=blocked16.
const GEMMBlockK = 16

// GEMMMaxMACs caps M·N·K of one gemm case (2^38 multiply-accumulates,
// 1024 × tensor.MaxElements): real shapes are legal, such as 4096³ (a
// whole `run` in fp16_fp32acc takes about 4 s on 2 cores) and an LLM's
// projection over a prefill of 4096 tokens, 4096×4096×11008 (about 11 s),
// while a hostile size cannot run for hours: the slowest mode, fp16 with
// fp16 accumulation, emulates about 0.3·10^9 multiply-accumulates a
// second on 2 cores, so a case at the cap takes about 15 minutes, and the
// CLI's per-case timeout (60 s by default) stops it sooner.
const GEMMMaxMACs = 1024 * tensor.MaxElements

// GEMMInt8MaxK is the largest K whose int8 accumulation cannot overflow
// int32: K·128·128 ≤ 2^31 − 1.
const GEMMInt8MaxK = math.MaxInt32 / (128 * 128)

// GEMMConfig is gemm's validated parameters in typed form.
type GEMMConfig struct {
	Mode       GEMMMode
	Alpha      float64
	Beta       float64
	Accumulate string // GEMMSequential or GEMMBlocked16
	// Layout is the operands' formats and the extent params
	// (gemm_layout.go); all ND by default.
	Layout GEMMLayout
}

// ParseGEMM validates p (filling defaults) and returns it in typed form.
func ParseGEMM(p Params) (GEMMConfig, error) {
	if cfg, ok := parseCanonicalGEMM(p); ok {
		return cfg, nil
	}
	return parseGEMMValidating(p)
}

// parseGEMMValidating is ParseGEMM through Validate, for any params.
func parseGEMMValidating(p Params) (GEMMConfig, error) {
	op := gemm{}
	v, err := op.Validate(p)
	if err != nil {
		return GEMMConfig{}, err
	}
	cfg := GEMMConfig{Accumulate: v["accumulate"], Layout: layoutOf(v)}
	for _, m := range gemmModes {
		if m.Name == v["mode"] {
			cfg.Mode = m
		}
	}
	// Validate has checked these parse.
	cfg.Alpha, _ = strconv.ParseFloat(v["alpha"], 64)
	cfg.Beta, _ = strconv.ParseFloat(v["beta"], 64)
	return cfg, nil
}

// parseCanonicalGEMM is ParseGEMM for params already in Validate's
// output form (what the harness, the kernels and the op's own methods
// pass, several times a case): known names only, a mode and an
// accumulation of the lists, alpha and beta finite numbers written as
// Validate writes them, absent ones taking their defaults. It reads them
// without building Validate's map and lists; ok is false for anything
// else, which ParseGEMM then validates (TestParseGEMMCanonical holds the
// two to the same results).
func parseCanonicalGEMM(p Params) (cfg GEMMConfig, ok bool) {
	cfg = gemmDefaults
	mode := cfg.Mode.Name
	for k, v := range p {
		switch k {
		case "mode":
			mode = v
		case "accumulate":
			if v != GEMMSequential && v != GEMMBlocked16 {
				return cfg, false
			}
			cfg.Accumulate = v
		case "alpha", "beta":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || math.IsInf(x, 0) || math.IsNaN(x) || strconv.FormatFloat(x, 'g', -1, 64) != v {
				return cfg, false
			}
			if k == "alpha" {
				cfg.Alpha = x
			} else {
				cfg.Beta = x
			}
		default:
			if !cfg.Layout.set(k, v) {
				return cfg, false
			}
		}
	}
	i := slices.IndexFunc(gemmModes, func(m GEMMMode) bool { return m.Name == mode })
	if i < 0 {
		return cfg, false
	}
	cfg.Mode = gemmModes[i]
	return cfg, true
}

// gemmDefaults is the typed form of params that name nothing, as
// Validate fills them in.
var gemmDefaults = func() GEMMConfig {
	cfg, err := parseGEMMValidating(Params{})
	if err != nil {
		panic(err) // the defaults are a package invariant
	}
	return cfg
}()

func (gemm) Name() string { return "gemm" }

func (gemm) Doc() string {
	return "out = alpha·(A·B) + beta·C (int8: dequantised with scale_a, scale_b); five precision modes, sequential or blocked16 accumulation; a, b, out (and c) ND or FRACTAL_NZ"
}

func (gemm) ParamSpecs() []ParamSpec {
	names := make([]string, len(gemmModes))
	for i, m := range gemmModes {
		names[i] = m.Name
	}
	return append([]ParamSpec{
		{Name: "mode", Default: gemmDefaultMode, Values: names,
			Doc: "precision (in/acc/out): fp32 fp32/fp32/fp32, fp16_fp32acc fp16/fp32/fp16, fp16 fp16/fp16/fp16, bf16_fp32acc bf16/fp32/bf16, int8_int32acc int8/int32/fp16 with fp32 scale_a, scale_b"},
		{Name: "alpha", Default: "1", Doc: "finite scalar multiplying A·B (rounded to the epilogue format)",
			Examples: []string{"0", "-1", "0.5", "2", "0.1", "-3.75", "1e-4", "1000", "65504"}},
		{Name: "beta", Default: "0", Doc: "finite scalar multiplying C; c is required iff beta ≠ 0 and not read when beta = 0",
			Examples: []string{"1", "-1", "0.5", "0.1", "2", "-0.25", "1e-4", "1000"}},
		{Name: "accumulate", Default: GEMMSequential, Values: []string{GEMMSequential, GEMMBlocked16},
			Doc: "sequential: acc ← RN(acc + a_k·b_k), k ascending; blocked16: acc ← RN(acc + exact 16-wide block sum)"},
	}, gemmLayoutSpecs(true, []string{"m", "k", "n"})...)
}

func (gemm) DimSpecs() []DimSpec {
	return []DimSpec{
		{Name: "m", Doc: "rows of a and out"},
		{Name: "k", Doc: "columns of a, rows of b (the reduction)"},
		{Name: "n", Doc: "columns of b and out"},
	}
}

// Dists: uniform, normal, large and special fill a, b (and c) element-wise
// as for vector_add; cancel makes every dot product cancel: the second
// half of a's columns repeats the first half exactly, and the second half
// of b's rows is the first half negated to within a few ulps (ops.Negate),
// so Σ_k a_ik·b_kj is a few ulps of its terms (an odd K's last term is
// uniform). int8 scales are always positive, uniform in [2^-8, 3·2^-8).
func (gemm) Dists() []string {
	return []string{DistUniform, DistNormal, DistLarge, DistSpecial, DistCancel}
}

func (op gemm) Validate(p Params) (Params, error) {
	v, err := validate(op, p)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"alpha", "beta"} {
		x, err := strconv.ParseFloat(v[name], 64)
		if strings.Contains(v[name], "_") {
			// ParseFloat takes "1_0" as 10; a digit separator in a
			// parameter is far likelier a typo than a wish.
			return nil, fmt.Errorf("%s: param %q: %q is not a number (no '_' digit separators)", op.Name(), name, v[name])
		}
		if err != nil {
			return nil, fmt.Errorf("%s: param %q: %q is not a number", op.Name(), name, v[name])
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%s: param %q: must be finite, got %q", op.Name(), name, v[name])
		}
		v[name] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	if err := validateLayout(op, v, []string{"m", "k", "n"}); err != nil {
		return nil, err
	}
	return v, nil
}

// gemmConfig returns the typed form of params that passed Validate.
func gemmConfig(p Params) GEMMConfig {
	cfg, err := ParseGEMM(p)
	if err != nil {
		// Callers pass validated params; be safe and fall back to defaults.
		return gemmDefaults
	}
	return cfg
}

// checkGEMMSize fails when M·N·K exceeds GEMMMaxMACs or, for int8, when K
// could overflow the int32 accumulator.
func checkGEMMSize(op Op, cfg GEMMConfig, m, k, n int) error {
	if m < 0 || k < 0 || n < 0 {
		return fmt.Errorf("%s: negative size m=%d k=%d n=%d", op.Name(), m, k, n)
	}
	if m != 0 && n != 0 && k != 0 {
		if n > GEMMMaxMACs/m || k > GEMMMaxMACs/(m*n) {
			return fmt.Errorf("%s: M·N·K = %d·%d·%d exceeds the cap of %d multiply-accumulates", op.Name(), m, n, k, GEMMMaxMACs)
		}
	}
	if cfg.Mode.Int8() && k > GEMMInt8MaxK {
		return fmt.Errorf("%s: mode %s: K = %d could overflow the int32 accumulator (K·128·128 > 2^31−1; K ≤ %d)", op.Name(), cfg.Mode.Name, k, GEMMInt8MaxK)
	}
	return nil
}

func (op gemm) Generate(p Params, g Gen) (map[string]*tensor.Tensor, error) {
	if err := checkDist(op, g.Dist); err != nil {
		return nil, err
	}
	cfg := gemmConfig(p)
	l := cfg.Layout
	c0In, c0Out := TransDataC0(cfg.Mode.In), TransDataC0(cfg.Mode.Out)
	mF, mU, nF, nU := []string{l.A}, []int{TransDataM0}, []string{l.B}, []int{c0In}
	if cfg.Beta != 0 {
		mF, mU, nF, nU = append(mF, l.Out), append(mU, TransDataM0), append(nF, l.Out), append(nU, c0Out)
	}
	m, err := genExtent(op, g, "m", l.M, mF, mU)
	if err != nil {
		return nil, err
	}
	k, err := genExtent(op, g, "k", l.K, []string{l.A, l.B}, []int{c0In, TransDataM0})
	if err != nil {
		return nil, err
	}
	n, err := genExtent(op, g, "n", l.N, nF, nU)
	if err != nil {
		return nil, err
	}
	if err := checkGEMMSize(op, cfg, m, k, n); err != nil {
		return nil, err
	}
	rng := g.Rand()
	wrap := func(t *tensor.Tensor, err error) (*tensor.Tensor, error) {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op.Name(), err)
		}
		return t, nil
	}
	in := map[string]*tensor.Tensor{}
	if g.Dist == DistCancel {
		in["a"], in["b"], err = gemmCancel(rng, cfg.Mode.In, m, k, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op.Name(), err)
		}
	} else {
		if in["a"], err = wrap(Fill(rng, g.Dist, cfg.Mode.In, m, k)); err != nil {
			return nil, err
		}
		if in["b"], err = wrap(Fill(rng, g.Dist, cfg.Mode.In, k, n)); err != nil {
			return nil, err
		}
	}
	if cfg.Beta != 0 {
		dist := g.Dist
		if dist == DistCancel {
			dist = DistUniform
		}
		if in["c"], err = wrap(Fill(rng, dist, cfg.Mode.Out, m, n)); err != nil {
			return nil, err
		}
	}
	if cfg.Mode.Int8() {
		for _, s := range []struct {
			name string
			n    int
		}{{"scale_a", m}, {"scale_b", n}} {
			t, err := wrap(tensor.New(tensor.Float32, s.n))
			if err != nil {
				return nil, err
			}
			for i := 0; i < s.n; i++ {
				t.SetFloat64(i, (1+float64(2*rngFloat64(rng)))/256, generationNumerics)
			}
			in[s.name] = t
		}
	}
	if err := layOut(op, in, map[string]string{"a": l.A, "b": l.B, "c": l.Out}); err != nil {
		return nil, err
	}
	return in, nil
}

// gemmCancel makes a [m,k] and b [k,n] whose dot products cancel: a's
// columns h..2h−1 repeat columns 0..h−1, b's rows h..2h−1 negate rows
// 0..h−1 to within a few ulps (h = k/2; an odd k's last column and row
// are uniform).
func gemmCancel(r *rand.Rand, d tensor.DType, m, k, n int) (*tensor.Tensor, *tensor.Tensor, error) {
	h := k / 2
	a, err := Fill(r, DistUniform, d, m, k)
	if err != nil {
		return nil, nil, err
	}
	for i := 0; i < m; i++ {
		for kk := 0; kk < h; kk++ {
			a.SetBits(i*k+h+kk, a.Bits(i*k+kk))
		}
	}
	b, err := Fill(r, DistUniform, d, k, n)
	if err != nil {
		return nil, nil, err
	}
	if h > 0 && n > 0 {
		top := tensor.MustNew(d, h, n)
		for i := 0; i < h*n; i++ {
			top.SetBits(i, b.Bits(i))
		}
		neg := Negate(r, top)
		for i := 0; i < h*n; i++ {
			b.SetBits(h*n+i, neg.Bits(i))
		}
	}
	return a, b, nil
}

// gemmDims returns M, K, N from a and b, failing with a message naming the
// tensors when either is missing, not a matrix, or the inner sizes differ.
func gemmDims(op Op, in map[string]*tensor.Tensor) (m, k, n int, err error) {
	for _, name := range []string{"a", "b"} {
		t, ok := in[name]
		if !ok || t == nil {
			return 0, 0, 0, fmt.Errorf("%s: input %q is missing", op.Name(), name)
		}
		if len(t.Shape) != 2 {
			want := "[M,K]"
			if name == "b" {
				want = "[K,N]"
			}
			return 0, 0, 0, fmt.Errorf("%s: input %q: shape %v, want %s", op.Name(), name, t.Shape, want)
		}
	}
	a, b := in["a"], in["b"]
	if a.Shape[1] != b.Shape[0] {
		return 0, 0, 0, fmt.Errorf("%s: inputs \"a\" %v and \"b\" %v: inner dimensions differ (a is [M,K] with K=%d, b is [K,N] with K=%d)",
			op.Name(), a.Shape, b.Shape, a.Shape[1], b.Shape[0])
	}
	return a.Shape[0], a.Shape[1], b.Shape[1], nil
}

// GEMMDims returns M, K, N of a gemm input set (a [M,K], b [K,N]).
func GEMMDims(in map[string]*tensor.Tensor) (m, k, n int, err error) {
	return gemmDims(gemm{}, in)
}

func (op gemm) Inputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	cfg := gemmConfig(p)
	m, k, n, err := gemmShape(op, cfg, in)
	if err != nil {
		return nil, err
	}
	if err := checkGEMMSize(op, cfg, m, k, n); err != nil {
		return nil, err
	}
	if c, ok := in["c"]; cfg.Beta != 0 && (!ok || c == nil) {
		return nil, fmt.Errorf("%s: input %q is missing (required because beta=%s ≠ 0)", op.Name(), "c", p["beta"])
	}
	l := cfg.Layout
	specs := []TensorSpec{
		{Name: "a", DType: cfg.Mode.In, Shape: operandShape(l.A, m, k, cfg.Mode.In)},
		{Name: "b", DType: cfg.Mode.In, Shape: operandShape(l.B, k, n, cfg.Mode.In)},
		{Name: "c", DType: cfg.Mode.Out, Shape: operandShape(l.Out, m, n, cfg.Mode.Out), Optional: cfg.Beta == 0},
	}
	if !l.ND() {
		operands := []layoutOperand{{"a", l.A, "format_a", m, k}, {"b", l.B, "format_b", k, n}}
		if cfg.Beta != 0 {
			operands = append(operands, layoutOperand{"c", l.Out, "format_out", m, n})
		}
		if err := checkLayoutPadding(op, in, operands, specs); err != nil {
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
				shape = []int{1} // broadcast form
			}
			specs = append(specs, TensorSpec{Name: s.name, DType: tensor.Float32, Shape: shape})
		}
	}
	return specs, nil
}

func (op gemm) Outputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	cfg := gemmConfig(p)
	m, _, n, err := gemmShape(op, cfg, in)
	if err != nil {
		return nil, err
	}
	return []TensorSpec{{Name: "out", DType: cfg.Mode.Out, Shape: operandShape(cfg.Layout.Out, m, n, cfg.Mode.Out)}}, nil
}
