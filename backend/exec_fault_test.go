package backend_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// ---- fake kernels and the exec faults ----

// script writes an executable /bin/sh script with body into a fresh
// temporary directory and returns its quoted path (a command line).
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kernel.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return quoteArg(p)
}

// fixture writes t as a .npy file in a temporary directory and returns the
// path quoted for a shell script.
func fixture(t *testing.T, tn *tensor.Tensor) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fixture.npy")
	if err := tensor.WriteNpyFile(p, tn); err != nil {
		t.Fatal(err)
	}
	return quoteArg(p)
}

// faultCase is the case every fault test runs: vector_add fp16, n=17.
var faultCase = ops.Case{Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Dims: map[string]int{"n": 17},
	Dist: ops.DistUniform, Seed: 42}

// wantBackendError runs faultCase on b and checks that it ends in a
// backend error (CLI exit code 3) whose message contains every string of
// want. It returns the message.
func wantBackendError(t *testing.T, b backend.Backend, want ...string) string {
	t.Helper()
	return wantBackendErrorCtx(t, context.Background(), b, want...)
}

func wantBackendErrorCtx(t *testing.T, ctx context.Context, b backend.Backend, want ...string) string {
	t.Helper()
	r, err := harness.Run(ctx, b, faultCase, harness.Options{})
	if err == nil {
		t.Fatalf("%s: got a result (pass=%v), want a backend error containing %q", harness.Subject(faultCase), r.Pass(), want)
	}
	msg := err.Error()
	if !harness.IsBackend(err) {
		t.Errorf("%s: got error %q (not a backend error), want a backend error (exit code 3)", harness.Subject(faultCase), msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: got error\n%s\nwant it to contain %q", harness.Subject(faultCase), msg, w)
		}
	}
	return msg
}

// processGone waits up to 3 s for pid to exit (a zombie counts: its parent
// is gone and no one may reap it in a container without an init).
func processGone(pid int) bool {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			// pid (comm) S ...: the state follows the last ')'.
			if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: reading the background pid: %v", harness.Subject(faultCase), err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: pid file %q: %v", harness.Subject(faultCase), b, err)
	}
	return pid
}

func TestExecFaultNonZeroExit(t *testing.T) {
	b := newExec(t, script(t, `echo "progress: tiling N=17" >&2; echo "ckernel: UB overflow in tile 3" >&2; exit 3`), backend.ExecOptions{})
	wantBackendError(t, b, "kernel.sh", "exited with status 3", "ckernel: UB overflow in tile 3", "progress: tiling N=17")
}

func TestExecFaultStdoutQuotedWhenStderrEmpty(t *testing.T) {
	b := newExec(t, script(t, `echo "only on stdout"; exit 1`), backend.ExecOptions{})
	wantBackendError(t, b, "exited with status 1", "stdout (stderr was empty)", "only on stdout")
}

func TestExecFaultStderrTailIsLastLines(t *testing.T) {
	b := newExec(t, script(t, `i=1; while [ $i -le 100 ]; do echo "line $i" >&2; i=$((i+1)); done; exit 2`), backend.ExecOptions{})
	msg := wantBackendError(t, b, "exited with status 2", "line 81\n", "line 100")
	if strings.Contains(msg, "line 80\n") {
		t.Errorf("%s: got error\n%s\nwant only the last 20 lines of stderr", harness.Subject(faultCase), msg)
	}
}

func TestExecFaultSignal(t *testing.T) {
	b := newExec(t, script(t, `echo "about to crash" >&2; kill -SEGV $$`), backend.ExecOptions{})
	wantBackendError(t, b, "kernel.sh", "terminated", "segmentation fault", "about to crash")
}

func TestExecFaultTimeoutKillsProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	b := newExec(t, script(t, `sleep 30 &
echo $! > `+quoteArg(pidFile)+`
echo "waiting forever" >&2
sleep 30`), backend.ExecOptions{Timeout: time.Second})
	start := time.Now()
	wantBackendError(t, b, "kernel.sh", "timed out after 1s", "killed its process group", "waiting forever")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%s: got the timeout error after %s, want about 1s", harness.Subject(faultCase), d)
	}
	if pid := readPID(t, pidFile); !processGone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("%s: got the background child %d of the timed-out kernel still running, want it killed with its process group", harness.Subject(faultCase), pid)
	}
}

func TestExecFaultCanceled(t *testing.T) {
	b := newExec(t, script(t, `sleep 30`), backend.ExecOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	wantBackendErrorCtx(t, ctx, b, "canceled", "context canceled")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%s: got the cancellation error after %s, want about 0.2s", harness.Subject(faultCase), d)
	}

	ctx, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	wantBackendErrorCtx(t, ctx, b, "timed out after", "(the caller's deadline)", "killed its process group")
}

func TestExecFaultLeftoverProcessKilled(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	// The background child keeps stderr open: Run must neither wait for it
	// nor leave it running.
	b := newExec(t, script(t, `sleep 30 &
echo $! > `+quoteArg(pidFile)+`
exit 0`), backend.ExecOptions{})
	start := time.Now()
	wantBackendError(t, b, `output "z"`, "out/z.npy was not written", "want fp16[17]")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%s: got the error after %s, want Run not to wait for the kernel's background child", harness.Subject(faultCase), d)
	}
	if pid := readPID(t, pidFile); !processGone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("%s: got background child %d still running after the kernel exited, want it killed with its process group", harness.Subject(faultCase), pid)
	}
}

func TestExecFaultMissingOutput(t *testing.T) {
	b := newExec(t, script(t, `echo "nothing to do" >&2; exit 0`), backend.ExecOptions{})
	wantBackendError(t, b, `output "z"`, "out/z.npy was not written", "want fp16[17]", "nothing to do")
}

func TestExecFaultWrongDType(t *testing.T) {
	fix := fixture(t, tensor.MustNew(tensor.Float32, 17))
	b := newExec(t, script(t, `cp `+fix+` "$1/out/z.npy"`), backend.ExecOptions{})
	wantBackendError(t, b, `output "z"`, "dtype mismatch", "fp32", "want fp16[17]")
}

func TestExecFaultWrongShape(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		want  string
	}{
		{[]int{16}, "has shape [16], want fp16[17]"},
		{[]int{17, 1}, "has shape [17 1], want fp16[17]"},
		{[]int{18}, "more than 17 elements"}, // rejected by the element cap before allocation
	} {
		fix := fixture(t, tensor.MustNew(tensor.Float16, tc.shape...))
		b := newExec(t, script(t, `cp `+fix+` "$1/out/z.npy"`), backend.ExecOptions{})
		wantBackendError(t, b, `output "z"`, tc.want)
	}
}

func TestExecFaultOutputIsDirectory(t *testing.T) {
	b := newExec(t, script(t, `mkdir "$1/out/z.npy"`), backend.ExecOptions{})
	wantBackendError(t, b, `output "z"`, "out/z.npy is a directory")
}

func TestExecFaultOutputNotRegular(t *testing.T) {
	b := newExec(t, script(t, `ln -s /dev/zero "$1/out/z.npy"`), backend.ExecOptions{})
	wantBackendError(t, b, `output "z"`, "not a regular file")
}

func TestExecFaultMalformedNpy(t *testing.T) {
	good := fixture(t, tensor.MustNew(tensor.Float16, 17))
	for _, tc := range []struct {
		body string
		want string
	}{
		{`printf 'definitely not numpy' > "$1/out/z.npy"`, "not a .npy file"},
		{`: > "$1/out/z.npy"`, "empty file"},
		{`head -c 140 ` + good + ` > "$1/out/z.npy"`, "truncated data"},
		{`head -c 20 ` + good + ` > "$1/out/z.npy"`, "truncated header"},
		{`cp ` + good + ` "$1/out/z.npy"; printf 'xx' >> "$1/out/z.npy"`, "trailing data"},
	} {
		b := newExec(t, script(t, tc.body), backend.ExecOptions{})
		wantBackendError(t, b, `output "z"`, tc.want, "want fp16[17]")
	}
}

// hostileHeader is a .npy header claiming 2^40 fp16 elements, with no data.
func hostileHeader() []byte {
	dict := "{'descr': '<f2', 'fortran_order': False, 'shape': (1099511627776,), }"
	pad := (64 - (10+len(dict)+1)%64) % 64
	b := append([]byte("\x93NUMPY\x01\x00"), 0, 0)
	binary.LittleEndian.PutUint16(b[8:], uint16(len(dict)+pad+1))
	b = append(b, dict...)
	b = append(b, bytes.Repeat([]byte(" "), pad)...)
	return append(b, '\n')
}

func TestExecFaultHostileOutputHeader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "hostile.npy")
	if err := os.WriteFile(p, hostileHeader(), 0o644); err != nil {
		t.Fatal(err)
	}
	b := newExec(t, script(t, `cp `+quoteArg(p)+` "$1/out/z.npy"`), backend.ExecOptions{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	wantBackendError(t, b, `output "z"`, "more than 17 elements")
	runtime.ReadMemStats(&after)
	if d := after.TotalAlloc - before.TotalAlloc; d > 16<<20 {
		t.Errorf("%s: got %d bytes allocated for a header claiming 2^40 elements, want it rejected before allocation", harness.Subject(faultCase), d)
	}
}

func TestExecFaultMegabytesOfStderr(t *testing.T) {
	b := newExec(t, script(t, `head -c 20000000 /dev/zero | tr '\0' x >&2; echo >&2; echo "the real error" >&2; exit 1`), backend.ExecOptions{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msg := wantBackendError(t, b, "exited with status 1", "20000016 bytes", "the real error")
	runtime.ReadMemStats(&after)
	if len(msg) > 8<<10 {
		t.Errorf("%s: got a %d-byte error message, want the stderr quote bounded (≤ 8 KiB)", harness.Subject(faultCase), len(msg))
	}
	// 20 MB went through the pipe; the capture keeps a 64 KiB tail.
	if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
		t.Errorf("%s: got %d bytes allocated while capturing 20 MB of stderr, want bounded capture (< 8 MiB)", harness.Subject(faultCase), d)
	}
}

func TestExecFaultCommandNotFound(t *testing.T) {
	for _, cmd := range []string{"/nonexistent/dir/ckernel", "npuverify-no-such-kernel-command"} {
		b := newExec(t, cmd+" --fast", backend.ExecOptions{})
		wantBackendError(t, b, "starting command", cmd)
	}
	p := filepath.Join(t.TempDir(), "not-executable.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantBackendError(t, newExec(t, quoteArg(p), backend.ExecOptions{}), "starting command", "not-executable.sh", "permission denied")
}

func TestExecFaultUnbalancedQuotes(t *testing.T) {
	for _, cmdline := range []string{`./kernel 'oops`, `./kernel "oops`, `./kernel oops\`, ``, "  \t "} {
		_, err := backend.NewExec(cmdline, backend.ExecOptions{})
		if err == nil || !errors.Is(err, backend.ErrCommandLine) || harness.IsBackend(err) {
			t.Errorf("NewExec(%q): got error %v, want a usage error wrapping ErrCommandLine", cmdline, err)
		}
		if err != nil && !strings.Contains(err.Error(), strconv.Quote(cmdline)) {
			t.Errorf("NewExec(%q): got error %q, want it to quote the command line", cmdline, err)
		}
	}
}

func TestExecWrongResultFailsVerification(t *testing.T) {
	// A "kernel" that returns x as z: a valid file with wrong values must be
	// a failed verification, not a backend error.
	b := newExec(t, script(t, `cp "$1/x.npy" "$1/out/z.npy"`), backend.ExecOptions{})
	r, err := harness.Run(context.Background(), b, faultCase, harness.Options{})
	if err != nil {
		t.Fatalf("%s: got error %v, want a judged result", harness.Subject(faultCase), err)
	}
	if r.Pass() {
		t.Errorf("%s: got pass for z = x, want a failed bound verdict", harness.Subject(faultCase))
	}
}
