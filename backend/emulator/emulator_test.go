package emulator

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

func TestEmulatorVectorAdd(t *testing.T) {
	prof := npu.Ascend910B()
	prof.Numerics.Overflow = tensor.OverflowSaturate
	e := New(prof)
	if e.Name() != "emulator" || e.Profile() != prof || e.Device() == nil {
		t.Fatalf("New: got name %q profile %+v want emulator, %+v", e.Name(), e.Profile(), prof)
	}
	const n = 1000
	x, y := tensor.MustNew(tensor.Float16, n), tensor.MustNew(tensor.Float16, n)
	for i := range n {
		x.SetFloat64(i, float64(i)*70, prof.Numerics)
		y.SetFloat64(i, 0.5, prof.Numerics)
	}
	xc, yc := x.Clone(), y.Clone()
	p := ops.Params{"dtype": "fp16"}
	out, m, err := e.Run(context.Background(), "vector_add", p, map[string]*tensor.Tensor{"x": x, "y": y})
	cost := Cost(m)
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
	if m.Model.GMBytes() != cost.GMBytesIn+cost.GMBytesOut || m.Model.Cycles != cost.Cycles || m.Model.Device != cost.Device {
		t.Errorf("vector_add params=%v: got model %+v want the figures of cost %+v", p, m.Model, cost)
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
	if _, _, err := New(npu.Ascend910B()).Run(ctx, "no_such_op", nil, in); err == nil || !strings.Contains(err.Error(), "no_such_op") {
		t.Errorf("emulator unknown op: got %v want an error naming the op", err)
	}
	bad := npu.Ascend910B()
	bad.UBBytes = 0
	if _, _, err := New(bad).Run(ctx, "vector_add", ops.Params{"dtype": "fp32"}, in); err == nil || !strings.Contains(err.Error(), "ub_bytes") {
		t.Errorf("emulator with invalid profile: got %v want an error naming ub_bytes", err)
	}
	if _, _, err := New(npu.Ascend910B()).Run(ctx, "vector_add", ops.Params{"dtype": "fp16"}, in); err == nil || !strings.Contains(err.Error(), "emulator: vector_add") {
		t.Errorf("emulator vector_add dtype mismatch: got %v want an error", err)
	}
}

// TestEmulatorGuardsInputs: a kernel that writes into its input x (the
// input-modified fault) leaves the caller's x as it was and is reported
// as an *InputsModifiedError that comes with the outputs, together with
// a guard-band finding when it also writes past its output.
func TestEmulatorGuardsInputs(t *testing.T) {
	const n = 33
	p := ops.Params{"dtype": "bf16"}
	for _, faults := range [][]npu.Fault{
		{kernels.FaultVectorAddInputModified},
		{kernels.FaultVectorAddInputModified, kernels.FaultVectorAddWritePastEnd},
	} {
		x, y := tensor.MustNew(tensor.BFloat16, n), tensor.MustNew(tensor.BFloat16, n)
		for i := range n {
			x.SetFloat64(i, float64(i), tensor.Numerics{})
			y.SetFloat64(i, 0.5, tensor.Numerics{})
		}
		xc := x.Clone()
		e := New(npu.Ascend910B(), WithFaults(faults...))
		if !e.GuardsInputs() {
			t.Fatal("the emulator does not claim to guard its inputs")
		}
		out, m, err := e.Run(context.Background(), "vector_add", p, map[string]*tensor.Tensor{"x": x, "y": y})
		var modified *backend.InputsModifiedError
		if !errors.As(err, &modified) || out["z"] == nil || !strings.Contains(modified.Inputs["x"], "first difference at element 0") || len(modified.Inputs) != 1 {
			t.Errorf("vector_add params=%v n=%d faults=%v: got outputs %v, error %v, want z and x modified from element 0", p, n, faults, out, err)
		}
		guarded := m != nil && len(m.Findings) == 1 && m.Findings[0].Output == "z" && m.Findings[0].Check == backend.CheckGuardBand
		if wantGuard := len(faults) == 2; guarded != wantGuard || (!wantGuard && m != nil && len(m.Findings) > 0) {
			t.Errorf("vector_add params=%v n=%d faults=%v: measurement %+v, want one guard-band finding on z %v", p, n, faults, m, wantGuard)
		}
		if same, i := tensor.BitsEqual(x, xc); !same {
			t.Errorf("vector_add params=%v n=%d faults=%v: the caller's x changed at element %d", p, n, faults, i)
		}
	}
}
