package ops

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
)

// KVUpdate is the kv_update contract.
var KVUpdate = Register(kvUpdate{})

// kvUpdate is the contract of kv_update, one incremental KV-cache step of
// LLM decoding:
//
//	new_k[b,h] = x[b,h]·w_k[h], new_v[b,h] = x[b,h]·w_v[h]
//
// (fp16 inputs, one fp32 accumulator per element, any summation order,
// one rounding to fp16), written at position seq_lens[seq_ids[b]] of
// sequence seq_ids[b], whose length then increments; written[b] = 1.
// A padding entry (seq_id −1) and a full sequence (seq_len = L) write
// nothing (written 0); new_k and new_v hold the projection for a full
// sequence and zeros for padding. Layouts and the int8 cache: ops/kvcache.go
// and docs/operators.md. int8 rows are quantised from the fp16 new_k row v:
// scale = RN32(max|v|/127), q = clamp(round(RN32(v/scale)), ±127) with the
// profile's int8 rounding (all-zero row: scale 0, q 0); where the exact
// quotient v/scale rounds to another code (a double-rounding tie: RN32
// lands on k+½, the exact quotient does not), that code is accepted too.
//
// Judged: new_k, new_v and fp16 cache rows within γ_D(u32)·S plus the fp16
// output rounding (S = Σ|x_i·w_ij|), int8 codes and scales within what
// that projection error allows; seq_lens and written exactly. Invariants
// (CheckOutputs): every cache element and scale not written is
// bit-identical to its input; a written fp16 row equals new_k bit for
// bit; a written int8 row is exactly the quantisation of the kernel's own
// new_k row (the contract fixes those bits, but for the double-rounding
// tie, where either code is accepted). The int8 codes' bound (Expect)
// is at least ½ + 127·4·u32 around the real quotient, so it admits both
// codes of a double-rounding tie as well.
type kvUpdate struct{}

func (kvUpdate) Name() string { return "kv_update" }

func (kvUpdate) Doc() string {
	return "project x with w_k, w_v (fp32 acc, fp16 out) and write each sequence's new token at seq_lens[seq_id] of a contiguous or paged, fp16 or int8 KV cache; bump seq_lens"
}

func (kvUpdate) ParamSpecs() []ParamSpec { return kvParamSpecs() }

func (kvUpdate) DimSpecs() []DimSpec {
	return []DimSpec{
		{Name: "b", Doc: "batch entries (every fourth is padding)"},
		{Name: "s", Doc: "sequences S in the cache"},
		{Name: "h", Doc: "heads H"},
		{Name: "d", Doc: "head size D", Min: 1},
		{Name: "l", Doc: "positions per sequence L (paged: rounded up to a multiple of bs)", Min: 1},
		{Name: "bs", Doc: "paged: positions per block BS", Min: 1, Optional: true},
		{Name: "nb", Doc: "paged: physical blocks NB (default S·MB + 2)", Optional: true},
	}
}

// Dists: uniform, normal (x and the cache), special (zeros, −0,
// subnormals, repeated values in x and the cache). Weights are uniform
// scaled by 1/√D so projections stay O(1). ties: rows of x holding
// rounding ties of the int8 quantiser, exact and double-rounding ones,
// with signed-permutation weights that keep them exact
// (ops/kv_update_ties.go); the cache as uniform.
func (kvUpdate) Dists() []string { return []string{DistUniform, DistNormal, DistSpecial, DistTies} }

func (op kvUpdate) Validate(p Params) (Params, error) { return validate(op, p) }

func (op kvUpdate) Generate(p Params, g Gen) (map[string]*tensor.Tensor, error) {
	geo, d, err := kvGenGeom(op, p, g)
	if err != nil {
		return nil, err
	}
	h := geo.H
	// x and the weights are sized by b, h and d alone: refuse sizes past
	// the element cap here (an error, not MustNew's panic).
	for _, shape := range [][]int{{d.B, h, d.D}, {h, d.D, d.D}} {
		if _, err := tensor.NumElements(shape); err != nil {
			return nil, fmt.Errorf("%s: generation sizes: %w", op.Name(), err)
		}
	}
	rng := g.Rand()
	in := map[string]*tensor.Tensor{}
	in["x"] = tensor.MustNew(tensor.Float16, d.B, h, d.D)
	for i := range in["x"].Len() {
		in["x"].SetFloat64(i, kvSample(rng, g.Dist), generationNumerics)
	}
	if g.Dist == DistSpecial && d.B > 0 && h > 0 {
		for i := range d.D { // one all-zero row: int8 scale 0
			in["x"].SetFloat64(i, 0, generationNumerics)
		}
	}
	ws := 1 / math.Sqrt(float64(d.D))
	weights := []string{"w_k", "w_v"}
	if g.Dist == DistTies {
		in["w_k"], in["w_v"] = kvTieRows(rng, in["x"], h, d.D)
		weights = nil // signed permutations, made with the rows
	}
	for _, name := range weights {
		w := tensor.MustNew(tensor.Float16, h, d.D, d.D)
		for i := range w.Len() {
			w.SetFloat64(i, (float64(2*rngFloat64(rng))-1)*ws, generationNumerics)
		}
		in[name] = w
	}
	lens, ids, bt := kvGenIndices(rng, geo, d.B, true)
	in["seq_lens"], in["seq_ids"] = lens, ids
	if bt != nil {
		in["block_tables"] = bt
	}
	in["k_cache"], in["k_scale"] = kvGenCache(rng, g.Dist, geo, lens, bt)
	in["v_cache"], in["v_scale"] = kvGenCache(rng, g.Dist, geo, lens, bt)
	if !geo.Int8 {
		delete(in, "k_scale")
		delete(in, "v_scale")
	}
	return in, nil
}

// kvUpdateGeom reads the geometry and B from validated params and inputs.
func kvUpdateGeom(op Op, p Params, in map[string]*tensor.Tensor) (KVGeom, int, error) {
	g, err := kvGeom(op, p, in)
	if err != nil {
		return g, 0, err
	}
	x, ok := in["x"]
	if !ok || x == nil {
		return g, 0, fmt.Errorf("%s: input %q is missing", op.Name(), "x")
	}
	if len(x.Shape) != 3 {
		return g, 0, fmt.Errorf("%s: input %q: shape %v, want [B,H,D]", op.Name(), "x", x.Shape)
	}
	return g, x.Shape[0], nil
}

func (op kvUpdate) Inputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	g, b, err := kvUpdateGeom(op, p, in)
	if err != nil {
		return nil, err
	}
	return kvInputs(op, g, b, []TensorSpec{
		{Name: "x", DType: tensor.Float16, Shape: []int{b, g.H, g.D}},
		{Name: "w_k", DType: tensor.Float16, Shape: []int{g.H, g.D, g.D}},
		{Name: "w_v", DType: tensor.Float16, Shape: []int{g.H, g.D, g.D}},
	}, in, true, false)
}

func (op kvUpdate) Outputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	g, b, err := kvUpdateGeom(op, p, in)
	if err != nil {
		return nil, err
	}
	specs := []TensorSpec{
		{Name: "new_k", DType: tensor.Float16, Shape: []int{b, g.H, g.D}},
		{Name: "new_v", DType: tensor.Float16, Shape: []int{b, g.H, g.D}},
	}
	for _, s := range kvCacheSpecs(g) {
		if s.Name != "block_tables" {
			specs = append(specs, s)
		}
	}
	return append(specs,
		TensorSpec{Name: "seq_lens", DType: tensor.Int32, Shape: []int{g.S}},
		TensorSpec{Name: "written", DType: tensor.Uint8, Shape: []int{b}}), nil
}

// KVWrite is one row kv_update writes: batch entry B into cache row Row.
type KVWrite struct{ B, Seq, Pos, Row int }

// KVUpdateWrites returns the rows kv_update writes for inputs that hold
// to its contract, in batch order: entries that are not padding and whose
// sequence is not full.
func KVUpdateWrites(p Params, in map[string]*tensor.Tensor) (KVGeom, []KVWrite, error) {
	op := KVUpdate
	g, _, err := kvUpdateGeom(op, p, in)
	if err != nil {
		return g, nil, err
	}
	var bt []int32
	if g.Paged {
		bt = in["block_tables"].I32()
	}
	lens := in["seq_lens"].I32()
	var out []KVWrite
	for b, s := range in["seq_ids"].I32() {
		if s < 0 || int(lens[s]) >= g.L {
			continue
		}
		pos := int(lens[s])
		out = append(out, KVWrite{B: b, Seq: int(s), Pos: pos, Row: g.Row(bt, int(s), pos)})
	}
	return g, out, nil
}

// Expect: see the type's doc. The new_k bound is γ_D(u32)·S (products of
// fp16 values are exact in fp32, D−1 additions any order, Higham 3.1)
// before the fp16 store (bound.Output adds the store's half ulp). An int8
// code q = 127·v/amax moves, when v and amax move by at most b_v and
// b_max, by at most 127·((|v|+b_v)/(amax−b_max) − |v|/amax), plus the
// fp32 roundings of the scale and the quotient (127·4·u32: the two
// roundings move q by a factor (1+u)²/(1−u) at most, and
// (1+u)²/(1−u) − 1 = (3u+u²)/(1−u) ≤ 4u for u ≤ 1/5) and the integer
// rounding (½, added by bound.Output); when amax ≤ b_max any code is
// possible, and no two codes in ±127 are more than 254 apart, which caps
// the bound. The scale moves by b_max/127 plus its fp32 rounding.
func (op kvUpdate) Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	g, writes, err := KVUpdateWrites(p, in)
	if err != nil {
		return nil, err
	}
	b := in["x"].Shape[0]
	hd := g.H * g.D
	u32 := tensor.Float32.UnitRoundoff()
	gam := bound.Gamma(g.D, u32)
	out := map[string]*bound.Expected{}
	// Caches and scales start as their inputs, unwritten elements: held
	// as the inputs themselves (bound.NewUnchanged), the rows written
	// overridden below, so that Expect costs what is written, not the
	// cache. seq_lens (S elements) is an ordinary Expected.
	for _, name := range []string{"k_cache", "v_cache", "k_scale", "v_scale"} {
		if t, ok := in[name]; ok {
			out[name] = bound.NewUnchanged(t, num)
		}
	}
	out["seq_lens"] = kvUnwrittenExpected(in["seq_lens"], num)
	wr := bound.NewExpected(b)
	lens := out["seq_lens"]
	for _, w := range writes {
		wr.Ref[w.B] = 1
		lens.Ref[w.Seq]++
	}
	out["written"] = wr
	padding := make([]bool, b)
	for i, s := range in["seq_ids"].I32() {
		padding[i] = s < 0
	}
	xv := in["x"].Float64s()
	v, mag := make([]float64, b*hd), make([]float64, b*hd)
	for _, kv := range []struct{ w, newName, cache, scale string }{
		{"w_k", "new_k", "k_cache", "k_scale"}, {"w_v", "new_v", "v_cache", "v_scale"},
	} {
		clear(v)
		clear(mag)
		kvProject(xv, in[kv.w].Float64s(), b, g.H, g.D, v, mag)
		e := bound.NewExpected(b * hd)
		parallel.For(b*hd, kvCopyGrain, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if padding[i/hd] {
					continue // zero row, exactly
				}
				e.Ref[i], e.Bound[i], e.Alt[i] = bound.Output(v[i], gam*mag[i], tensor.Float16, num)
			}
		})
		out[kv.newName] = e
		ce := out[kv.cache]
		for _, w := range writes {
			// The row's span of the cache (H·D elements) and of the scales (H).
			cr, err := ce.Override(w.Row*hd, hd)
			if err != nil {
				return nil, fmt.Errorf("%s: %s row %d: %w", op.Name(), kv.cache, w.Row, err)
			}
			var sr *bound.Expected
			if g.Int8 {
				if sr, err = out[kv.scale].Override(w.Row*g.H, g.H); err != nil {
					return nil, fmt.Errorf("%s: %s row %d: %w", op.Name(), kv.scale, w.Row, err)
				}
			}
			for h := range g.H {
				src := (w.B*g.H + h) * g.D
				dst := h * g.D // in the row's span
				if !g.Int8 {
					for i := range g.D {
						cr.Ref[dst+i], cr.Bound[dst+i], cr.Alt[dst+i] = e.Ref[src+i], e.Bound[src+i], e.Alt[src+i]
					}
					continue
				}
				amax, bmax := 0.0, 0.0
				for i := range g.D {
					amax, bmax = math.Max(amax, math.Abs(v[src+i])), math.Max(bmax, e.Bound[src+i])
				}
				sr.Ref[h], sr.Bound[h], sr.Alt[h] = bound.Output(amax/127, bmax/127, tensor.Float32, num)
				for i := range g.D {
					r, bq := 0.0, 127.0
					if amax > bmax {
						a := math.Abs(v[src+i])
						r = 127 * v[src+i] / amax
						bq = float64(127*((a+e.Bound[src+i])/(amax-bmax)-a/amax)) + float64(127*4*u32)
					}
					cr.Ref[dst+i], cr.Bound[dst+i], cr.Alt[dst+i] = bound.Output(r, math.Min(bq, 254), tensor.Int8, num)
					cr.Ref[dst+i] = math.Max(-127, math.Min(127, cr.Ref[dst+i]))
				}
			}
		}
	}
	return out, nil
}
