package ops

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// The bound of gemm, rigorous for every summation order, tiling and split
// of K (Higham, Accuracy and Stability of Numerical Algorithms, §3.1), for
// an output element with exact dot product d = Σ_k a_k·b_k and magnitude
// S = Σ_k |a_k|·|b_k|:
//
// Dot product. Whatever the order, each product reaches the result through
// at most K roundings of the accumulator format (one if the product is
// rounded, at most K−1 additions), each a factor (1+δ), |δ| ≤ u_acc, so
//
//	|acc − d| ≤ g·S + K·h·(1+g),  g = (1+u_acc)^K − 1 (≤ γ_K(u_acc), finite for every K)
//
// where h = η_acc/2 (half the smallest subnormal) bounds a product's
// underflow error (additions whose result is subnormal are exact); under a
// subnormal-flush profile every step may flush, so h = MinNormal_acc and
// the count is 2K. fp16 and bf16 products are exact in fp32 (but for bf16
// exponents outside fp32's range), which the bound does not need; an
// implementation that rounds each product, uses FMA, sums a block exactly
// (blocked16) or pairwise, or accumulates in a wider format all satisfy
// it. The int32 accumulator is exact (K ≤ GEMMInt8MaxK). The float64
// reference d itself is within γ_K(2^-53)·S of the exact value; that is
// added too.
//
// S itself. S is summed in float64 (reference.MatMul) and may lie below
// the true Σ|a_k||b_k| by up to γ_{K−1}(2^-53)·S: every product of two
// fp32, fp16, bf16 or int8 values is exact in float64, but the K−1
// additions round, and a bound built on a value below S is not rigorous
// (the shortfall g·γ_{K−1}(2^-53)·S grows as K²), so S is rounded up
// (bound.MagUp: s·(1 + γ_{K−1}(2^-53)) plus the float64 evaluation's own
// rounding), and so are the positive and negative sums of the overflow
// test below. For fp16 and int8 inputs and K ≤ gemmMagFP32MaxK, S is
// summed in fp32 instead and rounded up by γ_{K−1}(2^-24) (gemm_mag.go:
// the same argument, every such product being exact in fp32), which
// loosens the bound by less than 2.5·10^-4 of itself.
//
// Epilogue. Every rounding of an intermediate y known to within e (the
// int32→fp32 conversion when |acc| > 2^24, RN32(scale_a·scale_b), the
// dequantising product, RN_E(alpha), the alpha product, RN_E(beta), the
// beta product and the addition) gives e' = e + u_E·(|y| + e) + h_E; a
// product of intermediates x1 ± e1, x2 ± e2 has error |x1|e2 + |x2|e1 +
// e1e2; the float64 evaluation of each reference step adds 2^-52·|y|.
// Steps that are exact by construction are skipped (alpha = 1, beta = 0).
// When E is the output format (modes fp32 and fp16), the last epilogue
// rounding is the output store itself. The final value r ± e is mapped by
// bound.Output (output rounding u_out·(|r|+e), half the output format's
// smallest subnormal, overflow of the store).
//
// Overflow and special values. Each node carries the set of non-finite
// outcomes a legal evaluation may produce. The accumulator may overflow
// to +Inf iff some partial sum can reach the threshold T_acc (MaxFinite +
// ulp/2): (1+g)·P + K·h·(1+g) ≥ T_acc with P the sum of the positive
// products, likewise −Inf with the negative ones, and NaN when both can
// (two partial sums of a split K meet). An epilogue rounding of y ± e may
// give ±Inf when y ± e reaches ∓T_E (a definite overflow removes the
// finite outcome). Non-finite products (Inf or NaN inputs) give the class
// of the float64 sum (NaN when a product is NaN or both infinities occur,
// in any order), plus NaN when the finite products may overflow to the
// opposite infinity. Products and sums of classes follow IEEE (0·Inf =
// NaN, Inf − Inf = NaN; a finite value that may be zero times Inf may be
// NaN). An element whose reference is finite but whose set has a
// non-finite class is overflow-ambiguous (bound.Expected.Ambiguous).
// Under an overflow=saturate profile the store maps ±Inf to ±MaxFinite and
// NaN to 0; such outcomes are folded into the bound around the reference
// (the smallest symmetric interval holding them), since Expected has no
// other way to hold a second finite outcome.
//
// The algebra (intervals with special classes, Dot, Format.Round, Store)
// is package bound's; this file only composes it in gemm's order.

// gemmOperands are one output element's data for the bound.
type gemmOperands struct {
	d, s   float64 // float64 dot product and Σ|a||b|
	c      float64 // c[i,j] (read only when beta ≠ 0)
	sa, sb float64 // dequantisation scales (int8)
	// For the partial-sum overflow test, computed only when needed: a
	// and b as float64 values, or dense to make them.
	a, b       []float64
	dense      *gemmDense
	i, j, k, n int
}

// gemmEval holds the per-case constants of the bound.
type gemmEval struct {
	cfg         GEMMConfig
	num         tensor.Numerics
	dot         bound.Dot
	ep, f32     bound.Format   // the epilogue format E and fp32
	alpha, beta bound.Interval // RN_E(alpha), RN_E(beta)
	// plain is set when the element is the dot product stored: a float
	// accumulator, no dequantisation, alpha = 1, beta = 0 (fastElement).
	plain bool
	// magUp is bound.MagUp's factor for K terms: MagUp(s, K) = s·magUp
	// for every s (TestGEMMMagUpFactor).
	magUp float64
	// out is bound.Output for the mode's output dtype, its constants
	// worked out once.
	out bound.OutputMap
}

func newGEMMEval(cfg GEMMConfig, k int, num tensor.Numerics) (*gemmEval, error) {
	ev := &gemmEval{cfg: cfg, num: num, dot: bound.NewDot(k, cfg.Mode.Acc, num)}
	var err error
	if ev.ep, err = bound.NewFormat(cfg.Mode.Epilogue, num); err != nil {
		return nil, fmt.Errorf("gemm mode %s: epilogue: %w", cfg.Mode.Name, err)
	}
	if ev.f32, err = bound.NewFormat(tensor.Float32, num); err != nil {
		return nil, fmt.Errorf("gemm mode %s: %w", cfg.Mode.Name, err)
	}
	ev.alpha = ev.ep.Round(bound.Exact(cfg.Alpha))
	ev.beta = ev.ep.Round(bound.Exact(cfg.Beta))
	ev.out = bound.NewOutputMap(cfg.Mode.Out, num)
	ev.plain = !cfg.Mode.Int8() && cfg.Alpha == 1 && cfg.Beta == 0 && !ev.dot.Exact
	ev.magUp = gemmMagUpFactor(k)
	return ev, nil
}

// gemmMagUpFactor returns f with bound.MagUp(s, k) = s·f bit for bit: MagUp
// returns s·(1 + γ_{k−1}(2^-53) + 2^-50), evaluated left to right, and s
// itself for k ≤ 1 (f = 1) or a zero, infinite or NaN s (which s·f keeps,
// given f finite and ≥ 1; k ≤ 2^52 keeps γ finite).
func gemmMagUpFactor(k int) float64 {
	if k <= 1 {
		return 1
	}
	return 1 + bound.Gamma(k-1, 0x1p-53) + 0x1p-50
}

// fastElement is element for a plain evaluation (ev.plain) whose float64
// dot product d is finite and cannot overflow the accumulator, given the
// raw float64 magnitude s; ok is false for every other element, which
// takes element (the interval path). It is element's computation with
// the steps that cannot apply left out, in the same float64 operations,
// so the outcomes are the same bits (TestGEMMFastPathAgrees, on every
// golden and suite case). rows runs it a row at a time through
// bound.OutputMap.StoreDots, the same arithmetic inlined
// (TestGEMMStoreDotsMatchesFastElement):
//   - S = MagUp(s, K) = s·magUp;
//   - Dot.Sum with Ref = d, Mag = S, Err = 0: not NaN or Inf, so the
//     finite branch; its Err is 0 + mul0(G, S+0) + eta + RefErr·S with
//     eta = 0 when S = 0; and with (1+G)·S + eta below the threshold no
//     partial sum can overflow, so there are no special classes;
//   - no epilogue step (no int8, alpha = 1, beta = 0);
//   - bound.Store of a finite interval without special classes is
//     bound.Output (folding saturated classes needs some class).
func (ev *gemmEval) fastElement(d, s float64) (ref, bnd float64, alt bound.Special, ok bool) {
	if !ev.plain || math.IsNaN(d) || math.IsInf(d, 0) || math.IsNaN(s) || math.IsInf(s, 0) {
		return 0, 0, 0, false
	}
	mag := s * ev.magUp
	dot := &ev.dot
	eta := dot.Eta
	if mag == 0 {
		eta = 0
	}
	// Products rounded on their own (float64(…)), as in the interval path
	// and StoreDots, so no fusion the compiler may do makes them differ.
	if float64((1+dot.G)*mag)+eta >= dot.Threshold {
		return 0, 0, 0, false
	}
	var g float64 // mul0(G, S): an exact zero times anything is 0
	if dot.G != 0 && mag != 0 {
		g = dot.G * mag
	}
	err := g + eta + float64(dot.RefErr*mag)
	ref, bnd, alt = ev.out.Map(d, err)
	return ref, bnd, alt, true
}

// element returns the expected outcome of one output element.
func (ev *gemmEval) element(el *gemmOperands) (ref, bnd float64, alt bound.Special) {
	mode := ev.cfg.Mode
	steps := 0
	if mode.Int8() {
		steps++
	}
	if ev.cfg.Alpha != 1 {
		steps++
	}
	if ev.cfg.Beta != 0 {
		steps++
	}
	// rnd rounds the result of an epilogue step to E, except the last
	// step's when E is the output format: bound.Store is that rounding.
	rnd := func(v bound.Interval) bound.Interval {
		steps--
		if steps == 0 && mode.Epilogue == mode.Out {
			return v
		}
		return ev.ep.Round(v)
	}
	v := ev.dot.Sum(bound.Terms{Ref: el.d, Mag: el.s, PosNeg: func() (float64, float64) {
		a, b := el.a, el.b
		if a == nil && el.dense != nil {
			a, b = el.dense.values()
		}
		return dotPosNeg(a, b, el.i, el.j, el.k, el.n)
	}})
	if mode.Int8() {
		if math.Abs(v.Ref) > 1<<24 {
			v = ev.f32.Round(v) // int32 → fp32 conversion
		}
		s := ev.f32.Round(bound.Mul(bound.Exact(el.sa), bound.Exact(el.sb)))
		v = rnd(bound.Mul(s, v))
	}
	if ev.cfg.Alpha != 1 {
		v = rnd(bound.Mul(ev.alpha, v))
	}
	if ev.cfg.Beta != 0 {
		bc := ev.ep.Round(bound.Mul(ev.beta, bound.Exact(el.c)))
		v = rnd(bound.Add(v, bc))
	}
	return bound.Store(v, mode.Out, ev.num)
}
