package backend_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
)

func TestProbe(t *testing.T) {
	bin := buildCKernel(t)
	st := time.Now()
	for i := 0; i < 20; i++ {
		exec.Command("/bin/true").Run()
	}
	t.Logf("true: %v", time.Since(st)/20)
	e := newExec(t, "/bin/true", backend.ExecOptions{})
	pc, _ := harness.Prepare(harness.Case{Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Dims: map[string]int{"n": 257}, Dist: ops.DistNormal, Seed: 1})
	st = time.Now()
	for i := 0; i < 20; i++ {
		e.Run(context.Background(), "vector_add", pc.Params, pc.Inputs)
	}
	t.Logf("exec true: %v", time.Since(st)/20)
	e = newExec(t, quoteArg(bin), backend.ExecOptions{})
	st = time.Now()
	for i := 0; i < 20; i++ {
		e.Run(context.Background(), "vector_add", pc.Params, pc.Inputs)
	}
	t.Logf("exec ck: %v", time.Since(st)/20)
}
