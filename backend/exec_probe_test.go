package backend_test

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
)

func TestProbeDiff(t *testing.T) {
	bin := buildCKernel(t)
	e := newExec(t, quoteArg(bin), backend.ExecOptions{})
	em := backend.NewEmulator(npu.Ascend910B())
	for _, acc := range []string{"sequential", "blocked16"} {
		for _, dist := range []string{"normal", "cancel", "uniform"} {
			c := harness.Case{Op: "gemm", Params: ops.Params{"accumulate": acc}, Dims: map[string]int{"m": 64, "k": 512, "n": 32}, Dist: dist, Seed: 3}
			r1, err := harness.Run(context.Background(), e, c, harness.Options{})
			if err != nil { t.Fatal(err) }
			r2, err := harness.Run(context.Background(), em, c, harness.Options{})
			if err != nil { t.Fatal(err) }
			a, b := r1.Outputs["out"], r2.Outputs["out"]
			d := 0
			for i := 0; i < a.Len(); i++ { if a.Bits(i) != b.Bits(i) { d++ } }
			t.Logf("%s %s: %d of %d elements differ in bits; pass exec=%v emu=%v tightness exec=%v", acc, dist, d, a.Len(), r1.Pass(), r2.Pass(), r1.Verify.Outputs[0].Metrics.Tightness)
		}
	}
}
