package main

import (
	"path/filepath"
	"testing"

	"github.com/npuverify/npuverify/internal/pyclient"
)

// TestPythonClientVectorAdd puts the Python client's example driver
// (clients/python/examples/vector_add.py, numpy behind
// clients/python/npuverify_client.py) under `npuverify check --op
// vector_add` on every embedded vector_add case, once per protocol: exec
// (a process per case) and worker (the same file, kept running). Both must
// exit 0 with every case passing. It skips when no Python 3 imports numpy.
func TestPythonClientVectorAdd(t *testing.T) {
	python := pyclient.Python(t)
	script := filepath.Join(pyclient.Dir(t), "examples", "vector_add.py")
	for _, mode := range []string{"exec", "worker"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "exec" && testing.Short() {
				t.Skip("a Python process per case: about a hundred interpreter starts")
			}
			b := mode + ":" + pyclient.Command(python, script)
			checkEveryVectorAddCase(t, "check", "--op", "vector_add", "--backend", b)
		})
	}
}
