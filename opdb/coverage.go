package opdb

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// A ContractRule is a rule of an op's contract (docs/operators.md) that
// decides a result only on particular inputs: a rounding tie, a ranking
// tie, a NaN ranked against numbers, a pruned position meeting an
// infinity. A kernel that breaks such a rule passes every case without
// those inputs, so the golden set must hold some (the contract-coverage
// test in golden runs Count over every stored case).
type ContractRule struct {
	Op   string
	Name string
	// Count returns how many times inputs in (validated params p)
	// exercise the rule: elements, groups or heads where a kernel
	// following the rule and one breaking it in the plainest way (ties
	// half away instead of to even, to the higher index, NaN ranked
	// smallest, a dense product at pruned positions) give different
	// results.
	Count func(p ops.Params, in map[string]*tensor.Tensor) (int, error)
}

// ContractRules are every op's tie and ordering rules.
var ContractRules = []ContractRule{
	{Op: "vector_add", Name: "round-half-even fp16", Count: vectorAddTies(tensor.Float16)},
	{Op: "vector_add", Name: "round-half-even bf16", Count: vectorAddTies(tensor.BFloat16)},
	{Op: "vector_add", Name: "round-half-even fp32", Count: vectorAddTies(tensor.Float32)},
	{Op: "kv_update", Name: "int8 quantiser tie (k+½ exactly)", Count: kvInt8Ties(false)},
	{Op: "kv_update", Name: "int8 double-rounding tie (RN32 on k+½, exact quotient not)", Count: kvInt8Ties(true)},
	{Op: "sparse24_prune", Name: "magnitude ties to the lower index", Count: prune24Ties},
	{Op: "sparse24_prune", Name: "NaN counts as largest", Count: prune24NaNs},
	{Op: "sparse_compress", Name: "importance ties to the lower index", Count: compressTies},
	{Op: "sparse_compress", Name: "NaN importance ranks below every number", Count: compressNaNs},
	{Op: "gemm24", Name: "pruned position never multiplied (inf or NaN in b)", Count: gemm24PrunedNonFinite},
}

// vectorAddTies counts, for vector_add of dtype d, the elements whose
// exact sum x+y lies exactly halfway between two values of d (round half
// to even and half away differ there, or the tie is at least decided by
// the rule).
func vectorAddTies(d tensor.DType) func(ops.Params, map[string]*tensor.Tensor) (int, error) {
	return func(p ops.Params, in map[string]*tensor.Tensor) (int, error) {
		if p["dtype"] != d.String() {
			return 0, nil
		}
		x, y := in["x"], in["y"]
		if x == nil || y == nil {
			return 0, fmt.Errorf("vector_add: inputs x and y are missing")
		}
		n := 0
		for i := range x.Len() {
			if sum, exact := twoSum(x.Float64(i), y.Float64(i)); exact && isMidpoint(sum, d) {
				n++
			}
		}
		return n, nil
	}
}

// twoSum returns a+b rounded to float64 and whether that is the exact sum
// (Knuth's TwoSum error term is zero).
func twoSum(a, b float64) (float64, bool) {
	s := a + b
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return s, false
	}
	bv := s - a
	av := s - bv
	return s, (a-av)+(b-bv) == 0
}

// isMidpoint reports whether the finite s lies exactly halfway between
// two neighbouring finite values of d: not a value of d, and 2s − RN(s),
// the other neighbour then, is one.
func isMidpoint(s float64, d tensor.DType) bool {
	ieee := tensor.Numerics{}
	r := ieee.Round(s, d)
	if r == s || math.IsInf(r, 0) || math.IsNaN(r) {
		return false
	}
	other := 2*s - r
	return other != r && ieee.Round(other, d) == other
}

// kvInt8Ties counts, over kv_update's written int8 rows whose new_k or
// new_v row the contract fixes bit for bit (every element one product at
// most: any summation order gives it exactly), the elements at a
// quantiser tie: exact ties (RN32(v/scale) = v/scale = k+½, where half
// even and half away give different codes) or, with double, the
// double-rounding ties whose two codes differ under half-even rounding.
func kvInt8Ties(double bool) func(ops.Params, map[string]*tensor.Tensor) (int, error) {
	return func(p ops.Params, in map[string]*tensor.Tensor) (int, error) {
		if p["cache_dtype"] != ops.KVInt8 {
			return 0, nil
		}
		g, writes, err := ops.KVUpdateWrites(p, in)
		if err != nil {
			return 0, err
		}
		even := func(x float64) float64 { return math.RoundToEven(x) }
		away := func(x float64) float64 { return math.Round(x) }
		n := 0
		for _, w := range writes {
			for _, wname := range []string{"w_k", "w_v"} {
				for h := range g.H {
					row, ok := kvFixedRow(in["x"], in[wname], w.B, h, g.H, g.D)
					if !ok {
						continue
					}
					q, alt, scale := reference.QuantizeRowTies(row, even)
					for i, v := range row {
						tie, exact := reference.QuotientTie(v, scale)
						switch {
						case double && tie && !exact && q[i] != alt[i]:
							n++
						case !double && tie && exact && even(v/scale) != away(v/scale):
							n++
						}
					}
				}
			}
		}
		return n, nil
	}
}

// kvFixedRow returns new_k[b,h] = x[b,h]·w[h] rounded to fp16 when every
// element is at most one nonzero finite product (so every legal kernel
// computes it exactly), and false otherwise.
func kvFixedRow(x, w *tensor.Tensor, b, h, hn, d int) ([]float64, bool) {
	row := make([]float64, d)
	for j := range d {
		nz := 0
		for i := range d {
			xv, wv := x.Float64((b*hn+h)*d+i), w.Float64((h*d+i)*d+j)
			prod := xv * wv
			if math.IsNaN(prod) || math.IsInf(prod, 0) {
				return nil, false
			}
			if prod != 0 {
				nz++
				row[j] = prod
			}
		}
		if nz > 1 {
			return nil, false
		}
		row[j] = tensor.Numerics{}.Round(row[j], tensor.Float16)
	}
	return row, true
}

// prune24Groups calls f with every group of four of sparse24_prune's w.
func prune24Groups(in map[string]*tensor.Tensor, f func(g [4]float64)) error {
	w := in["w"]
	if w == nil || len(w.Shape) != 2 || w.Shape[1]%4 != 0 {
		return fmt.Errorf("sparse24_prune: input w missing or not [M,K] with K a multiple of 4")
	}
	for i := 0; i+4 <= w.Len(); i += 4 {
		f([4]float64{w.Float64(i), w.Float64(i + 1), w.Float64(i + 2), w.Float64(i + 3)})
	}
	return nil
}

// prune24Ties counts the groups whose second and third ranked elements
// rank equal (equal magnitudes, or both NaN): the tie rule decides which
// is kept.
func prune24Ties(_ ops.Params, in map[string]*tensor.Tensor) (int, error) {
	type key struct {
		nan bool
		mag float64
	}
	above := func(a, b key) bool { return a.nan && !b.nan || a.nan == b.nan && a.mag > b.mag }
	n := 0
	err := prune24Groups(in, func(g [4]float64) {
		var ks [4]key
		for i, v := range g {
			ks[i] = key{math.IsNaN(v), math.Abs(v)}
		}
		for i := range ks { // descending by rank
			for j := i + 1; j < len(ks); j++ {
				if above(ks[j], ks[i]) {
					ks[i], ks[j] = ks[j], ks[i]
				}
			}
		}
		if ks[1].nan == ks[2].nan && (ks[1].nan || ks[1].mag == ks[2].mag) {
			n++
		}
	})
	return n, err
}

// prune24NaNs counts the groups with one to three NaNs: a NaN is ranked
// against numbers (or, with three, against another NaN at the cut), so a
// kernel that ranks NaN smallest, or lets a comparison with NaN fall
// through, keeps other positions.
func prune24NaNs(_ ops.Params, in map[string]*tensor.Tensor) (int, error) {
	n := 0
	err := prune24Groups(in, func(g [4]float64) {
		nans := 0
		for _, v := range g {
			if math.IsNaN(v) {
				nans++
			}
		}
		if nans >= 1 && nans <= 3 {
			n++
		}
	})
	return n, err
}

// compressScores calls f with every head's importance scores and its
// kept count and sinks.
func compressScores(p ops.Params, in map[string]*tensor.Tensor, f func(scores []float64, sinks, keep int)) error {
	cfg, err := ops.ParseSparseCompress(p)
	if err != nil {
		return err
	}
	k := in["k"]
	if k == nil || len(k.Shape) != 3 {
		return fmt.Errorf("sparse_compress: input k missing or not [H,L,D]")
	}
	h, l, d := k.Shape[0], k.Shape[1], k.Shape[2]
	keep := reference.KeepCount(l, cfg.KeepRatio, cfg.Sinks)
	row := make([]float64, d)
	for hh := range h {
		scores := make([]float64, l)
		for t := range l {
			for i := range d {
				row[i] = k.Float64((hh*l+t)*d + i)
			}
			scores[t] = reference.Importance(row)
		}
		f(scores, cfg.Sinks, keep)
	}
	return nil
}

// compressTies counts the heads where a kept token past the sinks and a
// dropped one have equal importance (two NaNs included): the tie rule
// decides which is kept.
func compressTies(p ops.Params, in map[string]*tensor.Tensor) (int, error) {
	n := 0
	err := compressScores(p, in, func(scores []float64, sinks, keep int) {
		kept := make([]bool, len(scores))
		for _, i := range reference.SelectTopK(scores, sinks, keep) {
			kept[i] = true
		}
		minKept, maxDropped := math.Inf(1), math.Inf(-1)
		nanKept, nanDropped := false, false
		for i := min(sinks, len(scores)); i < len(scores); i++ {
			s := scores[i]
			switch {
			case math.IsNaN(s) && kept[i]:
				nanKept = true
			case math.IsNaN(s):
				nanDropped = true
			case kept[i]:
				minKept = math.Min(minKept, s)
			default:
				maxDropped = math.Max(maxDropped, s)
			}
		}
		if (nanKept && nanDropped) || (!math.IsInf(minKept, 1) && minKept == maxDropped) {
			n++
		}
	})
	return n, err
}

// compressNaNs counts the heads where a token past the sinks has a NaN
// importance while a number is dropped or the NaN is: the NaN is ranked
// against numbers at the cut.
func compressNaNs(p ops.Params, in map[string]*tensor.Tensor) (int, error) {
	n := 0
	err := compressScores(p, in, func(scores []float64, sinks, keep int) {
		s := min(sinks, len(scores))
		nans := 0
		for _, v := range scores[s:] {
			if math.IsNaN(v) {
				nans++
			}
		}
		if rest := len(scores) - s; nans > 0 && nans < rest && keep-s < rest {
			n++
		}
	})
	return n, err
}

// gemm24PrunedNonFinite counts, for fp16 gemm24, the outputs out[i,j]
// whose row i prunes a position k where b[k,j] is ±Inf or NaN while every
// kept product of the dot product is finite: the contract's result is
// finite there, and a kernel that multiplies the decompressed dense
// matrix (0·inf = NaN) gives NaN.
func gemm24PrunedNonFinite(p ops.Params, in map[string]*tensor.Tensor) (int, error) {
	if cfg, err := ops.ParseGEMM24(p); err == nil && !cfg.Layout.ND() {
		// An NZ b: the rule is about its values, read as ND.
		m, k, n, err := ops.GEMM24Shape(p, in)
		if err != nil {
			return 0, err
		}
		if _, in, err = ops.GEMMLayoutToND(p, in, cfg.Layout, m, k, n); err != nil {
			return 0, err
		}
	}
	av, am, b := in["a_values"], in["a_meta"], in["b"]
	if av == nil || am == nil || b == nil || len(b.Shape) != 2 || len(av.Shape) != 2 {
		return 0, fmt.Errorf("gemm24: inputs a_values, a_meta, b missing or not matrices")
	}
	if !b.DType.IsFloat() {
		return 0, nil
	}
	m, k, nn := av.Shape[0], b.Shape[0], b.Shape[1]
	n := 0
	kept := make([]bool, k)
	for i := range m {
		clear(kept)
		for g := range k / 4 {
			f, s, ok := ops.DecodeMeta24(am.U8()[i*(k/4)+g])
			if !ok {
				return 0, fmt.Errorf("gemm24: a_meta[%d,%d] malformed", i, g)
			}
			kept[4*g+f], kept[4*g+s] = true, true
		}
	cols:
		for j := range nn {
			pruned := false
			t := 0
			for kk := range k {
				bv := b.Float64(kk*nn + j)
				finite := !math.IsInf(bv, 0) && !math.IsNaN(bv)
				if !kept[kk] {
					pruned = pruned || !finite
					continue
				}
				a := av.Float64(i*(k/2) + t)
				t++
				if !finite || math.IsInf(a, 0) || math.IsNaN(a) {
					continue cols
				}
			}
			if pruned {
				n++
			}
		}
	}
	return n, nil
}
