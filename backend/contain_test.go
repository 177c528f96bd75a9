//go:build linux

package backend_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
)

// The situations of issue 8 points 4, 5 and 9 at the level of the exec
// backend, each with its kernel script under testdata/kernels.

// kernel returns the command line of a script of testdata/kernels.
func kernel(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "kernels", name))
	if err != nil {
		t.Fatal(err)
	}
	return quoteArg(p)
}

// exited waits up to 10 s (a loaded 2-core CI machine schedules the reaper
// late) for pid to be gone from /proc: killed and reaped
// (a zombie left unreaped by the harness, which adopted it, is a leak).
func exited(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// pidFile sets $PIDFILE for the kernel and returns its path.
func pidFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pid")
	t.Setenv("PIDFILE", p)
	return p
}

// wantNoSurvivor fails the test (and kills the process) when pid is still
// there.
func wantNoSurvivor(t *testing.T, pid int, what string) {
	t.Helper()
	if !exited(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("%s: got %s (pid %d) still there after Run returned, want it killed and reaped", harness.Subject(faultCase), what, pid)
	}
}

// TestExecContainSetsidChildOnTimeout: a kernel whose child calls setsid
// leaves the kernel's process group; the group kill on timeout missed it
// and it ran on (sleep 1000).
func TestExecContainSetsidChildOnTimeout(t *testing.T) {
	pf := pidFile(t)
	b := newExec(t, kernel(t, "setsid_child.sh"), backend.ExecOptions{Timeout: time.Second})
	start := time.Now()
	wantBackendError(t, b, "timed out after 1s", "started the setsid child")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%s: got the timeout error after %s, want about 1s", harness.Subject(faultCase), d)
	}
	wantNoSurvivor(t, readPID(t, pf), "the kernel's setsid child")
}

// TestExecContainOrphanAfterCleanExit: a grandchild orphaned through a
// setsid shell, left behind by a kernel that exits 0, does not outlive the
// case.
func TestExecContainOrphanAfterCleanExit(t *testing.T) {
	pf := pidFile(t)
	b := newExec(t, kernel(t, "setsid_orphan.sh"), backend.ExecOptions{Timeout: 20 * time.Second})
	if _, err := harness.Run(context.Background(), b, faultCase, harness.Options{}); err != nil {
		t.Fatalf("%s: got %v, want a judged result (z = x fails verification, it is not a backend error)", harness.Subject(faultCase), err)
	}
	wantNoSurvivor(t, readPID(t, pf), "the kernel's orphaned setsid grandchild")
}

// TestExecContainOrphanAtExitStress runs orphan_at_exit.sh, a kernel
// that orphans a grandchild as it exits, many times (NPUVERIFY_STRESS=1;
// make test-stress): the real-process check of the races
// TestTrackerLastScan and TestTrackerReapsLateOrphan hold the tracker to
// on a scripted table. Before the first fix, 4 of 200 runs left the
// grandchild running; later, with two of these tests at once on two
// cores, 5 of 24 tests of 300 runs each left one (an environment read cut
// short by an execve: envHolds), and none of 24 after.
func TestExecContainOrphanAtExitStress(t *testing.T) {
	if os.Getenv("NPUVERIFY_STRESS") == "" {
		t.Skip("set NPUVERIFY_STRESS=1 (make test-stress): 300 runs, about 10 s")
	}
	const runs = 300
	for i := range runs {
		pf := pidFile(t)
		b := newExec(t, kernel(t, "orphan_at_exit.sh"), backend.ExecOptions{Timeout: 20 * time.Second})
		if _, err := harness.Run(context.Background(), b, faultCase, harness.Options{}); err != nil {
			t.Fatalf("%s: run %d of %d: got %v, want a judged result", harness.Subject(faultCase), i+1, runs, err)
		}
		// The shell may have been killed before it wrote the pid (its
		// child with it): then there is nothing to look for.
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if st, err := os.Stat(pf); err == nil && st.Size() > 0 {
				wantNoSurvivor(t, readPID(t, pf), fmt.Sprintf("the orphaned grandchild of run %d of %d", i+1, runs))
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if z := zombieChildren(t); len(z) > 0 {
		t.Errorf("%s: after %d runs the harness holds %d zombie children %v, want every adopted process reaped", harness.Subject(faultCase), runs, len(z), z)
	}
}

// zombieChildren returns the children of this process that have exited
// and wait to be reaped.
func zombieChildren(t *testing.T) []int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err != nil {
			continue // the thread has exited
		}
		for _, f := range strings.Fields(string(b)) {
			st, err := os.ReadFile("/proc/" + f + "/stat")
			if i := strings.LastIndexByte(string(st), ')'); err == nil && i >= 0 && strings.HasPrefix(string(st[i:]), ") Z") {
				pid, _ := strconv.Atoi(f)
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestExecCloseKillsAndCleansUp: Close (what the CLI calls on SIGINT,
// SIGTERM, SIGHUP) kills a running kernel with its setsid child, and the
// case directory is removed before Close returns.
func TestExecCloseKillsAndCleansUp(t *testing.T) {
	pf := pidFile(t)
	dirFile := filepath.Join(t.TempDir(), "dir")
	t.Setenv("DIRFILE", dirFile)
	work := t.TempDir()
	b := newExec(t, kernel(t, "sleeper.sh"), backend.ExecOptions{Timeout: time.Minute, WorkDir: work})
	errc := make(chan error, 1)
	go func() {
		_, err := harness.Run(context.Background(), b, faultCase, harness.Options{})
		errc <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, err := os.Stat(pf); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the kernel did not start within 10s", harness.Subject(faultCase))
		}
		time.Sleep(10 * time.Millisecond)
	}
	kpid, child := readPID(t, pf), readPID(t, pf+".child")
	start := time.Now()
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s, want it to kill the kernel at once", d)
	}
	entries, _ := os.ReadDir(work)
	if len(entries) != 0 {
		t.Errorf("%s: got %d entries left in the work directory after Close (%v), want the case directory removed", harness.Subject(faultCase), len(entries), entries[0].Name())
	}
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), backend.ErrClosed.Error()) {
			t.Errorf("%s: Run after Close: got %v, want an error naming %q", harness.Subject(faultCase), err, backend.ErrClosed)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s: Run still running 5s after Close returned", harness.Subject(faultCase))
	}
	wantNoSurvivor(t, kpid, "the kernel")
	wantNoSurvivor(t, child, "the kernel's setsid child")
	if _, err := harness.Run(context.Background(), b, faultCase, harness.Options{}); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Errorf("%s: Run after Close: got %v, want \"not started\"", harness.Subject(faultCase), err)
	}
}

// TestExecTimingFIFO: out/timing.json as a FIFO without a writer blocked
// os.Open forever, past any timeout.
func TestExecTimingFIFO(t *testing.T) {
	b := newExec(t, kernel(t, "timing_fifo.sh"), backend.ExecOptions{Timeout: 20 * time.Second})
	done := make(chan struct{})
	go func() {
		defer close(done)
		wantBackendError(t, b, "out/timing.json: not a regular file (it is a FIFO)")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Run still blocked after 10s on out/timing.json as a FIFO, want a backend error at once", harness.Subject(faultCase))
	}
}

// TestExecOutputFIFO: an output left as a FIFO is rejected at once (the
// old code's Stat caught this one too, but a file swapped for a FIFO
// between its Stat and its Open blocked it).
func TestExecOutputFIFO(t *testing.T) {
	b := newExec(t, kernel(t, "output_fifo.sh"), backend.ExecOptions{Timeout: 20 * time.Second})
	done := make(chan struct{})
	go func() {
		defer close(done)
		wantBackendError(t, b, `output "z": out/z.npy is not a regular file (it is a FIFO; want fp16[17])`)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: Run still blocked after 10s on out/z.npy as a FIFO", harness.Subject(faultCase))
	}
}

// TestExecStderrEscaped: a carriage return or escape sequence in the
// kernel's stderr was quoted raw, so a kernel could print what looks like
// a harness line over the quote.
func TestExecStderrEscaped(t *testing.T) {
	b := newExec(t, kernel(t, "stderr_escapes.sh"), backend.ExecOptions{})
	msg := wantBackendError(t, b, "exited with status 1",
		`  | progress 10%\r\x1b[2K\x1b[1Gnpuverify: run: all outputs verified`+"\n",
		`  | \x1b]0;title\abell and C1 \u009b too`)
	if strings.ContainsAny(msg, "\r\x1b\a\u009b") {
		t.Errorf("%s: got a raw control character in the error %q, want every one escaped", harness.Subject(faultCase), msg)
	}
	for _, line := range strings.Split(msg, "\n") {
		if strings.HasPrefix(line, "npuverify") {
			t.Errorf("%s: got a line starting %q in the error, want every quoted line prefixed", harness.Subject(faultCase), line)
		}
	}
}
