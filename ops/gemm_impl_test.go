package ops

import (
	"math"
	"math/big"

	"github.com/npuverify/npuverify/tensor"
)

// This file holds tiny alternative gemm implementations, each a legal
// evaluation of the contract in a different summation order (or a buggy
// one), written independently of the emulator: exact sums use math/big,
// fp32 arithmetic uses Go float32 (IEEE binary32, round to nearest even)
// with explicit conversions around every product so that no FMA fusion can
// happen.

// dotImpl names an implementation of the dot product.
type dotImpl int

const (
	implSeqFused   dotImpl = iota // acc ← RN(acc + a·b), product exact (the model's sequential)
	implSeqUnfused                // acc ← RN(acc + RN(a·b)), k ascending
	implBlocked16                 // acc ← RN(acc + exact 16-block sum) (the model's blocked16)
	implPairwise                  // RN(a·b), then pairwise (recursive halving) sums
	implReversed                  // acc ← RN(acc + RN(a·b)), k descending
	implSplitK                    // four k-slices summed sequentially, then the partials added
	implFP16Acc                   // BUG: accumulates in fp16 whatever the mode says
)

var implNames = map[dotImpl]string{
	implSeqFused: "seq-fused", implSeqUnfused: "seq-unfused", implBlocked16: "blocked16",
	implPairwise: "pairwise", implReversed: "reversed", implSplitK: "split-k4", implFP16Acc: "fp16-acc-bug",
}

// legalImpls are the implementations the bound must accept.
var legalImpls = []dotImpl{implSeqFused, implSeqUnfused, implBlocked16, implPairwise, implReversed, implSplitK}

// roundBig rounds x to the nearest value of format f, ties to even,
// keeping subnormals; beyond MaxFinite (after rounding) it gives ±Inf.
func roundBig(x *big.Float, f tensor.Format) float64 {
	if x.Sign() == 0 {
		return 0
	}
	if x.IsInf() {
		if x.Signbit() {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	// x = m·2^exp, 0.5 ≤ |m| < 1: the leading bit has weight 2^(exp−1).
	exp := x.MantExp(nil)
	p := f.P
	if lead := exp - 1; lead < f.Emin {
		p = f.P - (f.Emin - lead) // subnormal: fewer significant bits
	}
	var r float64
	if p <= 0 {
		// |x| < 2^(Emin−P+1)·... : the candidates are 0 and the smallest
		// subnormal η; halfway is η/2, ties to even (0).
		eta := f.MinSubnormal()
		ax := new(big.Float).Abs(x)
		if ax.Cmp(big.NewFloat(eta/2)) > 0 {
			r = eta
		}
		if x.Signbit() {
			r = -r
		}
		return r
	}
	y := new(big.Float).SetMode(big.ToNearestEven).SetPrec(uint(p)).Set(x)
	r, _ = y.Float64() // exact: p ≤ 24 bits
	if math.Abs(r) > f.MaxFinite() {
		return math.Copysign(math.Inf(1), r)
	}
	return r
}

// exactSum returns RN_f(Σ xs) with one rounding (xs finite).
func exactSum(f tensor.Format, xs ...float64) float64 {
	s := new(big.Float).SetPrec(2400)
	for _, x := range xs {
		s.Add(s, new(big.Float).SetFloat64(x))
	}
	return roundBig(s, f)
}

// rn rounds a float64 that is the exact value of one operation (or exact
// in float64 by construction) to f.
func rn(f tensor.Format, x float64) float64 { return f.RoundNearestEven(x) }

func fmtOf(d tensor.DType) tensor.Format { f, _ := d.FloatFormat(); return f }

// anyNonFinite reports whether a product is Inf or NaN.
func anyNonFinite(ps []float64) bool {
	for _, p := range ps {
		if math.IsInf(p, 0) || math.IsNaN(p) {
			return true
		}
	}
	return false
}

// implDot evaluates one dot product of exact products ps with impl in the
// accumulator format acc (Float32, Float16; Int32 is exact in any order).
func implDot(impl dotImpl, acc tensor.DType, ps []float64) float64 {
	if acc == tensor.Int32 {
		var s int64
		for _, p := range ps {
			s += int64(p)
		}
		return float64(s)
	}
	if impl == implFP16Acc {
		acc = tensor.Float16
	}
	f := fmtOf(acc)
	// add rounds the sum of two acc-format values; exact in float64 for
	// fp16 and, by innocuous double rounding (53 ≥ 2·24+2), correct for
	// fp32 (Go float32 addition).
	add := func(x, y float64) float64 {
		if acc == tensor.Float32 {
			return float64(float32(x) + float32(y))
		}
		return rn(f, x+y)
	}
	prod := func(p float64) float64 { // RN(a·b): p is the exact product
		if acc == tensor.Float32 {
			return float64(float32(p))
		}
		return rn(f, p)
	}
	special := anyNonFinite(ps)
	switch impl {
	case implSeqFused, implFP16Acc:
		var s float64
		for _, p := range ps {
			if special {
				s = add(s, prod(p))
			} else {
				s = exactSum(f, s, p)
			}
		}
		return s
	case implSeqUnfused:
		var s float64
		for _, p := range ps {
			s = add(s, prod(p))
		}
		return s
	case implReversed:
		var s float64
		for k := len(ps) - 1; k >= 0; k-- {
			s = add(s, prod(ps[k]))
		}
		return s
	case implBlocked16:
		var s float64
		for k0 := 0; k0 < len(ps); k0 += GEMMBlockK {
			blk := ps[k0:min(k0+GEMMBlockK, len(ps))]
			if special {
				t := s
				for _, p := range blk {
					t += p
				}
				s = prod(t)
			} else {
				s = exactSum(f, append([]float64{s}, blk...)...)
			}
		}
		return s
	case implPairwise:
		r := make([]float64, len(ps))
		for i, p := range ps {
			r[i] = prod(p)
		}
		var pw func([]float64) float64
		pw = func(x []float64) float64 {
			switch len(x) {
			case 0:
				return 0
			case 1:
				return x[0]
			}
			h := len(x) / 2
			return add(pw(x[:h]), pw(x[h:]))
		}
		return pw(r)
	case implSplitK:
		var total float64
		q := (len(ps) + 3) / 4
		for k0 := 0; k0 < len(ps); k0 += max(q, 1) {
			var s float64
			for _, p := range ps[k0:min(k0+q, len(ps))] {
				s = add(s, prod(p))
			}
			total = add(total, s)
		}
		return total
	}
	panic("unknown impl")
}

// implGEMM runs a whole gemm with dot implementation impl and the model's
// epilogue (fusedEpilogue: alpha·acc + beta·c rounded once in E instead).
func implGEMM(cfg GEMMConfig, in map[string]*tensor.Tensor, impl dotImpl, fusedEpilogue bool, num tensor.Numerics) *tensor.Tensor {
	m, k, n, err := GEMMDims(in)
	if err != nil {
		panic(err)
	}
	a, b := in["a"].Float64s(), in["b"].Float64s()
	out := tensor.MustNew(cfg.Mode.Out, m, n)
	ep := cfg.Mode.Epilogue
	fe := fmtOf(ep)
	// rnE rounds an exact product or sum of two E-values (exact or
	// innocuously double-rounded in float64).
	rnE := func(x float64) float64 {
		if ep == tensor.Float32 {
			return float64(float32(x))
		}
		return rn(fe, x)
	}
	alpha, beta := rnE(cfg.Alpha), rnE(cfg.Beta)
	ps := make([]float64, k)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for kk := 0; kk < k; kk++ {
				ps[kk] = a[i*k+kk] * b[kk*n+j]
			}
			v := implDot(impl, cfg.Mode.Acc, ps)
			if cfg.Mode.Int8() {
				sa, sb := in["scale_a"].Float64s(), in["scale_b"].Float64s()
				v = float64(float32(v))
				s := float64(float32(gemmScaleAt(sa, i) * gemmScaleAt(sb, j)))
				v = float64(float32(s * v))
			}
			switch {
			case fusedEpilogue && cfg.Beta != 0:
				c := in["c"].Float64(i*n + j)
				if anyNonFinite([]float64{v, c, alpha * v, beta * c}) {
					v = rnE(float64(alpha*v) + float64(beta*c))
				} else {
					v = exactSum(fe, alpha*v, beta*c)
				}
			case fusedEpilogue:
				v = rnE(alpha * v)
			default:
				if cfg.Alpha != 1 {
					v = rnE(alpha * v)
				}
				if cfg.Beta != 0 {
					v = rnE(v + rnE(beta*in["c"].Float64(i*n+j)))
				}
			}
			out.SetFloat64(i*n+j, v, num)
		}
	}
	return out
}
