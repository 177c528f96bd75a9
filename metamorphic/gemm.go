package metamorphic

import (
	"maps"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// gemm24Dense: gemm24(values, meta, b) = gemm(decompress(values, meta), b)
// in the same mode and accumulate, within the sum of the two runs' bounds
// (gemm24's for its K/2 kept terms, gemm's for all K, whose pruned terms
// are products with +0). Both sum in an order the contract leaves free, so
// no bitwise relation holds; each run's bound is valid for every order.
// Where a pruned position k of row i meets a non-finite b[k,j] the
// contract makes them differ (gemm24 never multiplies a pruned position,
// the dense product gives 0·inf = NaN there): those elements of out are
// left out of the comparison. The dense operand is decompressed from the
// case's own inputs, which for fp16 the generator made with the
// contract's prune, so the relation is gemm24(prune(w), b) =
// gemm(decompress(prune(w)), b).
func gemm24Dense(x *checker) []error {
	if !ndLayout(x.base.Params) {
		return nil
	}
	in := x.base.Inputs
	vals, meta, b := in["a_values"], in["a_meta"], in["b"]
	if vals == nil || meta == nil || b == nil || len(b.Shape) != 2 {
		return nil
	}
	m, k, n := vals.Shape[0], b.Shape[0], b.Shape[1]
	if vals.DType == tensor.Int8 && k > ops.GEMMInt8MaxK {
		// gemm24's int32 accumulator sums K/2 kept products, gemm's all K:
		// past gemm's limit the dense follow-up is not a legal gemm case,
		// so the relation says nothing here (explore drew K = 131072).
		return nil
	}
	a, ok := x.decompress(vals, meta, m, k, "the case's input a_meta")
	if !ok {
		return x.errs
	}
	dense := map[string]*tensor.Tensor{"a": a, "b": b}
	for _, s := range []string{"scale_a", "scale_b"} {
		if t, ok := in[s]; ok {
			dense[s] = t
		}
	}
	p := ops.Params{"mode": x.base.Params["mode"], "accumulate": x.base.Params["accumulate"]}
	const what = "gemm of the decompressed a"
	got := x.follow(what, "gemm", p, dense)
	if got == nil {
		return x.errs
	}
	// skip[i*n+j]: a pruned k of row i meets a non-finite b[k,j].
	skip := make([]bool, m*n)
	if b.DType.IsFloat() {
		for i := range m {
			for kk := range k {
				if kept(meta, k/4, i, kk) {
					continue
				}
				for j := range n {
					if !finite(b.Float64(kk*n + j)) {
						skip[i*n+j] = true
					}
				}
			}
		}
	}
	at := func(i int) int {
		if skip[i] {
			return -1
		}
		return i
	}
	x.compare(what, "out", got, x.base, at, bounded)
	return x.errs
}

// gemmRowsPermuted: permuting the rows of a (with those of c and of a
// per-row scale_a) permutes the rows of out, within the sum of the two
// runs' bounds. Row i of out depends on row i of a, c and scale_a alone,
// but a kernel may tile, split K or order its sums differently for a row
// at another place (a tail tile, another core), which the contract
// allows, so no bitwise relation holds.
func gemmRowsPermuted(x *checker) []error {
	if !ndLayout(x.base.Params) {
		return nil
	}
	a := x.base.Inputs["a"]
	if a == nil || len(a.Shape) != 2 || a.Shape[0] < 2 {
		return nil
	}
	m := a.Shape[0]
	perm := x.permutation(m)
	in := maps.Clone(x.base.Inputs)
	for name, t := range x.base.Inputs {
		switch {
		case name == "a" || name == "c":
			in[name] = permuteRows(t, perm)
		case name == "scale_a" && t.Len() == m:
			in[name] = permuteRows(t, perm)
		}
	}
	const what = "a with its rows permuted"
	got := x.follow(what, "gemm", nil, in)
	if got == nil {
		return x.errs
	}
	out := got.Outputs["out"]
	if out == nil {
		return x.errs
	}
	x.compare(what, "out", got, x.base, rows(out.Len()/m, func(r int) int { return perm[r] }), bounded)
	return x.errs
}

// ndLayout reports whether every operand of a gemm or gemm24 case is ND:
// the relations permute rows of and decompress ND matrices; an NZ case is
// the ND one's values laid out, which ops' TestGEMMLayoutExpectIsNDMapped
// and the kernels' TestGEMMNZMatchesND hold instead.
func ndLayout(p ops.Params) bool {
	for _, name := range []string{"format_a", "format_b", "format_out"} {
		if v, ok := p[name]; ok && v != ops.FormatND {
			return false
		}
	}
	return true
}

// permuteRows returns t with row r taken from row perm[r] of t (rows
// along the first dimension).
func permuteRows(t *tensor.Tensor, perm []int) *tensor.Tensor {
	p := tensor.MustNew(t.DType, t.Shape...)
	per := t.Len() / len(perm)
	for r, from := range perm {
		for e := range per {
			p.SetBits(r*per+e, t.Bits(from*per+e))
		}
	}
	return p
}

// kept reports whether dense column kk of row i is one of the two indices
// meta (groups bytes a row) keeps.
func kept(meta *tensor.Tensor, groups, i, kk int) bool {
	mb := meta.U8()[i*groups+kk/4]
	e := uint8(kk % 4)
	return e == mb&3 || e == mb>>2&3
}
