package kernels

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

// syncInputs returns seeded fp16 x and y of n elements.
func syncInputs(t *testing.T, n int, seed uint64) (*tensor.Tensor, *tensor.Tensor) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 34))
	x, y := tensor.MustNew(tensor.Float16, n), tensor.MustNew(tensor.Float16, n)
	num := tensor.Numerics{}
	for i := range n {
		x.SetFloat64(i, r.Float64()*8-4, num)
		y.SetFloat64(i, r.Float64()*8-4, num)
	}
	return x, y
}

// TestVectorAddSyncFaults: each synchronisation fault computes the very
// bits of the correct kernel (the emulator runs in program order), and
// only the sanitizer reports it, with the kind of finding its bug is; the
// correct kernel, in every buffer count and tiling, has no finding.
func TestVectorAddSyncFaults(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	const seed = 7
	for _, c := range []struct {
		fault npu.Fault
		n     int // a size whose shape shows the bug
		opt   VectorAddOptions
		kind  string
	}{
		{FaultVectorAddMissingWait, 257, VectorAddOptions{}, npu.KindRAW},
		{FaultVectorAddPingPongReuse, 4096, VectorAddOptions{BlockDim: 2, TileElems: 512}, npu.KindWAR},
		{FaultVectorAddWholeTileAdd, 1000, VectorAddOptions{}, npu.KindUninit},
	} {
		x, y := syncInputs(t, c.n, seed)
		want, clean, err := VectorAdd(context.Background(), dev, x, y, c.opt)
		if err != nil {
			t.Fatalf("vector_add n=%d seed=%d opt=%+v: correct kernel: %v", c.n, seed, c.opt, err)
		}
		if len(clean.Findings) != 0 {
			t.Errorf("vector_add n=%d seed=%d opt=%+v: correct kernel: got findings %v want none", c.n, seed, c.opt, clean.Findings)
		}
		ctx := npu.WithFaults(context.Background(), npu.NewFaults(c.fault))
		got, cost, err := VectorAdd(ctx, dev, x, y, c.opt)
		if err != nil {
			t.Fatalf("vector_add n=%d seed=%d fault %s: %v", c.n, seed, c.fault, err)
		}
		if !slices.Equal(got.F16(), want.F16()) {
			t.Errorf("vector_add n=%d seed=%d fault %s: output bits differ from the correct kernel's", c.n, seed, c.fault)
		}
		var kinds []string
		found := false
		for _, f := range cost.Findings {
			kinds = append(kinds, f.Kind)
			found = found || f.Kind == c.kind
			if f.Message == "" || !strings.Contains(f.Message, "core ") || (f.Kind != npu.KindDeadlock && f.Buffer == "") {
				t.Errorf("vector_add n=%d seed=%d fault %s: finding does not name core and buffer: %+v", c.n, seed, c.fault, f)
			}
		}
		if !found {
			t.Errorf("vector_add n=%d seed=%d fault %s: got finding kinds %v want %s", c.n, seed, c.fault, kinds, c.kind)
		}
		for _, f := range cost.Findings {
			t.Logf("%s: %s", c.fault, f.Message)
		}
		off, err := VectorAddWith(npu.WithSanitizer(ctx, false), dev, x, y, c.opt)
		if err != nil || len(off.Findings) != 0 {
			t.Errorf("vector_add n=%d seed=%d fault %s, sanitizer off: got findings %v, err %v want none", c.n, seed, c.fault, off.Findings, err)
		}
	}
	for _, opt := range []VectorAddOptions{{BufferNum: 1}, {BufferNum: 1, TileElems: 64, BlockDim: 3}, {BlockDim: 1, TileElems: 96}, {BlockDim: 7, TileElems: 49}} {
		for _, n := range []int{1, 31, 1000, 65537} {
			x, y := syncInputs(t, n, seed)
			_, cost, err := VectorAdd(context.Background(), dev, x, y, opt)
			if err != nil {
				t.Fatalf("vector_add n=%d seed=%d opt=%+v: %v", n, seed, opt, err)
			}
			if len(cost.Findings) != 0 {
				t.Errorf("vector_add n=%d seed=%d opt=%+v: got findings %v want none", n, seed, opt, cost.Findings)
			}
		}
	}
}

// VectorAddWith runs VectorAdd and returns only its cost.
func VectorAddWith(ctx context.Context, dev *npu.Device, x, y *tensor.Tensor, opt VectorAddOptions) (*npu.Cost, error) {
	_, cost, err := VectorAdd(ctx, dev, x, y, opt)
	return cost, err
}
