package metamorphic

import (
	"maps"
	"slices"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// perBatch are the outputs of the cache ops with one row per batch entry.
var perBatch = []string{"new_k", "new_v", "written", "out"}

// kvBatchPermuted (kv_update, decode_attention): permuting the batch
// entries, the rows of x or q together with their seq_ids, permutes the
// per-entry outputs (new_k, new_v, written; out) and leaves everything
// else (the caches, their scales, seq_lens) as it was. An entry's
// results depend on its own row, its sequence and the cache alone, and
// the cache row an entry writes is its sequence's write position, not its
// place in the batch, so the same rows are written. What the contract
// fixes holds bitwise: written, seq_lens and every cache byte no entry
// writes (elements exact in both runs). What it leaves to the summation
// order (new_k, new_v and the cache rows written from them, out) holds
// within the sum of the two runs' bounds: a kernel may order an entry's
// dot products differently at another batch place (another core, a tail
// tile), which is legal. The follow-up is judged by its own bound as
// well; the relation names a kernel that writes entries to rows by their
// place (e.g. in sorted seq_id order) or mixes rows between entries.
func kvBatchPermuted(x *checker) []error {
	head := "x"
	if x.base.Case.Op == "decode_attention" {
		head = "q"
	}
	h, ids := x.base.Inputs[head], x.base.Inputs["seq_ids"]
	if h == nil || ids == nil || len(h.Shape) == 0 || h.Shape[0] < 2 {
		return nil
	}
	perm := x.permutation(h.Shape[0])
	in := maps.Clone(x.base.Inputs)
	in[head], in["seq_ids"] = permuteRows(h, perm), permuteRows(ids, perm)
	const what = "the batch entries permuted"
	got := x.follow(what, x.base.Case.Op, nil, in)
	if got == nil {
		return x.errs
	}
	for _, name := range slices.Sorted(maps.Keys(got.Outputs)) {
		at := identity
		if slices.Contains(perBatch, name) {
			at = rows(got.Outputs[name].Len()/len(perm), func(r int) int { return perm[r] })
		}
		x.compare(what, name, got, x.base, at, bounded)
	}
	return x.errs
}

// The cache tensors and how many elements of each a cache row holds, in
// heads and head elements.
var cacheTensors = []struct {
	name  string
	heads bool // one element per head (scales), else H·D
}{{"k_cache", false}, {"v_cache", false}, {"k_scale", true}, {"v_scale", true}}

// kvLayout (kv_update, decode_attention): the same logical cache laid out
// paged or contiguous gives the same results. A paged case is laid out
// contiguously (position p of sequence s at row s·L+p, L = MB·BS); a
// contiguous one is paged with the largest block size of 16, 8, 4, 2, 1
// dividing L and a block table drawn from the seed, mapping every logical
// block to a distinct physical block, with two spare physical blocks no
// table names. Positions no table maps hold NaN (int8: code 0, scale
// NaN), which no correct kernel reads. Position p of sequence s then holds
// the same bits in both, and an op reads and writes caches by logical
// position, so the outputs agree once the cache outputs are mapped back
// by the block table: bitwise where the contract fixes the bits (written,
// seq_lens, every cache byte not written), within the sum of the two runs'
// bounds where it does not (new_k, new_v, the cache rows written from
// them, out), since a kernel may tile and order its sums differently for
// each layout. A paged case whose tables share a physical block between
// sequences has no contiguous twin (one write would show in two
// sequences): the relation skips it.
func kvLayout(x *checker) []error {
	op, err := ops.Lookup(x.base.Case.Op)
	if err != nil {
		return nil
	}
	g, err := ops.KVGeomOf(op, x.base.Params, x.base.Inputs)
	if err != nil || g.Rows() == 0 || g.H*g.D == 0 {
		return nil
	}
	in := maps.Clone(x.base.Inputs)
	var fromRow func(r int) int // follow-up cache row → base cache row
	var layout, what string
	if g.Paged {
		bt := x.base.Inputs["block_tables"].I32()
		if sharesBlocks(bt) {
			return nil
		}
		layout, what = ops.KVContiguous, "the paged cache laid out contiguously"
		c := ops.KVGeom{Int8: g.Int8, S: g.S, L: g.L, H: g.H, D: g.D}
		fwd := make([]int, c.Rows())
		for s := range g.S {
			for p := range g.L {
				fwd[s*g.L+p] = g.Row(bt, s, p)
			}
		}
		fromRow = func(r int) int { return fwd[r] }
		delete(in, "block_tables")
		relayout(in, x.base.Inputs, g, c, fromRow)
	} else {
		layout, what = ops.KVPaged, "the contiguous cache paged"
		bs := 1
		for _, v := range []int{16, 8, 4, 2} {
			if g.L%v == 0 {
				bs = v
				break
			}
		}
		mb := g.L / bs
		p := ops.KVGeom{Paged: true, Int8: g.Int8, S: g.S, L: g.L, H: g.H, D: g.D, NB: g.S*mb + 2, BS: bs, MB: mb}
		phys := x.rand().Perm(p.NB)
		bt := tensor.MustNew(tensor.Int32, g.S, mb)
		inv := make([]int, p.Rows())
		for i := range inv {
			inv[i] = -1
		}
		for s := range g.S {
			for j := range mb {
				bt.I32()[s*mb+j] = int32(phys[s*mb+j])
				for e := range bs {
					inv[phys[s*mb+j]*bs+e] = s*g.L + j*bs + e
				}
			}
		}
		fromRow = func(r int) int { return inv[r] }
		in["block_tables"] = bt
		relayout(in, x.base.Inputs, g, p, fromRow)
	}
	got := x.follow(what, x.base.Case.Op, x.withParam("layout", layout), in)
	if got == nil {
		return x.errs
	}
	for _, name := range slices.Sorted(maps.Keys(got.Outputs)) {
		at := identity
		for _, ct := range cacheTensors {
			if ct.name == name {
				per := g.H * g.D
				if ct.heads {
					per = g.H
				}
				at = rows(per, fromRow)
			}
		}
		x.compare(what, name, got, x.base, at, bounded)
	}
	return x.errs
}

// sharesBlocks reports whether a block table names a physical block twice.
func sharesBlocks(bt []int32) bool {
	seen := map[int32]bool{}
	for _, v := range bt {
		if v >= 0 {
			if seen[v] {
				return true
			}
			seen[v] = true
		}
	}
	return false
}

// relayout sets in's cache tensors to those of base laid out in geometry
// to: row r of each from row fromRow(r) of base's (geometry from), rows
// mapped from nowhere NaN (int8 codes 0).
func relayout(in, base map[string]*tensor.Tensor, from, to ops.KVGeom, fromRow func(int) int) {
	for _, ct := range cacheTensors {
		src, ok := base[ct.name]
		if !ok {
			continue
		}
		shape, per := to.CacheShape(), from.H*from.D
		if ct.heads {
			shape, per = shape[:3], from.H
		}
		dst := tensor.MustNew(src.DType, shape...)
		for r := range to.Rows() {
			fr := fromRow(r)
			for e := range per {
				if fr >= 0 {
					dst.SetBits(r*per+e, src.Bits(fr*per+e))
				} else {
					dst.SetBits(r*per+e, nan(src.DType))
				}
			}
		}
		in[ct.name] = dst
	}
}

// nan is the bits of a quiet NaN of d, 0 for an integer dtype.
func nan(d tensor.DType) uint64 {
	switch d {
	case tensor.Float16:
		return 0x7e00
	case tensor.Float32:
		return 0x7fc00000
	}
	return 0
}

// gqaRepeated (decode_attention): grouped-query attention with Hq = g·Hkv
// query heads equals multi-head attention on the caches with each kv head
// repeated g times (Hkv' = Hq, scales repeated with their heads), within
// the sum of the two runs' bounds. Query head h reads kv head h/g in the
// case and kv head h, a copy of kv head h/g, in the follow-up: the same
// data, so the same reference; a kernel may order its sums differently
// when it shares a kv head between query heads (the contract does not fix
// the order), so no bitwise relation holds. It names a kernel that maps
// query heads to kv heads wrongly (h mod Hkv instead of h/g), which an MHA
// case (g = 1) cannot show. A case with g = 1 has nothing to repeat: the
// relation skips it.
func gqaRepeated(x *checker) []error {
	op, err := ops.Lookup("decode_attention")
	if err != nil {
		return nil
	}
	g, err := ops.KVGeomOf(op, x.base.Params, x.base.Inputs)
	q := x.base.Inputs["q"]
	if err != nil || q == nil || len(q.Shape) != 3 || g.H == 0 {
		return nil
	}
	hq := q.Shape[1]
	grp := hq / g.H
	if grp <= 1 {
		return nil
	}
	in := maps.Clone(x.base.Inputs)
	for _, ct := range cacheTensors {
		src, ok := x.base.Inputs[ct.name]
		if !ok {
			continue
		}
		shape, d := slices.Clone(src.Shape), g.D
		shape[2] = hq
		if ct.heads {
			d = 1
		}
		dst := tensor.MustNew(src.DType, shape...)
		for r := range g.Rows() {
			for h := range hq {
				for e := range d {
					dst.SetBits((r*hq+h)*d+e, src.Bits((r*g.H+h/grp)*d+e))
				}
			}
		}
		in[ct.name] = dst
	}
	const what = "the kv heads repeated to one per query head"
	if got := x.follow(what, "decode_attention", nil, in); got != nil {
		x.compare(what, "out", got, x.base, identity, bounded)
	}
	return x.errs
}
