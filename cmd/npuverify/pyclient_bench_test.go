package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend/spec"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/pyclient"
	"github.com/npuverify/npuverify/npu"
)

// BenchmarkPythonVectorAdd times the Python client's example driver
// (clients/python/examples/vector_add.py) on every embedded vector_add
// case, one case at a time, under exec: (an interpreter and numpy import
// per case) and under worker: (one process kept running): one op is the
// whole set. Compare with benchstat -col /backend. Workers start during
// the first op and are kept across ops, as a long check keeps them. It
// skips when no Python 3 imports numpy.
func BenchmarkPythonVectorAdd(b *testing.B) {
	python := pyclient.Python(b)
	script := filepath.Join(pyclient.Dir(b), "examples", "vector_add.py")
	prof := npu.Ascend910B()
	for _, mode := range []string{"exec", "worker"} {
		b.Run("backend="+mode, func(b *testing.B) {
			be, err := spec.Open(mode+":"+pyclient.Command(python, script), prof, time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if c, ok := be.(io.Closer); ok {
				defer c.Close()
			}
			opt := golden.CheckOptions{Op: "vector_add", Jobs: 1, Numerics: prof.Numerics, Timeout: time.Minute,
				Exact: golden.ExactNever, NoBudgets: true}
			cases := 0
			for b.Loop() {
				outcomes, err := golden.Check(context.Background(), golden.Embedded(), be, opt)
				if err != nil {
					b.Fatal(err)
				}
				for i := range outcomes {
					if v := outcomes[i].Verdict(); v != harness.VerdictPass {
						b.Fatalf("%s on %s: verdict %s, want pass: %v", outcomes[i].ID, be.Name(), v, outcomes[i].Err)
					}
				}
				cases = len(outcomes)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(b.N*cases, 1)), "ns/case")
		})
	}
}
