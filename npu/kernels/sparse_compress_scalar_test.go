package kernels

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
)

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
		where := fmt.Sprintf("sparse_compress %v dims %v opt %+v", raw, dims, opt)
		ctx := WithVariant(context.Background(), Variant{Name: "test", Op: "sparse_compress", Options: opt})
		want, clean, err := SparseCompressKernel(ctx, dev, p, in)
		if err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		if len(clean.Findings) != 0 {
			t.Errorf("%s: correct kernel: got findings %v want none", where, clean.Findings)
		}
		got, cost, err := SparseCompressKernel(npu.WithFaults(ctx, npu.NewFaults(FaultSparseCompressMissingScalarWait)), dev, p, in)
		if err != nil {
			t.Fatalf("%s fault: %v", where, err)
		}
		for name, w := range want {
			if same, at := sameBits(got[name], w); !same {
				t.Errorf("%s fault: %s element %d differs from the correct kernel's", where, name, at)
			}
		}
		if len(cost.Findings) == 0 {
			t.Errorf("%s fault: no finding, want a RAW on pipe S", where)
		}
		for _, f := range cost.Findings {
			if f.Kind != npu.KindRAW || f.Pipe != npu.PipeS || !strings.HasPrefix(f.Inst, "S ScalarRead#") || !strings.HasPrefix(f.Other, "V VectorWork#") ||
				!strings.HasPrefix(f.Buffer, "UB@") || f.Hi <= f.Lo || !strings.Contains(f.Message, "WaitFlag(V, S)") {
				t.Errorf("%s fault: got finding %+v want a RAW on pipe S, S ScalarRead vs V VectorWork, naming the UB bytes and the wait", where, f)
			}
		}
		t.Logf("%s: %v", where, cost.Findings)
	}
}
