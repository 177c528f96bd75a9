package ops

import (
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

// ival is a value of the evaluation model: if fin, a finite outcome lies
// within e of x (x the float64 reference of the exact value); alt lists
// the non-finite outcomes a legal evaluation may produce.
type ival struct {
	x, e float64
	fin  bool
	alt  bound.Special
}

// exactVal is an input value known exactly.
func exactVal(x float64) ival {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return ival{x: x, alt: bound.Of(x)}
	}
	return ival{x: x, fin: true}
}

// mul0 is x·y with 0·Inf = 0: an exact zero times an unbounded error
// contributes nothing.
func mul0(x, y float64) float64 {
	if x == 0 || y == 0 {
		return 0
	}
	return x * y
}

// f64err bounds the rounding of one float64 reference operation giving x.
func f64err(x float64) float64 { return math.Abs(x)*0x1p-52 + 0x1p-1074 }

// The outcome kinds of a value: the finite part's sign (and whether it can
// be zero), and the non-finite classes.
const (
	kPos uint8 = 1 << iota
	kNeg
	kZero
	kPinf
	kNinf
	kNaN
)

func (v ival) kinds() uint8 {
	var k uint8
	if v.fin {
		if v.x+v.e > 0 {
			k |= kPos
		}
		if v.x-v.e < 0 {
			k |= kNeg
		}
		if v.x-v.e <= 0 && 0 <= v.x+v.e {
			k |= kZero
		}
	}
	if v.alt&bound.PosInf != 0 {
		k |= kPinf
	}
	if v.alt&bound.NegInf != 0 {
		k |= kNinf
	}
	if v.alt&bound.NaN != 0 {
		k |= kNaN
	}
	return k
}

func kindSpecial(k uint8) bound.Special {
	switch k {
	case kPinf:
		return bound.PosInf
	case kNinf:
		return bound.NegInf
	case kNaN:
		return bound.NaN
	}
	return 0
}

func isInfKind(k uint8) bool { return k == kPinf || k == kNinf }

// mulKind is the non-finite kind of p·q for single kinds (0 if finite).
func mulKind(p, q uint8) uint8 {
	if p == kNaN || q == kNaN {
		return kNaN
	}
	if !isInfKind(p) && !isInfKind(q) {
		return 0
	}
	if p == kZero || q == kZero {
		return kNaN
	}
	if (p == kNeg || p == kNinf) != (q == kNeg || q == kNinf) {
		return kNinf
	}
	return kPinf
}

// addKind is the non-finite kind of p+q for single kinds (0 if finite).
func addKind(p, q uint8) uint8 {
	switch {
	case p == kNaN || q == kNaN:
		return kNaN
	case isInfKind(p) && isInfKind(q):
		if p != q {
			return kNaN
		}
		return p
	case isInfKind(p):
		return p
	case isInfKind(q):
		return q
	}
	return 0
}

func combine(a, b ival, f func(p, q uint8) uint8) bound.Special {
	ka, kb := a.kinds(), b.kinds()
	var out bound.Special
	for p := kPos; p <= kNaN; p <<= 1 {
		if ka&p == 0 {
			continue
		}
		for q := kPos; q <= kNaN; q <<= 1 {
			if kb&q != 0 {
				out |= kindSpecial(f(p, q))
			}
		}
	}
	return out
}

// mul is the exact product of two values (rounding is a separate step).
func mul(a, b ival) ival {
	r := ival{fin: a.fin && b.fin, alt: combine(a, b, mulKind)}
	if r.fin {
		r.x = a.x * b.x
		r.e = mul0(math.Abs(a.x), b.e) + mul0(math.Abs(b.x), a.e) + mul0(a.e, b.e) + f64err(r.x)
	}
	return r
}

// add is the exact sum of two values (rounding is a separate step).
func add(a, b ival) ival {
	r := ival{fin: a.fin && b.fin, alt: combine(a, b, addKind)}
	if r.fin {
		r.x = a.x + b.x
		r.e = a.e + b.e + f64err(r.x)
	}
	return r
}

// formatConsts returns a format's unit roundoff, per-rounding underflow
// allowance and overflow threshold.
func formatConsts(d tensor.DType, flush bool) (u, h, thr float64) {
	f, _ := d.FloatFormat()
	h = f.MinSubnormal() / 2
	if flush {
		h = f.MinNormal()
	}
	return f.UnitRoundoffValue(), h, f.MaxFinite() + f.Ulp(f.MaxFinite())/2
}

// overflow adds the infinities a finite part x ± e can reach at the
// threshold thr, and drops the finite outcome when it cannot stay below.
func (v ival) overflow(thr float64) ival {
	if !v.fin {
		return v
	}
	if math.IsInf(v.x, 0) { // the float64 reference itself overflowed
		v.fin, v.alt = false, v.alt|bound.Of(v.x)
		return v
	}
	if v.x+v.e >= thr {
		v.alt |= bound.PosInf
	}
	if v.x-v.e <= -thr {
		v.alt |= bound.NegInf
	}
	if v.x-v.e >= thr || v.x+v.e <= -thr {
		v.fin = false
	}
	return v
}

// round is one rounding to nearest of format d (IEEE overflow).
func (v ival) round(d tensor.DType, flush bool) ival {
	u, h, thr := formatConsts(d, flush)
	v = v.overflow(thr)
	if !v.fin {
		return v
	}
	if f, _ := d.FloatFormat(); v.e == 0 && f.RoundNearestEven(v.x) == v.x && (!flush || v.x == 0 || math.Abs(v.x) >= f.MinNormal()) {
		return v // an exact value of the format: the rounding is exact
	}
	v.e += u*(math.Abs(v.x)+v.e) + h
	return v
}

// gemmOperands are one output element's data for the bound.
type gemmOperands struct {
	d, s   float64 // float64 dot product and Σ|a||b|
	c      float64 // c[i,j] (read only when beta ≠ 0)
	sa, sb float64 // dequantisation scales (int8)
	// For the partial-sum overflow test, computed only when needed.
	a, b       []float64
	i, j, k, n int
}

// gemmEval holds the per-case constants of the bound.
type gemmEval struct {
	cfg         GEMMConfig
	num         tensor.Numerics
	flush       bool
	k           int
	g           float64 // (1+u_acc)^K − 1
	eta         float64 // underflow allowance of the whole dot product
	refErr      float64 // γ_K(2^-53): float64 reference error per unit of S
	thrAcc      float64
	alpha, beta ival // RN_E(alpha), RN_E(beta)
}

func newGEMMEval(cfg GEMMConfig, k int, num tensor.Numerics) *gemmEval {
	ev := &gemmEval{cfg: cfg, num: num, k: k, flush: num.Subnormals == tensor.SubnormalFlush}
	ev.refErr = bound.Gamma(k, 0x1p-53)
	if cfg.Mode.Acc.IsFloat() {
		u, h, thr := formatConsts(cfg.Mode.Acc, ev.flush)
		ev.g = roundingGrowth(k, u)
		steps := float64(k)
		if ev.flush {
			steps *= 2
		}
		ev.eta = steps * h * (1 + ev.g)
		ev.thrAcc = thr
	}
	ep := cfg.Mode.Epilogue
	ev.alpha = exactVal(cfg.Alpha).round(ep, ev.flush)
	ev.beta = exactVal(cfg.Beta).round(ep, ev.flush)
	return ev
}

// roundingGrowth returns (1+u)^n − 1, rounded up: the largest relative
// error of n chained roundings. It equals γ_n(u) to first order and stays
// finite when n·u ≥ 1.
func roundingGrowth(n int, u float64) float64 {
	if n == 0 {
		return 0
	}
	return math.Expm1(float64(n)*math.Log1p(u)) * (1 + 0x1p-40)
}

// acc returns the accumulator of one element.
func (ev *gemmEval) acc(el *gemmOperands) ival {
	if !ev.cfg.Mode.Acc.IsFloat() {
		return ival{x: el.d, fin: true} // int8 products, exact int32 sum
	}
	if math.IsNaN(el.d) {
		return ival{x: el.d, alt: bound.NaN}
	}
	if math.IsInf(el.d, 0) {
		// Infinite products of one sign: that infinity, or NaN if the
		// finite products can overflow to the other one first.
		v := ival{x: el.d, alt: bound.Of(el.d)}
		pos, neg := dotPosNeg(el.a, el.b, el.i, el.j, el.k, el.n)
		opp := pos
		if el.d > 0 {
			opp = neg
		}
		if (1+ev.g)*opp+ev.eta >= ev.thrAcc {
			v.alt |= bound.NaN
		}
		return v
	}
	v := ival{x: el.d, fin: true}
	eta := ev.eta
	if el.s == 0 {
		eta = 0 // every product is zero: nothing to round
	}
	v.e = mul0(ev.g, el.s) + eta + ev.refErr*el.s
	if (1+ev.g)*el.s+eta >= ev.thrAcc {
		pos, neg := dotPosNeg(el.a, el.b, el.i, el.j, el.k, el.n)
		if (1+ev.g)*pos+eta >= ev.thrAcc {
			v.alt |= bound.PosInf
		}
		if (1+ev.g)*neg+eta >= ev.thrAcc {
			v.alt |= bound.NegInf
		}
		if v.alt&(bound.PosInf|bound.NegInf) == bound.PosInf|bound.NegInf {
			v.alt |= bound.NaN
		}
		alt := v.alt
		v = v.overflow(ev.thrAcc) // a definite overflow drops the finite outcome
		v.alt |= alt
	}
	return v
}

// element returns the expected outcome of one output element.
func (ev *gemmEval) element(el *gemmOperands) (ref, bnd float64, alt bound.Special) {
	mode := ev.cfg.Mode
	ep := mode.Epilogue
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
	// step's when E is the output format: bound.Output is that rounding.
	rnd := func(v ival) ival {
		steps--
		if steps == 0 && ep == mode.Out {
			return v
		}
		return v.round(ep, ev.flush)
	}
	v := ev.acc(el)
	if mode.Int8() {
		if math.Abs(v.x) > 1<<24 {
			v = v.round(tensor.Float32, ev.flush) // int32 → fp32 conversion
		}
		s := mul(exactVal(el.sa), exactVal(el.sb)).round(tensor.Float32, ev.flush)
		v = rnd(mul(s, v))
	}
	if ev.cfg.Alpha != 1 {
		v = rnd(mul(ev.alpha, v))
	}
	if ev.cfg.Beta != 0 {
		bc := mul(ev.beta, exactVal(el.c)).round(ep, ev.flush)
		v = rnd(add(v, bc))
	}
	return ev.finish(v)
}

// finish maps the final value through the output store.
func (ev *gemmEval) finish(v ival) (ref, bnd float64, alt bound.Special) {
	out := ev.cfg.Mode.Out
	sat := ev.num.Overflow == tensor.OverflowSaturate
	f, _ := out.FloatFormat()
	satPoint := func(c bound.Special) float64 {
		switch c {
		case bound.PosInf:
			return f.MaxFinite()
		case bound.NegInf:
			return -f.MaxFinite()
		}
		return 0 // NaN
	}
	classes := []bound.Special{bound.NaN, bound.PosInf, bound.NegInf}
	if v.fin {
		ref, bnd, alt = bound.Output(v.x, v.e, out, ev.num)
		if !sat {
			return ref, bnd, alt | v.alt
		}
		for _, c := range classes {
			if v.alt&c != 0 {
				bnd = math.Max(bnd, math.Abs(satPoint(c)-ref))
			}
		}
		return ref, bnd, alt
	}
	// Only non-finite outcomes: represent by the reference's own class
	// when it is among them, else by the first possible one.
	rep := bound.Of(v.x)
	if v.alt&rep == 0 {
		for _, c := range classes {
			if v.alt&c != 0 {
				rep = c
				break
			}
		}
	}
	if !sat {
		switch rep {
		case bound.PosInf:
			ref = math.Inf(1)
		case bound.NegInf:
			ref = math.Inf(-1)
		default:
			ref = math.NaN()
		}
		return ref, math.NaN(), v.alt
	}
	ref = satPoint(rep)
	for _, c := range classes {
		if v.alt&c != 0 {
			bnd = math.Max(bnd, math.Abs(satPoint(c)-ref))
		}
	}
	return ref, bnd, 0
}
