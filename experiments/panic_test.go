package experiments

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/internal/panicguard/panictest"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/tensor"
)

// TestPrecisionModesRaisesARowsPanicOnTheCaller (issue 33, the panic
// guard): each row of the precision table runs on a goroutine of its own;
// a panic in one killed the process out of reach of the CLI's recover.
// PrecisionModes raises it again on its caller's goroutine once every row
// has stopped.
func TestPrecisionModesRaisesARowsPanicOnTheCaller(t *testing.T) {
	cfg := report.PrecisionConfig{M: 8, K: 8, N: 8, Dists: []string{ops.DistUniform}, Seed: 1}
	panictest.Raised(t, "PrecisionModes 8x8x8 uniform seed=1 on a backend that panics", panictest.Value, "panictest.Backend.Run", func() {
		PrecisionModes(context.Background(), panictest.Backend{}, tensor.Numerics{}, cfg)
	})
}
