package suites_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// kvProps are the decode geometries the properties draw from.
type kvProp struct {
	Seed          uint64
	Int8          bool
	D, BS, HKV, G int
}

func kvPropGen() gopter.Gen {
	return gopter.CombineGens(gen.UInt64(), gen.Bool(), gen.IntRange(1, 24), gen.IntRange(1, 8), gen.IntRange(1, 3), gen.IntRange(1, 3)).
		Map(func(v []any) kvProp {
			return kvProp{Seed: v[0].(uint64), Int8: v[1].(bool), D: v[2].(int), BS: v[3].(int), HKV: v[4].(int), G: v[5].(int)}
		})
}

// decodeIn generates paged decode_attention inputs for k.
func (k kvProp) decodeIn(t *testing.T) (ops.Params, map[string]*tensor.Tensor) {
	p := ops.Params{"layout": ops.KVPaged, "cache_dtype": ops.KVFP16}
	if k.Int8 {
		p["cache_dtype"] = ops.KVInt8
	}
	p, _ = ops.DecodeAttention.Validate(p)
	in, err := ops.DecodeAttention.Generate(p, ops.Gen{Dist: ops.DistNormal, Seed: k.Seed,
		Dims: map[string]int{"b": 6, "s": 5, "hq": k.HKV * k.G, "h": k.HKV, "d": k.D, "l": 3*k.BS + 1, "bs": k.BS}})
	if err != nil {
		t.Fatalf("decode_attention %v %+v: %v", p, k, err)
	}
	return p, in
}

func decodeRun(t *testing.T, p ops.Params, in map[string]*tensor.Tensor) *tensor.Tensor {
	out, _, err := kernels.DecodeAttentionKernel(context.Background(), npu.MustNewDevice(npu.Ascend910B()), p, in)
	if err != nil {
		t.Fatalf("decode_attention %v: %v", p, err)
	}
	return out["out"]
}

func bitsEqual(a, b *tensor.Tensor) bool { ok, _ := tensor.BitsEqual(a, b); return ok }

// TestKVProperties: gopter properties of the KV-cache kernels (fixed seed).
func TestKVProperties(t *testing.T) {
	skipUnlessEmulator(t)
	ps := properties(t)
	ps.Property("permuting the batch permutes decode_attention's outputs", prop.ForAll(func(k kvProp) bool {
		p, in := k.decodeIn(t)
		base := decodeRun(t, p, in)
		b, hq, d := in["q"].Shape[0], in["q"].Shape[1], in["q"].Shape[2]
		perm := rand.New(rand.NewPCG(k.Seed, 2)).Perm(b)
		pin := clone(in)
		for i, j := range perm { // new entry i is old entry j
			pin["seq_ids"].I32()[i] = in["seq_ids"].I32()[j]
			for e := range hq * d {
				pin["q"].SetBits(i*hq*d+e, in["q"].Bits(j*hq*d+e))
			}
		}
		got := decodeRun(t, p, pin)
		for i, j := range perm {
			for e := range hq * d {
				if got.Bits(i*hq*d+e) != base.Bits(j*hq*d+e) {
					return false
				}
			}
		}
		return true
	}, kvPropGen()))
	ps.Property("paged and contiguous layouts of the same cache give bit-identical outputs", prop.ForAll(func(k kvProp) bool {
		p, in := k.decodeIn(t)
		cp, cin := contiguousOf(t, p, in)
		return bitsEqual(decodeRun(t, p, in), decodeRun(t, cp, cin))
	}, kvPropGen()))
	ps.Property("GQA equals MHA over the kv heads repeated G times (Hq = Hkv is plain MHA)", prop.ForAll(func(k kvProp) bool {
		p, in := k.decodeIn(t)
		return bitsEqual(decodeRun(t, p, in), decodeRun(t, p, repeatHeads(in, k.G)))
	}, kvPropGen()))
	ps.Property("relabelling physical blocks (shuffled block tables) changes nothing but placement", prop.ForAll(func(k kvProp) bool {
		p, in := k.decodeIn(t)
		return bitsEqual(decodeRun(t, p, in), decodeRun(t, p, shuffleBlocks(in, k.Seed)))
	}, kvPropGen()))
	ps.TestingRun(t)
}

func clone(in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	out := map[string]*tensor.Tensor{}
	for k, v := range in {
		out[k] = v.Clone()
	}
	return out
}

// rowCopy copies n elements per row from row rs of src to row rd of dst.
func rowCopy(dst, src *tensor.Tensor, rd, rs, n int) {
	for e := range n {
		dst.SetBits(rd*n+e, src.Bits(rs*n+e))
	}
}

// contiguousOf lays the paged cache of in out contiguously ([S, MB·BS,
// H, D]); positions of unallocated blocks hold zeros (never read).
func contiguousOf(t *testing.T, p ops.Params, in map[string]*tensor.Tensor) (ops.Params, map[string]*tensor.Tensor) {
	g, err := ops.KVGeomOf(ops.DecodeAttention, p, in)
	if err != nil {
		t.Fatal(err)
	}
	cp := p.Clone()
	cp["layout"] = ops.KVContiguous
	out := clone(in)
	delete(out, "block_tables")
	cg := g
	cg.Paged = false
	bt := in["block_tables"].I32()
	for _, name := range []string{"k_cache", "v_cache", "k_scale", "v_scale"} {
		src, ok := in[name]
		if !ok {
			continue
		}
		shape := cg.CacheShape()
		n := g.H * g.D
		if name == "k_scale" || name == "v_scale" {
			shape, n = shape[:3], g.H
		}
		dst := tensor.MustNew(src.DType, shape...)
		for s := range g.S {
			for pos := range g.L {
				if r := g.Row(bt, s, pos); r >= 0 {
					rowCopy(dst, src, s*g.L+pos, r, n)
				}
			}
		}
		out[name] = dst
	}
	return cp, out
}

// repeatHeads turns a GQA input set into MHA: every kv head repeated g
// times in the caches and scales, so kv head h·g+r is old head h.
func repeatHeads(in map[string]*tensor.Tensor, g int) map[string]*tensor.Tensor {
	out := clone(in)
	for _, name := range []string{"k_cache", "v_cache", "k_scale", "v_scale"} {
		src, ok := in[name]
		if !ok {
			continue
		}
		shape := append([]int(nil), src.Shape...)
		h := shape[2]
		per := 1
		if len(shape) == 4 {
			per = shape[3]
		}
		shape[2] = h * g
		dst := tensor.MustNew(src.DType, shape...)
		rows := shape[0] * shape[1]
		for r := range rows {
			for hh := range h * g {
				for e := range per {
					dst.SetBits((r*h*g+hh)*per+e, src.Bits((r*h+hh/g)*per+e))
				}
			}
		}
		out[name] = dst
	}
	return out
}

// shuffleBlocks relabels the physical blocks by a seeded permutation:
// block b moves to π(b), tables follow.
func shuffleBlocks(in map[string]*tensor.Tensor, seed uint64) map[string]*tensor.Tensor {
	out := clone(in)
	nb := in["k_cache"].Shape[0]
	perm := rand.New(rand.NewPCG(seed, 3)).Perm(nb)
	for i, v := range in["block_tables"].I32() {
		if v >= 0 {
			out["block_tables"].I32()[i] = int32(perm[v])
		}
	}
	for _, name := range []string{"k_cache", "v_cache", "k_scale", "v_scale"} {
		src, ok := in[name]
		if !ok {
			continue
		}
		n := src.Len() / nb
		for b := range nb {
			rowCopy(out[name], src, perm[b], b, n)
		}
	}
	return out
}
