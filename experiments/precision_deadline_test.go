package experiments

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/tensor"
)

// TestPrecisionModesDeadline is issue 33 item 7: the precision table ends
// at its Timeout (report --timeout) with an error naming the step and the
// limit. The limit, 1 ns, is long past before the first step, a 256³
// float64 product, can finish, so the test is fast and cannot pass by
// luck; before, the table ran every row to completion whatever --timeout
// said.
func TestPrecisionModesDeadline(t *testing.T) {
	cfg := report.PrecisionConfig{M: 256, K: 256, N: 256, Dists: []string{ops.DistUniform, ops.DistNormal}, Seed: 3, Timeout: time.Nanosecond}
	tab, err := PrecisionModes(context.Background(), emulator.New(npu.Ascend910B()), tensor.Numerics{}, cfg)
	switch {
	case err == nil:
		t.Fatalf("gemm precision table %dx%dx%d seed=%d timeout=%s: got a table of %d rows, want a deadline error", cfg.M, cfg.K, cfg.N, cfg.Seed, cfg.Timeout, len(tab.Rows))
	case !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "precision table: uniform: the float64 source and its product") || !strings.Contains(err.Error(), "timed out after 1ns"):
		t.Fatalf("gemm precision table %dx%dx%d seed=%d timeout=%s: got error %q, want a deadline error naming the step and the limit", cfg.M, cfg.K, cfg.N, cfg.Seed, cfg.Timeout, err)
	}
}
