//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

// TestBoundedReadsBinary builds the binary and points --profile at
// /dev/zero. (The signals a user or a CI runner sends are
// TestShutdownEverySignalBinary's, in shutdown_test.go.)
func TestBoundedReadsBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := cliBinary(t)
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
