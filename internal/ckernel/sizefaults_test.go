package ckernel_test

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend/spec"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/ckernel"
	"github.com/npuverify/npuverify/npu"
)

// TestSizeFaultsCaught runs each size fault's example case through the
// harness on the C kernel behind the exec backend, judged by the case's
// default policy: it must fail with the fault switched on and pass
// without it, so that the table's trigger is a real one and its example
// a case a search can be held to finding. (Whether the golden set
// misses each fault is cmd/npuverify's
// TestCKernelSizeFaultsPassDefaultCheck.)
func TestSizeFaultsCaught(t *testing.T) {
	bin := ckernel.Build(t)
	prof := npu.Ascend910B()
	seen := map[string]bool{}
	for _, f := range ckernel.SizeFaults() {
		if seen[f.Name] || f.Example.Op != f.Op || !ckernel.Supports(f.Example) {
			t.Errorf("size fault %s: a duplicate name, or its example (op %s) is not a case of op %s the kernel implements", f.Name, f.Example.Op, f.Op)
		}
		seen[f.Name] = true
		c := f.Example
		what := fmt.Sprintf("%s %v dims %v dist %s seed %d (fault %s: %s)", c.Op, c.Params, c.Dims, c.Dist, c.Seed, f.Name, f.Trigger)
		for _, on := range []bool{true, false} {
			cmd := bin
			if on {
				cmd = "env " + ckernel.FaultEnv + "=" + f.Name + " " + bin
			}
			b, err := spec.Open("exec:"+cmd, prof, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			res, err := harness.Run(context.Background(), b, c, harness.Options{Numerics: prof.Numerics})
			if cl, ok := b.(io.Closer); ok {
				cl.Close()
			}
			if err != nil {
				t.Errorf("%s: fault on = %v: the case could not be judged: %v", what, on, err)
				continue
			}
			if res.Pass() == on {
				t.Errorf("%s: fault on = %v: got pass = %v, want %v\n%s", what, on, res.Pass(), !on, res.Verify.Failure())
			}
		}
	}
}
