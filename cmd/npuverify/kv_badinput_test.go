package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// TestKVBadInputs drives malformed KV-cache inputs through `npuverify
// run`: each must exit 2 with a message naming the tensor and the entry
// at fault.
func TestKVBadInputs(t *testing.T) {
	gen := func(op ops.Op, p ops.Params, dims map[string]int) (ops.Params, map[string]*tensor.Tensor) {
		t.Helper()
		vp, err := op.Validate(p)
		if err != nil {
			t.Fatal(err)
		}
		in, err := op.Generate(vp, ops.Gen{Dims: dims, Dist: ops.DistUniform, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		return vp, in
	}
	paged := ops.Params{"layout": ops.KVPaged, "cache_dtype": ops.KVInt8}
	kvDims := map[string]int{"b": 6, "s": 5, "h": 2, "d": 8, "l": 16, "bs": 4}
	daDims := map[string]int{"b": 6, "s": 5, "hq": 4, "h": 2, "d": 8, "l": 16, "bs": 4}
	for _, c := range []struct {
		name string
		op   ops.Op
		dims map[string]int
		edit func(in map[string]*tensor.Tensor)
		want []string
	}{
		{"cache rank", ops.DecodeAttention, daDims, func(in map[string]*tensor.Tensor) {
			k := in["k_cache"]
			r := tensor.MustNew(k.DType, k.Shape[0]*k.Shape[1], k.Shape[2], k.Shape[3])
			for i := range k.Len() {
				r.SetBits(i, k.Bits(i))
			}
			in["k_cache"] = r
		}, []string{`"k_cache"`, "rank 3"}},
		{"block table past NB", ops.DecodeAttention, daDims, func(in map[string]*tensor.Tensor) {
			in["block_tables"].I32()[1*in["block_tables"].Shape[1]] = int32(in["k_cache"].Shape[0] + 5)
		}, []string{`"block_tables"`, "block_tables[1,0]", "NB="}},
		{"seq_len past L", ops.KVUpdate, kvDims, func(in map[string]*tensor.Tensor) { in["seq_lens"].I32()[0] = 17 },
			[]string{`"seq_lens"`, "seq_lens[0] = 17", "L = 16"}},
		{"negative seq_len", ops.DecodeAttention, daDims, func(in map[string]*tensor.Tensor) { in["seq_lens"].I32()[1] = -1 },
			[]string{`"seq_lens"`, "seq_lens[1] = -1"}},
		{"scale shape", ops.KVUpdate, kvDims, func(in map[string]*tensor.Tensor) {
			s := in["v_scale"]
			in["v_scale"] = tensor.MustNew(tensor.Float32, s.Shape[0], s.Shape[1], s.Shape[2]+1)
		}, []string{`"v_scale"`, "shape"}},
		{"Hq not a multiple of Hkv", ops.DecodeAttention, daDims, func(in map[string]*tensor.Tensor) {
			in["q"] = tensor.MustNew(tensor.Float16, 6, 3, 8)
		}, []string{`"q"`, "Hq = 3", "Hkv = 2"}},
		{"unallocated write block", ops.KVUpdate, kvDims, func(in map[string]*tensor.Tensor) {
			s := in["seq_ids"].I32()[0]
			pos := int(in["seq_lens"].I32()[s])
			in["seq_lens"].I32()[s] = int32(pos / 4 * 4) // write at a block start
			in["block_tables"].I32()[int(s)*in["block_tables"].Shape[1]+pos/4] = -1
		}, []string{`"block_tables"`, "write position"}},
		{"duplicate seq_id", ops.KVUpdate, kvDims, func(in map[string]*tensor.Tensor) {
			in["seq_ids"].I32()[1] = in["seq_ids"].I32()[0]
		}, []string{`"seq_ids"`, "seq_ids[1]", "duplicates seq_ids[0]"}},
		{"seq_id out of range", ops.DecodeAttention, daDims, func(in map[string]*tensor.Tensor) { in["seq_ids"].I32()[2] = 9 },
			[]string{`"seq_ids"`, "seq_ids[2] = 9"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, in := gen(c.op, paged, c.dims)
			c.edit(in)
			dir := t.TempDir()
			args := []string{"run", c.op.Name()}
			for k, v := range p {
				args = append(args, "--param", k+"="+v)
			}
			for name, v := range in {
				f := filepath.Join(dir, name+".npy")
				if err := tensor.WriteNpyFile(f, v); err != nil {
					t.Fatal(err)
				}
				args = append(args, "--in", name+"="+f)
			}
			args = append(args, "--out", filepath.Join(dir, "out"))
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			msg := stderr.String()
			if code != 2 || !strings.HasPrefix(msg, "npuverify: ") {
				t.Fatalf("%s %s (%s): exit %d, stderr %q; want exit 2 with an npuverify: message", c.op.Name(), p, c.name, code, msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%s %s (%s): stderr %q; want it to contain %q", c.op.Name(), p, c.name, msg, w)
				}
			}
		})
	}
}
