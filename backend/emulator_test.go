package backend

import (
	"context"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

func TestEmulatorVectorAdd(t *testing.T) {
	prof := npu.Ascend910B()
	prof.Numerics.Overflow = tensor.OverflowSaturate
	e := NewEmulator(prof)
	if e.Name() != "emulator" || e.Profile() != prof || e.Device() == nil {
		t.Fatalf("NewEmulator: got name %q profile %+v want emulator, %+v", e.Name(), e.Profile(), prof)
	}
	const n = 1000
	x, y := tensor.MustNew(tensor.Float16, n), tensor.MustNew(tensor.Float16, n)
	for i := range n {
		x.SetFloat64(i, float64(i)*70, prof.Numerics)
		y.SetFloat64(i, 0.5, prof.Numerics)
	}
	xc, yc := x.Clone(), y.Clone()
	p := ops.Params{"dtype": "fp16"}
	out, cost, err := e.Run(context.Background(), "vector_add", p, map[string]*tensor.Tensor{"x": x, "y": y})
	if err != nil {
		t.Fatalf("vector_add params=%v: got error %v want nil", p, err)
	}
	z := out["z"]
	for i := range n {
		want := prof.Numerics.Round(x.Float64(i)+y.Float64(i), tensor.Float16)
		if got := z.Float64(i); got != want {
			t.Fatalf("vector_add params=%v: element %d: got %v want %v", p, i, got, want)
		}
	}
	if cost == nil || cost.GMBytesIn+cost.GMBytesOut != 3*n*2 || cost.Device != "ascend910b" {
		t.Errorf("vector_add params=%v: got cost %+v want 6000 GM bytes on ascend910b", p, cost)
	}
	if ok, _ := tensor.BitsEqual(x, xc); !ok {
		t.Errorf("vector_add params=%v: input x was modified", p)
	}
	if ok, _ := tensor.BitsEqual(y, yc); !ok {
		t.Errorf("vector_add params=%v: input y was modified", p)
	}
}

func TestEmulatorErrors(t *testing.T) {
	ctx := context.Background()
	x := tensor.MustNew(tensor.Float32, 4)
	in := map[string]*tensor.Tensor{"x": x, "y": x}
	if _, _, err := NewEmulator(npu.Ascend910B()).Run(ctx, "no_such_op", nil, in); err == nil || !strings.Contains(err.Error(), "no_such_op") {
		t.Errorf("emulator unknown op: got %v want an error naming the op", err)
	}
	bad := npu.Ascend910B()
	bad.UBBytes = 0
	if _, _, err := NewEmulator(bad).Run(ctx, "vector_add", ops.Params{"dtype": "fp32"}, in); err == nil || !strings.Contains(err.Error(), "ub_bytes") {
		t.Errorf("emulator with invalid profile: got %v want an error naming ub_bytes", err)
	}
	if _, _, err := NewEmulator(npu.Ascend910B()).Run(ctx, "vector_add", ops.Params{"dtype": "fp16"}, in); err == nil || !strings.Contains(err.Error(), "emulator: vector_add") {
		t.Errorf("emulator vector_add dtype mismatch: got %v want an error", err)
	}
}
