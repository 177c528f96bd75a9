package bound

import (
	"math"

	"github.com/npuverify/npuverify/tensor"
)

// Gamma returns γ_n(u) = n·u / (1 − n·u), the classic bound on the
// relative error of n chained roundings, and +Inf when n·u ≥ 1 (the
// bound is then void and callers must treat the result as unbounded;
// Growth stays finite there).
func Gamma(n int, u float64) float64 {
	nu := float64(float64(n) * u) // rounded: 1 − nu must not fuse
	if nu >= 1 {
		return math.Inf(1)
	}
	return nu / (1 - nu)
}

// Growth returns (1+u)^n − 1, rounded up: the exact worst relative error
// of n chained roundings, each a factor (1+δ) with |δ| ≤ u. It is at most
// γ_n(u), equal to first order, and stays finite when n·u ≥ 1, so a long
// fp16 reduction still has a (large) bound.
func Growth(n int, u float64) float64 {
	if n == 0 {
		return 0
	}
	return expm1(float64(n)*log1p(u)) * (1 + 0x1p-40)
}

// MagUp returns an upper bound on S = Σ_k s_k given s, the float64 sum,
// in any order, of n ≤ 2^52 non-negative terms s_k that are themselves
// exact float64 values (a product of two values of at most 26 significant
// bits and float64's exponent range is: every fp32, fp16, bf16 and int8
// product). s itself may lie below S: each term passes through at most
// n−1 roundings to nearest, each a factor of at least 1 − 2^-53, so
// s ≥ (1 − 2^-53)^(n−1)·S and, as (1 − u)^m ≥ 1 − m·u,
//
//	S ≤ s·(1 + γ_{n−1}(2^-53)).
//
// (n = 2^14 terms of 1 and 2^-53 summed in that order give s = 1, below
// S by 2^-39.) The float64 evaluation of that product rounds γ, 1 + γ and
// the product, at most 5·2^-53 relative in all for γ ≤ 1; the extra 2^-50
// covers them, so the result is rigorous. A zero, infinite or NaN s is
// returned unchanged.
func MagUp(s float64, n int) float64 { return MagUpIn(s, n, 0x1p-53) }

// MagUpIn is MagUp for a sum s of n non-negative terms added in a format
// of unit roundoff u (≥ 2^-53, such as fp32's 2^-24) in which every term
// is exact and no partial sum underflows or overflows: the same argument
// gives S ≤ s·(1 + γ_{n−1}(u)), and the same extra 2^-50 covers the
// float64 evaluation. When (n−1)·u ≥ 1 the result is +Inf (no bound).
func MagUpIn(s float64, n int, u float64) float64 {
	if n <= 1 || s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return s
	}
	return s * (1 + Gamma(n-1, u) + 0x1p-50)
}

// Dot is the accumulation of N terms (products, or the terms of a sum)
// into an accumulator format, in any order, tiling or split: whatever the
// order, each term reaches the result through at most N roundings of the
// accumulator (one if the term is a rounded product, at most N−1
// additions), so for terms t_k with exact sum σ, S = Σ|t_k|,
//
//	|acc − σ| ≤ G·S + Eta,  G = Growth(N, u_acc),  Eta = N·Under·(1+G)
//
// where Under bounds a product's underflow (an addition whose result is
// subnormal is exact); under a flush profile every step may flush, so the
// count is 2N. An implementation that rounds each product, fuses
// multiply-add, sums a block exactly or pairwise, or accumulates in a
// wider format satisfies it. An integer accumulator is exact (the caller
// guarantees it cannot overflow).
type Dot struct {
	N int
	// Exact is set for integer accumulators.
	Exact bool
	// G is Growth(N, u_acc), the relative error of the accumulation.
	G float64
	// Eta is the underflow allowance of the whole accumulation.
	Eta float64
	// RefErr is γ_N(2^-53): the float64 reference sum's error per unit of S.
	RefErr float64
	// Threshold is the accumulator's overflow threshold.
	Threshold float64
}

// NewDot returns the accumulation of n terms into format acc under num.
func NewDot(n int, acc tensor.DType, num tensor.Numerics) Dot {
	d := Dot{N: n, RefErr: Gamma(n, 0x1p-53)}
	f, err := NewFormat(acc, num)
	if err != nil {
		d.Exact = true
		return d
	}
	d.G = Growth(n, f.U)
	steps := float64(n)
	if f.Flush {
		steps *= 2
	}
	d.Eta = steps * f.Under * (1 + d.G)
	d.Threshold = f.Threshold
	return d
}

// Terms describes the N terms of one accumulation.
type Terms struct {
	// Ref is the float64 sum of the terms' references (in any order). A
	// non-finite Ref carries the class of the exact terms' IEEE sum: ±Inf
	// when the infinite terms share a sign, NaN otherwise.
	Ref float64
	// Mag is an upper bound on Σ|t_k| over the finite terms' references
	// (a float64 sum may lie below it: round it up with MagUp).
	Mag float64
	// Err is the terms' total error Σe_k (0 for exact products).
	Err float64
	// PosNeg returns upper bounds on the sum of the positive finite terms
	// and on the sum of the magnitudes of the negative ones (MagUp); Sum
	// calls it only when a partial sum might overflow.
	PosNeg func() (pos, neg float64)
}

// Sum returns the accumulator after every term. Its finite part is Ref ±
// (Err + G·(Mag+Err) + Eta + RefErr·Mag). A partial sum can overflow to
// +Inf iff the positive terms can reach the threshold, (1+G)·(pos+Err) +
// Eta ≥ Threshold, likewise −Inf with the negative ones, and NaN when
// both can (two partial sums of a split meet). Infinite terms give their
// infinity, or NaN when the finite terms can overflow to the other one.
func (d Dot) Sum(t Terms) Interval {
	if d.Exact {
		return Interval{Ref: t.Ref, Err: t.Err, Finite: true}
	}
	if math.IsNaN(t.Ref) {
		return Interval{Ref: t.Ref, Alt: NaN}
	}
	reach := func(m, eta float64) bool { return float64((1+d.G)*(m+t.Err))+eta >= d.Threshold }
	if math.IsInf(t.Ref, 0) {
		v := Interval{Ref: t.Ref, Alt: Of(t.Ref)}
		pos, neg := t.PosNeg()
		opp := pos
		if t.Ref > 0 {
			opp = neg
		}
		if reach(opp, d.Eta) {
			v.Alt |= NaN
		}
		return v
	}
	v := Interval{Ref: t.Ref, Finite: true}
	eta := d.Eta
	if t.Mag == 0 && t.Err == 0 {
		eta = 0 // every term is zero: nothing to round
	}
	v.Err = t.Err + mul0(d.G, t.Mag+t.Err) + eta + float64(d.RefErr*t.Mag)
	if reach(t.Mag, eta) {
		pos, neg := t.PosNeg()
		if reach(pos, eta) {
			v.Alt |= PosInf
		}
		if reach(neg, eta) {
			v.Alt |= NegInf
		}
		if v.Alt&(PosInf|NegInf) == PosInf|NegInf {
			v.Alt |= NaN
		}
		alt := v.Alt
		v = v.Overflow(d.Threshold) // a definite overflow drops the finite outcome
		v.Alt |= alt
	}
	return v
}
