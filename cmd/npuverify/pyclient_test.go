package main

import (
	"path/filepath"
	"testing"

	"github.com/npuverify/npuverify/internal/pyclient"
)

// TestPythonClientVectorAdd puts the Python client's example driver
// (clients/python/examples/vector_add.py, numpy behind
// clients/python/npuverify_client.py) under `npuverify check --op
// vector_add`, once per protocol: worker (the file kept running) on every
// embedded vector_add case, exec (a process per case) on pythonExecCases.
// Both must exit 0 with every case passing. It skips when no Python 3
// imports numpy.
func TestPythonClientVectorAdd(t *testing.T) {
	python := pyclient.Python(t)
	script := filepath.Join(pyclient.Dir(t), "examples", "vector_add.py")
	for _, mode := range []string{"exec", "worker"} {
		t.Run(mode, func(t *testing.T) {
			b := mode + ":" + pyclient.Command(python, script)
			if mode == "exec" {
				if testing.Short() {
					t.Skip("a Python process per case")
				}
				checkVectorAddCases(t, pythonExecCases, "check", "--op", "vector_add", "--backend", b)
				return
			}
			checkEveryVectorAddCase(t, "check", "--op", "vector_add", "--backend", b)
		})
	}
}

// pythonExecCases are the cases the exec run of the Python example takes:
// each dtype's empty, one-element and special-value case. The driver and
// the client module are the same file under both protocols, so exec adds
// only its process per case, which these exercise; every case, at an
// interpreter start and a numpy import each (a minute of the default
// suite on a loaded 2-core machine), is the worker run's.
const pythonExecCases = `^vector_add/(fp16|bf16|fp32)_(uniform_n0|uniform_n1|special_n257)$`
