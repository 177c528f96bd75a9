package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/internal/ckernel"
)

// TestCKernelSizeFaultsPassDefaultCheck runs `npuverify check` on the
// default (embedded) store, recipes included, through the exec backend
// with the C kernel and every size-only fault (ckernel.SizeFaults)
// switched on at once: each lives in its own op's kernel, so one run
// judges every op's cases under its fault. The check must pass every
// case: these bugs show only at sizes the golden set does not hold, which
// is what a search over generated cases is for (internal/ckernel's
// TestSizeFaultsCaught fails each at a trigger size). A golden case added
// at a trigger size fails this test: the fault's trigger, or the case,
// must then move.
func TestCKernelSizeFaultsPassDefaultCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C kernel and checks every golden case, recipes included")
	}
	bin := ckernel.Build(t)
	var names []string
	for _, f := range ckernel.SizeFaults() {
		names = append(names, f.Name)
	}
	want := len(golden.Embedded().Cases())
	backend := "exec:env " + ckernel.FaultEnv + "=" + strings.Join(names, ",") + " " + bin
	args := []string{"check", "--jobs", "2", "--backend", backend}
	code, stdout, stderr := cli(t, args...)
	m := regexp.MustCompile(`(?m)^(\d+) cases: (\d+) pass, `).FindStringSubmatch(stdout)
	if code != 0 || m == nil {
		t.Fatalf("npuverify %s (faults %s, every embedded case with its own params and seed): exit %d, want 0\nstdout:\n%s\nstderr:\n%s",
			strings.Join(args, " "), strings.Join(names, ", "), code, stdout, stderr)
	}
	ran, _ := strconv.Atoi(m[1])
	passed, _ := strconv.Atoi(m[2])
	if ran != want || passed != want {
		t.Errorf("npuverify %s: %d cases ran, %d passed; want all %d embedded cases run and passed\n%s",
			strings.Join(args, " "), ran, passed, want, stdout)
	}
}
