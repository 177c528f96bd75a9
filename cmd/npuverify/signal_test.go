//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 8 points 4, 5 and 6 through the CLI: the kernels are the scripts
// of backend/testdata/kernels.

// kernelScript returns the absolute path of a backend test kernel.
func kernelScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "backend", "testdata", "kernels", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFile waits up to 10 s for path to hold something.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: not written within 10s", path)
	return ""
}

// gone waits up to 10 s (a loaded 2-core CI machine schedules the
// reaper late) for pid to be gone from /proc, killed and reaped.
func gone(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestInterruptAndBoundedReadsBinary builds the binary and sends it the
// signals a user or a CI runner sends, and points --profile at /dev/zero.
func TestInterruptAndBoundedReadsBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := cliBinary(t)
	for _, tc := range []struct {
		sig  syscall.Signal
		cmd  string
		code int
	}{{syscall.SIGINT, "check", 130}, {syscall.SIGTERM, "check", 143}, {syscall.SIGHUP, "check", 129}, {syscall.SIGINT, "run", 130}} {
		t.Run(tc.cmd+"/"+signalName(tc.sig), func(t *testing.T) { interruptBinary(t, bin, tc.cmd, tc.sig, tc.code) })
	}
	t.Run("profile /dev/zero", func(t *testing.T) {
		// Under a 4 GiB address-space limit, so that the old reader (which
		// read /dev/zero until memory ran out) fails fast instead of
		// exhausting the machine.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "sh", "-c", `ulimit -v 4194304; exec "$0" "$@"`, bin, "check", "--profile", "/dev/zero", "--shard", "1/40")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		start := time.Now()
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if d := time.Since(start); d > 10*time.Second || code != 2 || err == nil {
			t.Errorf("npuverify check --profile /dev/zero: exit %d after %s, want exit 2 at once\nstderr:\n%s", code, d, e.String())
		}
		want := "npuverify: check: --profile /dev/zero: profile /dev/zero: open /dev/zero: is a character device, not a regular file\n"
		if e.String() != want {
			t.Errorf("npuverify check --profile /dev/zero: got stderr\n%s\nwant\n%s", e.String(), want)
		}
	})
}

// interruptBinary runs check or run with the sleeper kernel, sends sig once
// the kernel runs, and checks that the binary exits with code, that no
// process of the kernel is left and no case directory, and (check) that
// the partial results are written and marked interrupted.
func interruptBinary(t *testing.T, bin, command string, sig syscall.Signal, code int) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile, dirFile := filepath.Join(dir, "pid"), filepath.Join(dir, "casedir")
	js, ju := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	backendFlag := "exec:" + kernelScript(t, "sleeper.sh")
	args := []string{"check", "--op", "vector_add", "--backend", backendFlag, "--json", js, "--junit", ju}
	if command == "run" {
		x, y, _, _ := writeInputs(t, dir, "fp16", 17)
		args = []string{"run", "vector_add", "--param", "dtype=fp16", "--in", "x=" + x, "--in", "y=" + y, "--out", filepath.Join(dir, "out"), "--backend", backendFlag}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PIDFILE="+pidFile, "DIRFILE="+dirFile)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	kpid, _ := strconv.Atoi(waitFile(t, pidFile))
	defer syscall.Kill(-kpid, syscall.SIGKILL) // should the test fail: the kernel's group (ESRCH when gone)
	child, _ := strconv.Atoi(waitFile(t, pidFile+".child"))
	caseDir := waitFile(t, dirFile)
	start := time.Now()
	cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("npuverify %s: still running 10s after %s\nstderr:\n%s", command, signalName(sig), e.String())
	}
	subject := fmt.Sprintf("npuverify %s, %s after the kernel started", strings.Join(args, " "), signalName(sig))
	if got := cmd.ProcessState.ExitCode(); got != code {
		t.Errorf("%s: got exit %d after %s, want %d\nstdout:\n%s\nstderr:\n%s", subject, got, time.Since(start), code, o.String(), e.String())
	}
	if !strings.Contains(e.String(), "npuverify: "+command+": interrupted by "+signalName(sig)) {
		t.Errorf("%s: got stderr\n%s\nwant the interruption reported", subject, e.String())
	}
	for _, p := range []struct {
		pid  int
		what string
	}{{kpid, "the kernel"}, {child, "the kernel's setsid child"}} {
		if !gone(p.pid) {
			syscall.Kill(p.pid, syscall.SIGKILL)
			t.Errorf("%s: got %s (pid %d) still running, want it killed", subject, p.what, p.pid)
		}
	}
	if _, err := os.Stat(caseDir); !os.IsNotExist(err) {
		t.Errorf("%s: got the case directory %s still there (%v), want it removed", subject, caseDir, err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "npuverify-case-*")); len(left) > 0 {
		t.Errorf("%s: got case directories left: %v", subject, left)
	}
	if command != "check" {
		return
	}
	for _, f := range []string{js, ju} {
		b, err := os.ReadFile(f)
		if err != nil || !bytes.Contains(b, []byte("interrupted")) || !bytes.Contains(b, []byte(signalName(sig))) {
			t.Errorf("%s: %s: got %v\n%s\nwant the partial results marked interrupted by %s", subject, f, err, b, signalName(sig))
		}
	}
}

// TestRunInputFIFO: an input .npy that is a FIFO without a writer hung
// run forever.
func TestRunInputFIFO(t *testing.T) {
	dir := t.TempDir()
	_, y, _, _ := writeInputs(t, dir, "fp16", 17)
	fifo := filepath.Join(dir, "x.npy")
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		c, _, e := cli(t, "run", "vector_add", "--param", "dtype=fp16", "--in", "x="+fifo, "--in", "y="+y, "--out", filepath.Join(dir, "out"))
		done <- result{c, e}
	}()
	select {
	case r := <-done:
		want := "npuverify: run: --in x=" + fifo + `: tensor "x": is a FIFO, not a regular file`
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("run with --in x=FIFO: got exit %d, stderr\n%s\nwant exit 2 and %q", r.code, r.stderr, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("run with --in x=%s (a FIFO without a writer): still blocked after 10s, want exit 2 at once", fifo)
	}
}
