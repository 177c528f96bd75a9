package kernels

import (
	"context"
	"fmt"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// Legal sizes past the UB (issue 33): shapes the op contracts allow that
// the kernels' tilings once sized past the default profile's 192 KiB UB
// ("UB: alloc ... exceeds the capacity"), each at (or just above) the
// first size that failed, kept small in element count. Every case runs
// on ascend910b, must pass its bound and invariants, and must give the
// same bits as on a profile whose UB holds the untiled layout: tiling the
// offending dimension changes the cost, never the bits.

// legalCase is one shape of one op.
type legalCase struct {
	op     string
	params ops.Params
	dims   map[string]int
	kernel KernelFunc
	seed   uint64
}

func (c legalCase) String() string {
	return fmt.Sprintf("%s %v dims=%v seed=%d", c.op, c.params, c.dims, c.seed)
}

// bigUB is ascend910b with a UB large enough for every case below
// untiled: the layout each kernel took before its dimension was tiled.
func bigUB() npu.Profile {
	p := npu.Ascend910B()
	p.Name = "ascend910b_big_ub"
	p.UBBytes = 8 << 20
	return p
}

// runLegal generates c's inputs, runs its kernel on prof and returns the
// outputs; a kernel error fails the test.
func runLegal(t *testing.T, c legalCase, prof npu.Profile) (ops.Params, map[string]*tensor.Tensor, map[string]*tensor.Tensor) {
	t.Helper()
	op, err := ops.Lookup(c.op)
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	p, err := op.Validate(c.params)
	if err != nil {
		t.Fatalf("%s: validate: %v", c, err)
	}
	in, err := op.Generate(p, ops.Gen{Dims: c.dims, Dist: ops.DistUniform, Seed: c.seed})
	if err != nil {
		t.Fatalf("%s: generate: %v", c, err)
	}
	out, _, err := c.kernel(context.Background(), npu.MustNewDevice(prof), p, in)
	if err != nil {
		t.Fatalf("%s: profile %s: kernel: %v", c, prof.Name, err)
	}
	return p, in, out
}

func legalCases() []legalCase {
	return []legalCase{
		// kv_update loaded the whole D×D weights into UB: d ≥ 313 failed.
		{op: "kv_update", params: ops.Params{}, dims: map[string]int{"b": 1, "s": 1, "h": 1, "d": 320, "l": 2}, kernel: KVUpdateKernel, seed: 1},
		{op: "kv_update", params: ops.Params{"cache_dtype": ops.KVInt8}, dims: map[string]int{"b": 2, "s": 2, "h": 2, "d": 320, "l": 2}, kernel: KVUpdateKernel, seed: 2},
		// kv_update sized its row buffers and weight panel by D with no kv
		// head to project: h = 0, d = 28081 (explore, seed 1) failed.
		{op: "kv_update", params: ops.Params{}, dims: map[string]int{"b": 1, "s": 0, "h": 0, "d": 28081, "l": 1}, kernel: KVUpdateKernel, seed: 1056222576},
		{op: "kv_update", params: ops.Params{"cache_dtype": ops.KVInt8}, dims: map[string]int{"b": 3, "s": 2, "h": 0, "d": 100000, "l": 2}, kernel: KVUpdateKernel, seed: 8},
		// sparse_compress held a whole k row in UB: d = 98289 (explore's
		// finding) failed; its rows now stream through in pieces.
		{op: "sparse_compress", params: ops.Params{"keep_ratio": "0.5", "sinks": "0"}, dims: map[string]int{"h": 1, "l": 2, "d": 98289}, kernel: SparseCompressKernel, seed: 3},
		// d = 0 on the chunked path (a head of L = 24573 tokens): its
		// empty chunk of rows is a buffer all the same (explore's finding
		// against the first version of the long-row layout).
		{op: "sparse_compress", params: ops.Params{}, dims: map[string]int{"h": 1, "l": 24573, "d": 0}, kernel: SparseCompressKernel, seed: 7},
		// decode_attention forced a 16-position partition: d = 5459
		// failed; a GQA group of 2048 query heads never fitted.
		{op: "decode_attention", params: ops.Params{}, dims: map[string]int{"b": 1, "s": 1, "hq": 1, "h": 1, "d": 5459, "l": 2}, kernel: DecodeAttentionKernel, seed: 4},
		{op: "decode_attention", params: ops.Params{}, dims: map[string]int{"b": 1, "s": 1, "hq": 1024, "h": 1, "d": 128, "l": 3}, kernel: DecodeAttentionKernel, seed: 5},
		// decode_attention held a query row, a K row and the output row
		// whole: d = 32753 (fp16) and 39313 (int8) failed naming
		// ub_bytes; D is tiled now. Two partitions of 16 positions (on
		// both profiles), so the fold runs too.
		{op: "decode_attention", params: ops.Params{}, dims: map[string]int{"b": 1, "s": 1, "hq": 2, "h": 1, "d": 32753, "l": 20}, kernel: DecodeAttentionKernel, seed: 8},
		{op: "decode_attention", params: ops.Params{"cache_dtype": ops.KVInt8, "layout": ops.KVPaged}, dims: map[string]int{"b": 2, "s": 2, "hq": 1, "h": 1, "d": 39313, "l": 18, "bs": 8}, kernel: DecodeAttentionKernel, seed: 9},
		// gemm24's epilogue took the UB its meta panels needed: every
		// output block of 176×176 or more failed (run gemm24 at
		// 2048×2048×2048; this is the smallest K of the same tiling).
		{op: "gemm24", params: ops.Params{}, dims: map[string]int{"m": 512, "k": 64, "n": 4096}, kernel: GEMM24Kernel, seed: 6},
	}
}

// TestLegalSizesPastTheUB runs every legalCase on ascend910b and on
// bigUB: both pass the bound and the op's invariants, with the same bits.
func TestLegalSizesPastTheUB(t *testing.T) {
	for _, c := range legalCases() {
		t.Run(c.op, func(t *testing.T) {
			p, in, got := runLegal(t, c, npu.Ascend910B())
			op, _ := ops.Lookup(c.op)
			want, err := op.Expect(p, in, tensor.Numerics{})
			if err != nil {
				t.Fatalf("%s: expect: %v", c, err)
			}
			for name, w := range want {
				if m := verify.Compute(got[name], w); m.FirstBad >= 0 {
					t.Errorf("%s: output %s: element %d out of bound: got %v / want %v ± %v",
						c, name, m.FirstBad, got[name].Float64(m.FirstBad), w.Ref[m.FirstBad], w.Bound[m.FirstBad])
				}
			}
			if inv, ok := op.(ops.OutputInvariants); ok {
				for _, v := range inv.CheckOutputs(p, in, got, tensor.Numerics{}) {
					t.Errorf("%s: invariant %s: %s", c, v.Check, v.Reason)
				}
			}
			_, _, ref := runLegal(t, c, bigUB())
			for name, r := range ref {
				if same, at := sameBits(got[name], r); !same && at < 0 {
					t.Errorf("%s: output %s: got %s%v / want %s%v as on %s", c, name, got[name].DType, got[name].Shape, r.DType, r.Shape, bigUB().Name)
				} else if !same {
					t.Errorf("%s: output %s: element %d: bits on ascend910b differ from the untiled layout's (%s): got %v / want %v",
						c, name, at, bigUB().Name, got[name].Float64(at), r.Float64(at))
				}
			}
		})
	}
}
