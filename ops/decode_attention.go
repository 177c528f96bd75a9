package ops

import (
	"fmt"
	"math"
	"strconv"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// DecodeAttention is the decode_attention contract.
var DecodeAttention = Register(decodeAttention{})

// decodeAttention is the contract of decode_attention: single-query
// attention of every batch entry over its sequence's KV cache,
//
//	out[b,h] = Σ_{j<n} softmax_j(σ·q[b,h]·k_j)·v_j,  n = seq_lens[seq_ids[b]],
//
// with k_j, v_j the cache rows of kv head h/(Hq/Hkv) (grouped-query
// attention) and σ = RN32(scale). Padding entries (seq_id −1) and empty
// sequences give zero rows. Positions ≥ n are never read (the generator
// fills them with NaN). Cache layouts and int8 scales: ops/kvcache.go.
//
// Evaluation model (fp32 throughout, any order and any split of the
// context into partitions combined flash-decoding style): int8 values
// dequantised as RN32(code·scale) (or the scale applied after the dot
// product); scores ŝ_j = σ·(q·k_j) with one fp32 accumulator; max
// subtraction; exp with relative error at most DecodeExpRelErr; the sum
// Z and the weighted sum N in fp32; out = RN16(RN32(N/Z)). Partitions may
// rescale their partial (m_p, Z_p, N_p) by exp(m_p − M): one more
// subtraction, exp and multiplication per weight.
//
// Bound (per output element; u = u32 = 2^-24, derivation in
// decodeAttentionBound): with p_j the exact weights, o the exact output,
// S_j = σ·Σ_i|q_i·k_ji|:
//
//  1. score error: |ŝ_j − s_j| ≤ Δ_j = γ_{D+2}(u)·S_j (γ_{D+3} for int8: the
//     dequantisation rounding);
//  2. the shift by the computed maximum cancels in the softmax; the two
//     subtractions (ŝ_j − m_p, m_p − M) add at most 2u·(|s_j − m| + 2Δ),
//     Δ = max Δ_j; so every unnormalised weight is exp(s_j − m)·(1+ρ_j)
//     with |ρ_j| ≤ R_j = exp(Δ_j + 2u(|s_j−m|+2Δ))·(1+u_e)²·(1+u)² − 1
//     (two exps, two rescaling products);
//  3. normalising weights perturbed by ρ: |õ − o| = |Σ p_jρ_j(v_j − o)| /
//     (1 + Σ p_jρ_j) ≤ Σ p_j R_j |v_j − o| / (1 − R), R = max R_j
//     (Σ p_j(v_j − o) = 0);
//  4. the sums N and Z in fp32 over n terms plus the partition combine:
//     each within γ_{n+4}(u) (γ_{n+5} for int8 v) relative to Σ|terms|,
//     so |N̂/Ẑ − Ñ/Z̃| ≤ 2γ/(1−γ)·Σ p̃_j|v_j| ≤ 2γ/(1−γ)·A·(1+R)/(1−R),
//     A = Σ p_j|v_j|;
//  5. the fp32 division adds u·(|o| + bound), the fp16 store half an ulp
//     (bound.Output).
//
// Ascend's fp16 attention standard (|g − r| ≤ 2^-8·max(1, |r|)) is
// reported beside the bound by AscendAttentionRatio.
type decodeAttention struct{}

// DecodeExpRelErr is the relative error the contract allows the vector
// unit's fp32 exp: 4 units in the last place (4·2^-24).
const DecodeExpRelErr = 4.0 / (1 << 24)

func (decodeAttention) Name() string { return "decode_attention" }

func (decodeAttention) Doc() string {
	return "single-query (decode) attention over a contiguous or paged, fp16 or int8 KV cache, grouped-query heads, fp32 softmax, fp16 out"
}

func (decodeAttention) ParamSpecs() []ParamSpec {
	return append(kvParamSpecs(), ParamSpec{Name: "scale", Doc: "score scale σ (positive; default 1/√D), rounded to fp32",
		Examples: []string{"1", "0.125", "0.0883883476", "0.01", "2", "10", "1e-6"}})
}

func (decodeAttention) DimSpecs() []DimSpec {
	return []DimSpec{
		{Name: "b", Doc: "batch entries (every fourth is padding)"},
		{Name: "s", Doc: "sequences S in the cache"},
		{Name: "hq", Doc: "query heads Hq (a multiple of h)", Min: 1, MultipleOf: "h"},
		{Name: "h", Doc: "kv heads Hkv", Min: 1},
		{Name: "d", Doc: "head size D", Min: 1},
		{Name: "l", Doc: "positions per sequence L (paged: rounded up to a multiple of bs)", Min: 1},
		{Name: "bs", Doc: "paged: positions per block BS", Min: 1, Optional: true},
		{Name: "nb", Doc: "paged: physical blocks NB (default S·MB + 2)", Optional: true},
	}
}

// Dists: uniform, normal, special (zeros, −0, subnormals, ties) fill q and
// the caches; peaked scales q by 512 so scores reach the hundreds: the softmax
// concentrates on a few positions, and exp without max subtraction
// overflows.
func (decodeAttention) Dists() []string {
	return []string{DistUniform, DistNormal, DistPeaked, DistSpecial}
}

func (op decodeAttention) Validate(p Params) (Params, error) {
	v, err := validate(op, p)
	if err != nil {
		return nil, err
	}
	if s, ok := v["scale"]; ok {
		x, err := parseKVScale(op, s)
		if err != nil {
			return nil, err
		}
		v["scale"] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return v, nil
}

// DecodeScale returns σ = RN32(scale) for validated params and head size d.
func DecodeScale(p Params, d int) float64 {
	if s, ok := p["scale"]; ok {
		x, _ := strconv.ParseFloat(s, 64)
		return float64(float32(x))
	}
	return float64(float32(1 / math.Sqrt(float64(d))))
}

func (op decodeAttention) Generate(p Params, g Gen) (map[string]*tensor.Tensor, error) {
	geo, d, err := kvGenGeom(op, p, g)
	if err != nil {
		return nil, err
	}
	hq, err := dim(op, g, "hq")
	if err != nil {
		return nil, err
	}
	h := geo.H
	if h == 0 || hq%h != 0 {
		return nil, fmt.Errorf("%s: generation sizes: hq=%d is not a multiple of h=%d", op.Name(), hq, h)
	}
	if _, err := tensor.NumElements([]int{d.B, hq, d.D}); err != nil { // an error, not MustNew's panic
		return nil, fmt.Errorf("%s: generation sizes: q: %w", op.Name(), err)
	}
	rng := g.Rand()
	dist := g.Dist
	if dist == DistPeaked {
		dist = DistUniform
	}
	q := tensor.MustNew(tensor.Float16, d.B, hq, d.D)
	for i := range q.Len() {
		v := kvSample(rng, dist)
		if g.Dist == DistPeaked {
			v *= 512
		}
		q.SetFloat64(i, v, generationNumerics)
	}
	in := map[string]*tensor.Tensor{"q": q}
	lens, ids, bt := kvGenIndices(rng, geo, d.B, false)
	in["seq_lens"], in["seq_ids"] = lens, ids
	if bt != nil {
		in["block_tables"] = bt
	}
	in["k_cache"], in["k_scale"] = kvGenCache(rng, dist, geo, lens, bt)
	in["v_cache"], in["v_scale"] = kvGenCache(rng, dist, geo, lens, bt)
	if !geo.Int8 {
		delete(in, "k_scale")
		delete(in, "v_scale")
	}
	return in, nil
}

// decodeGeom reads the geometry, B and Hq; Hq must be a multiple of Hkv.
func decodeGeom(op Op, p Params, in map[string]*tensor.Tensor) (KVGeom, int, int, error) {
	g, err := kvGeom(op, p, in)
	if err != nil {
		return g, 0, 0, err
	}
	q, ok := in["q"]
	if !ok || q == nil {
		return g, 0, 0, fmt.Errorf("%s: input %q is missing", op.Name(), "q")
	}
	if len(q.Shape) != 3 {
		return g, 0, 0, fmt.Errorf("%s: input %q: shape %v, want [B,Hq,D]", op.Name(), "q", q.Shape)
	}
	hq := q.Shape[1]
	if g.H == 0 || hq%g.H != 0 {
		return g, 0, 0, fmt.Errorf("%s: input %q: Hq = %d query heads is not a multiple of Hkv = %d (input \"k_cache\" %v)", op.Name(), "q", hq, g.H, in["k_cache"].Shape)
	}
	return g, q.Shape[0], hq, nil
}

func (op decodeAttention) Inputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	g, b, hq, err := decodeGeom(op, p, in)
	if err != nil {
		return nil, err
	}
	return kvInputs(op, g, b, []TensorSpec{{Name: "q", DType: tensor.Float16, Shape: []int{b, hq, g.D}}}, in, false, true)
}

func (op decodeAttention) Outputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	g, b, hq, err := decodeGeom(op, p, in)
	if err != nil {
		return nil, err
	}
	return []TensorSpec{{Name: "out", DType: tensor.Float16, Shape: []int{b, hq, g.D}}}, nil
}

// KVRows returns the dequantised K or V rows (exact: code·scale in
// float64) of kv head h for positions [0, n) of sequence s.
func KVRows(g KVGeom, in map[string]*tensor.Tensor, cache, scale string, s, n, h int) [][]float64 {
	flat := make([]float64, n*g.D)
	kvRowsInto(g, kvBlockTables(g, in), in[cache], in[scale], s, 0, n, h, flat)
	rows := make([][]float64, n)
	for pos := range rows {
		rows[pos] = flat[pos*g.D : (pos+1)*g.D : (pos+1)*g.D]
	}
	return rows
}

// kvBlockTables is block_tables' values for paged g, else nil.
func kvBlockTables(g KVGeom, in map[string]*tensor.Tensor) []int32 {
	if g.Paged {
		return in["block_tables"].I32()
	}
	return nil
}

// kvRowsInto stores KVRows' rows of positions [p0, p0+n) back to back
// in dst[:n·D].
func kvRowsInto(g KVGeom, bt []int32, c, scale *tensor.Tensor, s, p0, n, h int, dst []float64) {
	rows := make([]int, n)
	for pos := range rows {
		rows[pos] = g.Row(bt, s, p0+pos)
	}
	kvConvertRows(g, c, scale, h, rows, 0, n, dst)
}

// daPrefetchAhead is how many rows past a chunk kvConvertRows hands the
// conversion, which prefetches that far ahead (daCvtF16Rows).
const daPrefetchAhead = 16

// kvConvertRows stores the values of kv head h in the cache rows
// rows[c0:c0+cn] back to back in dst[:cn·D]: exact (fp16 to float64;
// int8 code times its fp32 scale, exact in float64), so the bits do not
// depend on how the positions are chunked.
func kvConvertRows(g KVGeom, c, scale *tensor.Tensor, h int, rows []int, c0, cn int, dst []float64) {
	if !g.Int8 {
		daCvtF16Rows(dst, c.F16()[h*g.D:], rows[c0:min(c0+cn+daPrefetchAhead, len(rows))], cn, g.D, g.H*g.D)
		return
	}
	for pos, r := range rows[c0 : c0+cn] {
		row, off := dst[pos*g.D:(pos+1)*g.D], (r*g.H+h)*g.D
		sc := scale.Float64(r*g.H + h)
		for i, x := range c.I8()[off : off+g.D] {
			row[i] = float64(x) * sc
		}
	}
}

// f16ToF64 converts an fp16 value to float64 exactly: a normal one by
// moving its fields (rebiasing the exponent), the rest (zeros,
// subnormals, infinities, NaN) through float16's fp32 conversion.
func f16ToF64(x float16.Float16) float64 {
	b := uint64(x)
	e := b >> 10 & 0x1f
	if e == 0 || e == 0x1f {
		return f16ToF64Rare(x)
	}
	return math.Float64frombits(b>>15<<63 | (e+1023-15)<<52 | (b&0x3ff)<<42)
}

// f16ToF64Rare is f16ToF64's path for zeros, subnormals, infinities and
// NaN, out of line so that the common path inlines.
//
//go:noinline
func f16ToF64Rare(x float16.Float16) float64 { return float64(x.Float32()) }

// decodeChunk is how many positions' rows decode_attention's Expect
// holds in float64 at once (64 rows of D = 128: 64 KiB), so the rows stay
// in cache while every query head of the group reads them.
const decodeChunk = 64

// decodeScratch is one worker's buffers for decode_attention's Expect,
// grown to the longest sequence it meets and reused for every item.
type decodeScratch struct {
	rows              []float64 // decodeChunk·D
	rowIdx            []int     // n: the cache row of each position
	qT                []float64 // the group's queries, daLanes at a time, transposed
	s4, m4, w         []float64 // decodeChunk·daLanes, decodeChunk·daLanes, decodeChunk
	s, p, mag, rj     []float64 // grp·n each: head g's at [g·n, (g+1)·n)
	o, bnd, t3, a     []float64 // grp·D each
	rmax, gn          []float64 // grp each
	nCap, dCap, grCap int
}

// daGroups is the number of daLanes-wide groups of grp query heads.
func daGroups(grp int) int { return (grp + daLanes - 1) / daLanes }

func (sc *decodeScratch) grow(n, d, grp int) {
	if n > sc.nCap || d != sc.dCap || grp != sc.grCap {
		n = max(n, sc.nCap)
		sc.nCap, sc.dCap, sc.grCap = n, d, grp
		sc.rows = make([]float64, decodeChunk*d)
		sc.rowIdx = make([]int, n)
		sc.qT = make([]float64, daGroups(grp)*daLanes*d)
		sc.s4, sc.m4, sc.w = make([]float64, decodeChunk*daLanes), make([]float64, decodeChunk*daLanes), make([]float64, decodeChunk)
		sc.s, sc.p, sc.mag, sc.rj = make([]float64, grp*n), make([]float64, grp*n), make([]float64, grp*n), make([]float64, grp*n)
		sc.o, sc.bnd, sc.t3, sc.a = make([]float64, grp*d), make([]float64, grp*d), make([]float64, grp*d), make([]float64, grp*d)
		sc.rmax, sc.gn = make([]float64, grp), make([]float64, grp)
	}
}

// Expect: see the type's doc and decodeAttentionBound. The (batch entry,
// kv head) items are independent and split over cores; each item's
// arithmetic is the serial one (every sum over positions in position
// order, every sum over i in i order), so the result does not depend on
// the split, the chunking or the kernels' vectorisation
// (TestDecodeExpectMatchesSerial, TestDecodeKernelsAsmMatchGo).
//
// Per item: one pass over k (the scores and magnitudes of all the group's
// heads, four heads per vector), one over v for the outputs o and the
// bound's A = Σ p_j|v_j| together, and one more over v for the bound's
// Σ p_j R_j |v_j − o|, which needs the finished o (a chunk of rows at a
// time, converted again: the conversion costs less than holding every
// row in float64).
func (op decodeAttention) Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	g, b, hq, _ := decodeGeom(op, p, in)
	sigma := DecodeScale(p, g.D)
	grp := hq / g.H
	lens, ids := in["seq_lens"].I32(), in["seq_ids"].I32()
	bt := kvBlockTables(g, in)
	kc, vc, ks, vs := in["k_cache"], in["v_cache"], in["k_scale"], in["v_scale"]
	e := bound.NewExpected(b * hq * g.D)
	qv := in["q"].Float64s()
	d := g.D
	parallel.For(b*g.H, 1, func(lo, hi int) {
		var sc decodeScratch
		for it := lo; it < hi; it++ {
			bb, h := it/g.H, it%g.H
			s := ids[bb]
			if s < 0 || lens[s] == 0 {
				continue // zero row, exactly
			}
			n := int(lens[s])
			sc.grow(n, d, grp)
			q0 := (bb*hq + h*grp) * d // the group's first query head
			rowIdx := sc.rowIdx[:n]
			for pos := range rowIdx {
				rowIdx[pos] = g.Row(bt, int(s), pos)
			}
			clear(sc.qT)
			for gi := range grp {
				qT := sc.qT[gi/daLanes*daLanes*d:]
				for i, x := range qv[q0+gi*d : q0+(gi+1)*d] {
					qT[i*daLanes+gi%daLanes] = x
				}
			}
			// Pass over k: scores and magnitudes of every head.
			for c0 := 0; c0 < n; c0 += decodeChunk {
				cn := min(decodeChunk, n-c0)
				rows := sc.rows[:cn*d]
				kvConvertRows(g, kc, ks, h, rowIdx, c0, cn, rows)
				for g0 := 0; g0 < grp; g0 += daLanes {
					s4, m4 := sc.s4[:cn*daLanes], sc.m4[:cn*daLanes]
					daScores(sc.qT[g0*d:(g0+daLanes)*d], rows, d, s4, m4)
					for gi := g0; gi < min(g0+daLanes, grp); gi++ {
						sg, mg := sc.s[gi*n+c0:gi*n+c0+cn], sc.mag[gi*n+c0:gi*n+c0+cn]
						for j := range cn {
							sg[j], mg[j] = s4[j*daLanes+gi-g0]*sigma, m4[j*daLanes+gi-g0]*sigma
						}
					}
				}
			}
			clear(sc.o[:grp*d])
			clear(sc.a[:grp*d])
			for gi := range grp {
				reference.AttentionSoftmax(sc.s[gi*n:(gi+1)*n], sc.p[gi*n:(gi+1)*n])
			}
			// First pass over v: the outputs and Σ p_j|v_j|.
			for c0 := 0; c0 < n; c0 += decodeChunk {
				cn := min(decodeChunk, n-c0)
				rows := sc.rows[:cn*d]
				kvConvertRows(g, vc, vs, h, rowIdx, c0, cn, rows)
				for gi := range grp {
					daAccumOA(sc.p[gi*n+c0:gi*n+c0+cn], rows, sc.o[gi*d:(gi+1)*d], sc.a[gi*d:(gi+1)*d])
				}
			}
			// Second pass over v: Σ p_j R_j |v_j − o|.
			anyFinite := false
			for gi := range grp {
				sc.rmax[gi], sc.gn[gi] = decodeBoundWeights(g, sc.s[gi*n:(gi+1)*n], sc.mag[gi*n:(gi+1)*n], sc.rj[gi*n:(gi+1)*n])
				anyFinite = anyFinite || (sc.rmax[gi] < 1 && sc.gn[gi] < 1)
			}
			clear(sc.t3[:grp*d])
			for c0 := 0; anyFinite && c0 < n; c0 += decodeChunk {
				cn := min(decodeChunk, n-c0)
				rows := sc.rows[:cn*d]
				kvConvertRows(g, vc, vs, h, rowIdx, c0, cn, rows)
				for gi := range grp {
					if sc.rmax[gi] < 1 && sc.gn[gi] < 1 {
						w, pg, rg := sc.w[:cn], sc.p[gi*n+c0:gi*n+c0+cn], sc.rj[gi*n+c0:gi*n+c0+cn]
						for j := range w {
							w[j] = pg[j] * rg[j]
						}
						daAccumT3(w, rows, sc.o[gi*d:(gi+1)*d], sc.t3[gi*d:(gi+1)*d])
					}
				}
			}
			for gi := range grp {
				o, bnd := sc.o[gi*d:(gi+1)*d], sc.bnd[gi*d:(gi+1)*d]
				decodeBoundFinish(o, sc.t3[gi*d:(gi+1)*d], sc.a[gi*d:(gi+1)*d], sc.rmax[gi], sc.gn[gi], bnd)
				off := q0 + gi*d
				for i := range d {
					e.Ref[off+i], e.Bound[off+i], e.Alt[off+i] = bound.Output(o[i], bnd[i], tensor.Float16, num)
				}
			}
		}
	})
	return map[string]*bound.Expected{"out": e}, nil
}

// decodeAttentionBound is the bound of one head (steps 1–5 of the type's
// doc), computed in three steps so that Expect can feed v in chunks:
// decodeBoundWeights (the relative weight errors R_j, R and γ_{n+4}), the
// sums over positions in position order (A = Σ p_j|v_j| by daAccumOA
// beside the output, Σ p_j·R_j·|v_j − o| by daAccumT3 once o is known)
// and decodeBoundFinish.

// decodeBoundWeights stores in rj the bound R_j on each unnormalised
// weight's relative error from the exact scores s and score magnitudes
// mag, and returns R = max R_j and γ_{n+4} (γ_{n+5} for int8).
func decodeBoundWeights(g KVGeom, s, mag, rj []float64) (rmax, gn float64) {
	u := tensor.Float32.UnitRoundoff()
	n := len(s)
	extra := 0
	if g.Int8 {
		extra = 1
	}
	gs := bound.Gamma(g.D+2+extra, u)
	m := math.Inf(-1)
	delta := 0.0
	for j := range n {
		m = reference.Max(m, s[j])
		delta = reference.Max(delta, gs*mag[j])
	}
	ee, eu := math.Pow(1+DecodeExpRelErr, 2), math.Pow(1+u, 2)
	for j := range n {
		// Each product rounded on its own (float64(…)), as on amd64 v1,
		// so the bound's bits do not depend on whether the compiler fuses.
		hj := float64(gs*mag[j]) + float64(2*u*(math.Abs(s[j]-m)+2*delta))
		rj[j] = float64(math.Exp(hj)*ee*eu) - 1
		rmax = reference.Max(rmax, rj[j])
	}
	return rmax, bound.Gamma(n+4+extra, u)
}

// decodeBoundFinish stores in out the bound of each element of o from its
// sums t3 and a, R and γ (steps 3–5; +Inf when R or γ reaches 1).
func decodeBoundFinish(o, t3, a []float64, rmax, gn float64, out []float64) {
	if rmax >= 1 || gn >= 1 {
		for i := range out {
			out[i] = math.Inf(1)
		}
		return
	}
	u := tensor.Float32.UnitRoundoff()
	for i := range o {
		t := (t3[i] + 2*gn/(1-gn)*a[i]*(1+rmax)/(1-rmax)) / (1 - rmax)
		// fp32 division; the float64 evaluation of this bound is far below
		// its last term, but round up by one part in 2^40 to keep it above.
		out[i] = (t + float64(u*(math.Abs(o[i])+t))) * (1 + 0x1p-40)
	}
}

// AscendAttentionRatio is Ascend's fp16 attention standard as a ratio:
// max over finite elements of |g − r| / (2^-8·max(1, |r|)); the standard
// holds when it is ≤ 1. Reported beside the bound, never instead of it.
func AscendAttentionRatio(got *tensor.Tensor, want *bound.Expected) float64 {
	worst := 0.0
	for i := range want.Len() {
		r, gv := want.Ref[i], got.Float64(i)
		if math.IsNaN(r) || math.IsInf(r, 0) || math.IsNaN(gv) || math.IsInf(gv, 0) {
			continue
		}
		worst = math.Max(worst, math.Abs(gv-r)/(math.Ldexp(1, -8)*math.Max(1, math.Abs(r))))
	}
	return worst
}
