// Package pythonclient_test runs the tests of the Python client of the
// exec and worker protocols (npuverify_client.py): its own unit tests,
// and its example vector_add driver against the emulator under every
// numerics profile (the golden cases hold no subnormal-flushing case).
// cmd/npuverify's TestPythonClientVectorAdd puts the example under
// `npuverify check` on the golden cases. Every test skips when no Python 3
// imports numpy (internal/pyclient).
package pythonclient_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/npuverify/npuverify/internal/clienttest"
	"github.com/npuverify/npuverify/internal/pyclient"
)

// TestUnittest runs the client's unit tests (test_npuverify_client.py,
// plain unittest): output name, dtype and shape checks and their
// messages, an unknown op in both modes, a worker that keeps serving
// after the function raises, bf16 conversions and file round trip, the
// stores under each numerics profile.
func TestUnittest(t *testing.T) {
	python := pyclient.Python(t)
	cmd := exec.Command(python, "-m", "unittest", "-v", "test_npuverify_client")
	cmd.Dir = pyclient.Dir(t)
	cmd.Env = append(cmd.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s -m unittest test_npuverify_client (in %s): %v\n%s", python, cmd.Dir, err, out)
	}
	t.Logf("%s", out)
}

// TestVectorAddProfiles holds the Python example driver (examples/vector_add.py), served as a worker, to the
// emulator bit for bit under every numerics profile and dtype
// (clienttest.VectorAddProfiles says on which inputs).
func TestVectorAddProfiles(t *testing.T) {
	python := pyclient.Python(t)
	script := filepath.Join(pyclient.Dir(t), "examples", "vector_add.py")
	clienttest.VectorAddProfiles(t, "worker:"+pyclient.Command(python, script), 20240532)
}
