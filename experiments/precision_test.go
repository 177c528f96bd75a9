package experiments

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/tensor"
)

// TestPrecisionModes runs a small table and checks what must hold whatever
// the numbers: every mode present per distribution, every output within
// its own bound, and the expected ordering of loss (fp32 loses least; fp16
// accumulation loses more than fp32 accumulation on the same fp16 inputs).
func TestPrecisionModes(t *testing.T) {
	cfg := report.PrecisionConfig{M: 32, K: 512, N: 16, Dists: []string{ops.DistUniform, ops.DistCancel}, Seed: 3}
	tab, err := PrecisionModes(context.Background(), emulator.New(npu.Ascend910B()), tensor.Numerics{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(tab.Rows), len(cfg.Dists)*len(ops.GEMMModes()); got != want {
		t.Fatalf("gemm precision table seed=3: %d rows, want %d", got, want)
	}
	rel := map[string]float64{}
	for _, r := range tab.Rows {
		if !r.BoundPassed {
			t.Errorf("gemm mode=%s dist=%s seed=3: output outside its own bound (tightness %g), want within", r.Mode, r.Dist, float64(r.Tightness))
		}
		if r.Dist == ops.DistUniform {
			rel[r.Mode] = float64(r.RMSE)
		}
	}
	if !(rel["fp32"] < rel["fp16_fp32acc"] && rel["fp16_fp32acc"] < rel["fp16"]) {
		t.Errorf("gemm dist=uniform seed=3 K=512: RMSE fp32 %g, fp16_fp32acc %g, fp16 %g, want strictly increasing", rel["fp32"], rel["fp16_fp32acc"], rel["fp16"])
	}
	var md bytes.Buffer
	if err := tab.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, mode := range ops.GEMMModes() {
		if !strings.Contains(md.String(), "| "+mode.Name+" |") {
			t.Errorf("precision table markdown lacks mode %s:\n%s", mode.Name, md.String())
		}
	}
}

// scribbler is a backend that writes into its input "a" after running:
// a bug that a table outside the harness would not notice.
type scribbler struct{ backend.Backend }

func (s scribbler) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	out, cost, err := s.Backend.Run(ctx, op, p, in)
	if a := in["a"]; a != nil && a.Len() > 0 {
		a.SetBits(0, a.Bits(0)^1)
	}
	return out, cost, err
}

// TestPrecisionModesGoThroughTheHarness: a backend that modifies an input
// fails every row (the harness's inputs-unchanged check), although its
// outputs are right.
func TestPrecisionModesGoThroughTheHarness(t *testing.T) {
	cfg := report.PrecisionConfig{M: 16, K: 32, N: 16, Dists: []string{ops.DistUniform}, Seed: 5}
	tab, err := PrecisionModes(context.Background(), scribbler{emulator.New(npu.Ascend910B())}, tensor.Numerics{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tab.Rows {
		if r.BoundPassed {
			t.Errorf("gemm mode=%s dist=%s seed=5 %dx%dx%d: a backend that writes into input a passes, want the row failed", r.Mode, r.Dist, cfg.M, cfg.K, cfg.N)
		}
	}
}
