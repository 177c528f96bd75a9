package backendtest_test

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/backendtest"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/internal/ckernel"
	"github.com/npuverify/npuverify/npu"
)

// The emulator conforms: the stored bits and budgets of every golden
// case, every property, every robustness check.
func TestEmulator(t *testing.T) {
	backendtest.TestBackend(t, emulator.New(npu.Ascend910B()))
}

// The independent C kernel conforms through the exec backend, judged by
// each case's accuracy policy, in the scope every C kernel test uses.
func TestCKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every golden case through a process of the C kernel, serially as well: skipped under -short")
	}
	e := newExec(t, quoteArg(ckernel.Build(t)))
	backendtest.TestBackend(t, e, backendtest.Ops(ckernel.Ops()...), backendtest.Cases(ckernel.Supports))
}

// A faulty C kernel fails the suite with the very text `npuverify check`
// prints for it: every failure of a golden case is in the CLI's report,
// and the CLI finds no failing case the suite does not report.
func TestCKernelFaultReadsAsCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds npuverify and runs it: skipped under -short")
	}
	cmdline := "env " + ckernel.FaultEnv + "=ties " + quoteArg(ckernel.Build(t))
	errs := backendtest.Check(t.Context(), newExec(t, cmdline), backendtest.Ops("vector_add"), backendtest.Short())
	got := messages(errs, "golden/vector_add")
	if len(got) == 0 {
		t.Fatalf("C kernel fault ties: no golden case of vector_add fails; want some (docs/exec-backend.md)")
	}

	cli := filepath.Join(t.TempDir(), "npuverify")
	if out, err := exec.Command("go", "build", "-o", cli, "../../cmd/npuverify").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/npuverify: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), cli, "check", "--op", "vector_add", "--backend", "exec:"+cmdline)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("npuverify check --op vector_add with fault ties: %v, want exit code 1\nstderr:\n%s", err, stderr.String())
	}
	for _, m := range got {
		if !strings.Contains(stdout.String(), m) && !strings.Contains(stderr.String(), "npuverify: check: "+m) {
			t.Errorf("the suite's failure is not in npuverify check's report:\n%s\ncheck printed:\n%s\n%s", m, stdout.String(), stderr.String())
		}
	}
	if n := failingCases(t, stdout.String()); n != len(got) {
		t.Errorf("npuverify check reports %d failing cases, the suite %d", n, len(got))
	}
	t.Logf("C kernel fault ties: %d failing golden cases of vector_add, each reported as npuverify check reports it", len(got))
}

// failingCases is how many cases the summary line of `npuverify check`
// says did not pass.
func failingCases(t *testing.T, stdout string) int {
	t.Helper()
	m := regexp.MustCompile(`(\d+) fail, (\d+) input error, (\d+) backend error`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no summary line in npuverify check's output:\n%s", stdout)
	}
	n := 0
	for _, s := range m[1:] {
		k, _ := strconv.Atoi(s)
		n += k
	}
	return n
}

// quoteArg quotes s as one word of an exec command line.
func quoteArg(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// newExec is the exec backend running cmdline, closed when t ends.
func newExec(t *testing.T, cmdline string) *backend.Exec {
	t.Helper()
	e, err := backend.NewExec(cmdline, backend.ExecOptions{Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("NewExec(%q): %v", cmdline, err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}
