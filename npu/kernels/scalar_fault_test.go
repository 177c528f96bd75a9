package kernels

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Sync faults of the scalar unit (npu.PipeS): a scalar read or write
// without its wait.

// TestSparseCompressMissingScalarWaitCaught: the fault that drops the
// V → S event before the scalar reads the selection computes the correct
// kernel's bits on every path (in UB, chunked with its radix cut,
// single-buffered), and only the sanitizer reports it: a RAW on pipe S
// naming the scalar read and the vector instruction that wrote what it
// reads. The correct kernel on the same runs has no finding.
func TestSparseCompressMissingScalarWaitCaught(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	raw := ops.Params{"keep_ratio": "0.3", "sinks": "2"}
	p, err := ops.SparseCompress.Validate(raw)
	if err != nil {
		t.Fatal(err)
	}
	dims := map[string]int{"h": 3, "l": 200, "d": 16}
	in, err := ops.SparseCompress.Generate(p, ops.Gen{Dims: dims, Dist: ops.DistNormal, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []SparseCompressOptions{{}, {BufferNum: 1}, {ChunkTokens: 64}, {ChunkTokens: 48, BufferNum: 1}} {
		where := fmt.Sprintf("sparse_compress %v dims %v dist normal seed 5 opt %+v", raw, dims, opt)
		ctx := WithVariant(context.Background(), Variant{Name: "test", Op: "sparse_compress", Options: opt})
		run := func(ctx context.Context) (map[string]*tensor.Tensor, *npu.Cost, error) {
			return SparseCompressKernel(ctx, dev, p, in)
		}
		checkScalarFault(t, where, ctx, run, FaultSparseCompressMissingScalarWait,
			"a RAW on pipe S, S ScalarRead vs V VectorWork, naming the UB bytes and the wait", func(f npu.Finding) bool {
				return f.Kind == npu.KindRAW && f.Pipe == npu.PipeS && strings.HasPrefix(f.Inst, "S ScalarRead#") && strings.HasPrefix(f.Other, "V VectorWork#") &&
					strings.HasPrefix(f.Buffer, "UB@") && f.Hi > f.Lo && strings.Contains(f.Message, "WaitFlag(V, S)")
			})
	}
}

// TestKVUpdateFlagOverwrittenCaught: the fault that drops the MTE3 → S
// wait before the scalar sets the next entry's written flag computes the
// correct kernel's bits, and only the sanitizer reports it: a WAR on
// pipe S naming the scalar's write (the new seq_len over the flag, or
// the next entry's flag over the last seq_len) and the store of the flag
// buffer it overwrites. The correct
// kernel on the same runs has no finding.
func TestKVUpdateFlagOverwrittenCaught(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	for _, raw := range []ops.Params{{}, {"cache_dtype": "int8", "layout": "paged"}} {
		p, err := ops.KVUpdate.Validate(raw)
		if err != nil {
			t.Fatal(err)
		}
		dims := map[string]int{"b": 8, "s": 6, "h": 2, "d": 16, "l": 40, "bs": 8}
		in, err := ops.KVUpdate.Generate(p, ops.Gen{Dims: dims, Dist: ops.DistUniform, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		where := fmt.Sprintf("kv_update %v dims %v dist uniform seed 3 BlockDim 2", raw, dims)
		ctx := WithVariant(context.Background(), Variant{Name: "test", Op: "kv_update", Options: KVUpdateOptions{BlockDim: 2}})
		run := func(ctx context.Context) (map[string]*tensor.Tensor, *npu.Cost, error) {
			return KVUpdateKernel(ctx, dev, p, in)
		}
		checkScalarFault(t, where, ctx, run, FaultKVUpdateFlagOverwrittenBeforeStore,
			"a WAR on pipe S, S ScalarWrite vs MTE3 DataCopyPadOut, bytes [0, 1) (the flag) or [0, 4) (the seq_len) of the flag buffer, naming the wait", func(f npu.Finding) bool {
				return f.Kind == npu.KindWAR && f.Pipe == npu.PipeS && strings.HasPrefix(f.Inst, "S ScalarWrite#") && strings.HasPrefix(f.Other, "MTE3 DataCopyPadOut#") &&
					strings.HasPrefix(f.Buffer, "UB@") && f.Lo == 0 && (f.Hi == 1 || f.Hi == 4) && strings.Contains(f.Message, "WaitFlag(MTE3, S)")
			})
	}
}

// checkScalarFault holds a scalar sync fault to what makes it one: the
// correct kernel (run under ctx) raises no finding, the faulty one
// computes its bits in every output and raises at least one finding, and
// every finding it raises is the one described (ok).
func checkScalarFault(t *testing.T, where string, ctx context.Context, run func(context.Context) (map[string]*tensor.Tensor, *npu.Cost, error),
	fault npu.Fault, desc string, ok func(npu.Finding) bool) {
	t.Helper()
	want, clean, err := run(ctx)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if len(clean.Findings) != 0 {
		t.Errorf("%s: correct kernel: got findings %v want none", where, clean.Findings)
	}
	got, cost, err := run(npu.WithFaults(ctx, npu.NewFaults(fault)))
	if err != nil {
		t.Fatalf("%s fault %s: %v", where, fault, err)
	}
	for name, w := range want {
		if same, at := sameBits(got[name], w); !same {
			t.Errorf("%s fault %s: %s element %d differs from the correct kernel's", where, fault, name, at)
		}
	}
	if len(cost.Findings) == 0 {
		t.Errorf("%s fault %s: no finding, want %s", where, fault, desc)
	}
	for _, f := range cost.Findings {
		if !ok(f) {
			t.Errorf("%s fault %s: got finding %+v want %s", where, fault, f, desc)
		}
	}
	t.Logf("%s: %v", where, cost.Findings)
}
