package main

import (
	"path/filepath"
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

// TestExploreFindsCKernelSizeFaults holds explore to what the golden set
// misses: for each size-only fault of the C kernel (switched on behind the
// worker backend), a seeded search must find a failing case, shrink it
// and write it to --out, and `check --golden` must replay that case: it
// fails the faulty kernel and passes the correct one, so the finding is
// the fault's and not the harness's. Each search is seeded, so a failure
// here reproduces with the printed command.
func TestExploreFindsCKernelSizeFaults(t *testing.T) {
	bin := ckernel.Build(t)
	for _, f := range ckernel.SizeFaults() {
		t.Run(f.Name, func(t *testing.T) {
			faulty := "worker:env " + ckernel.FaultEnv + "=" + f.Name + " " + bin
			out := filepath.Join(t.TempDir(), "findings")
			args := []string{"explore", "--op", f.Op, "--backend", faulty, "--seed", "1", "--budget", "60s", "--out", out}
			code, stdout, stderr := cli(t, args...)
			if code != exitFail || !strings.Contains(stdout, "shrunk: "+f.Op+" ") {
				t.Fatalf("fault %s (op %s, trigger %s): npuverify %s: exit %d, want %d with a shrunk finding\nstdout:\n%s\nstderr:\n%s",
					f.Name, f.Op, f.Trigger, strings.Join(args, " "), code, exitFail, stdout, stderr)
			}
			replay := []string{"check", "--golden", out, "--backend", faulty}
			if code, stdout, stderr := cli(t, replay...); code != exitFail {
				t.Errorf("fault %s (op %s): npuverify %s replays the finding: exit %d, want %d (the faulty kernel fails it)\nstdout:\n%s\nstderr:\n%s",
					f.Name, f.Op, strings.Join(replay, " "), code, exitFail, stdout, stderr)
			}
			replay[len(replay)-1] = "exec:" + bin
			if code, stdout, stderr := cli(t, replay...); code != exitPass {
				t.Errorf("fault %s (op %s): npuverify %s: exit %d, want %d (the correct kernel passes the finding)\nstdout:\n%s\nstderr:\n%s",
					f.Name, f.Op, strings.Join(replay, " "), code, exitPass, stdout, stderr)
			}
		})
	}
}
