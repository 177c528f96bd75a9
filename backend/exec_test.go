package backend_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// ---- the C kernel ----

// buildCKernel compiles testdata/ckernel with the system C compiler ($CC,
// else cc, gcc or clang) into a temporary directory and returns the
// binary's path. It skips the test only when no C compiler is found.
func buildCKernel(tb testing.TB) string {
	tb.Helper()
	var cc string
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		tb.Skip("no C compiler found ($CC, cc, gcc or clang in PATH): cannot build the C kernel (testdata/ckernel) the exec backend tests run")
	}
	bin := filepath.Join(tb.TempDir(), "ckernel")
	src := filepath.Join("testdata", "ckernel")
	files, err := filepath.Glob(filepath.Join(src, "*.c"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("C kernel sources in %s: %v", src, err)
	}
	cmd := exec.Command(cc, append(append([]string{"-O2", "-std=c11", "-Wall", "-o", bin}, files...), "-lm")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building the C kernel with %s: %v\n%s", cc, err, out)
	}
	return bin
}

// quoteArg quotes s for SplitCommandLine.
func quoteArg(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func newExec(tb testing.TB, cmdline string, opt backend.ExecOptions) *backend.Exec {
	tb.Helper()
	e, err := backend.NewExec(cmdline, opt)
	if err != nil {
		tb.Fatalf("NewExec(%q): %v", cmdline, err)
	}
	return e
}

// runCase runs c on b and reports a failed verification or an error with
// the case's subject first and got / want / bound last.
func runCase(t *testing.T, b backend.Backend, c ops.Case) *harness.Result {
	t.Helper()
	r, err := harness.Run(context.Background(), b, c, harness.Options{})
	if err != nil {
		t.Errorf("%s: %v; want a judged result", c.Subject(), err)
		return nil
	}
	if !r.Pass() {
		t.Errorf("%s", r.Verify.Failure())
	}
	return r
}

// runCases runs cs on b, a few at a time (each case is a process, mostly
// waiting on the file system), and returns how many ran.
func runCases(t *testing.T, b backend.Backend, cs []ops.Case, check func(*harness.Result, ops.Case)) int {
	t.Helper()
	work := make(chan ops.Case)
	var wg sync.WaitGroup
	for range max(2, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				if r := runCase(t, b, c); r != nil && check != nil {
					check(r, c)
				}
			}
		}()
	}
	for _, c := range cs {
		work <- c
	}
	close(work)
	wg.Wait()
	return len(cs)
}

// TestExecCKernel runs the independent C kernel through the exec backend
// and the harness with the default bound policy: vector_add in every dtype
// at edge sizes and every distribution, gemm fp16_fp32acc (which sums in an
// order neither of the emulator's models uses) over edge shapes and
// alpha/beta, numerics overrides passed through case.json, and the default
// golden case set.
func TestExecCKernel(t *testing.T) {
	bin := buildCKernel(t)
	b := newExec(t, quoteArg(bin), backend.ExecOptions{Timeout: 20 * time.Second})
	var cases int
	start := time.Now()

	t.Run("vector_add", func(t *testing.T) {
		op, err := opdb.Op("vector_add")
		if err != nil {
			t.Fatal(err)
		}
		sizes := []int{0, 1, 15, 16, 17, 31, 32, 33, 127, 128, 129, 255, 256, 257, 4095, 4097, 16385}
		var cs []ops.Case
		for _, dt := range []string{"fp16", "fp32", "bf16", "int8"} {
			for _, dist := range op.Dists() {
				for i, n := range sizes {
					cs = append(cs, ops.Case{Op: "vector_add", Params: ops.Params{"dtype": dt},
						Dims: map[string]int{"n": n}, Dist: dist, Seed: uint64(1000 + i)})
				}
			}
		}
		cases += runCases(t, b, cs, func(r *harness.Result, c ops.Case) {
			if r.Cost == nil {
				t.Errorf("%s: got cost nil, want the kernel's timing.json", c.Subject())
			}
		})
	})

	t.Run("gemm_fp16_fp32acc", func(t *testing.T) {
		op, err := opdb.Op("gemm")
		if err != nil {
			t.Skipf("gemm: %v (not registered yet)", err)
		}
		shapes := [][3]int{{1, 1, 1}, {0, 4, 3}, {2, 0, 3}, {3, 5, 0}, {3, 5, 7}, {16, 16, 16}, {17, 33, 15},
			{31, 64, 33}, {1, 1000, 1}, {64, 128, 32}, {128, 256, 64}}
		params := []ops.Params{
			{},
			{"mode": "fp16_fp32acc", "alpha": "0.5", "beta": "1.5"},
			{"alpha": "-2", "beta": "-0.25", "accumulate": "blocked16"},
			{"alpha": "3", "accumulate": "blocked16"},
			{"beta": "1"},
		}
		var cs []ops.Case
		for pi, p := range params {
			dists := op.Dists()
			if pi > 0 { // alpha, beta and accumulate variants: fewer distributions
				dists = []string{ops.DistUniform, ops.DistSpecial, ops.DistCancel}
			}
			for _, dist := range dists {
				for si, s := range shapes {
					cs = append(cs, ops.Case{Op: "gemm", Params: p, Dims: map[string]int{"m": s[0], "k": s[1], "n": s[2]},
						Dist: dist, Seed: uint64(100*pi + si)})
				}
			}
		}
		cases += runCases(t, b, cs, nil)
	})

	t.Run("numerics", func(t *testing.T) {
		for _, num := range []tensor.Numerics{
			{Overflow: tensor.OverflowSaturate},
			{Subnormals: tensor.SubnormalFlush},
			{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush, Int8Rounding: tensor.RoundHalfAway},
		} {
			for _, dt := range []string{"fp16", "fp32", "bf16", "int8"} {
				for _, dist := range []string{ops.DistSpecial, ops.DistLarge, ops.DistNormal} {
					c := ops.Case{Op: "vector_add", Params: ops.Params{"dtype": dt},
						Dims: map[string]int{"n": 257}, Dist: dist, Seed: 7, Numerics: &num}
					runCase(t, b, c)
					cases++
				}
			}
			if _, err := opdb.Op("gemm"); err == nil {
				for _, dist := range []string{ops.DistSpecial, ops.DistLarge} {
					c := ops.Case{Op: "gemm", Params: ops.Params{"beta": "1"},
						Dims: map[string]int{"m": 9, "k": 40, "n": 11}, Dist: dist, Seed: 8, Numerics: &num}
					runCase(t, b, c)
					cases++
				}
			}
		}
	})

	t.Run("golden_defaults", func(t *testing.T) {
		var cs []ops.Case
		skipped := 0
		for _, c := range golden.DefaultCases() {
			if !ckernelSupports(c) {
				skipped++
				continue
			}
			cs = append(cs, c)
		}
		ran := runCases(t, b, cs, nil)
		cases += ran
		t.Logf("default golden set: %d cases through the C kernel, %d outside its scope (ops or modes it does not implement)", ran, skipped)
	})

	t.Run("golden_store", func(t *testing.T) {
		s := golden.Embedded()
		if len(s.Cases()) == 0 {
			t.Skip("the embedded golden store has no cases yet (make golden)")
		}
		results, err := golden.Check(context.Background(), s, b, golden.CheckOptions{NoBudgets: true})
		if err != nil {
			t.Fatal(err)
		}
		ran := 0
		for i := range results {
			r := &results[i]
			if !ckernelSupports(r.Case) {
				continue
			}
			ran++
			cases++
			if !r.Pass() {
				t.Errorf("%s", r.Failure())
			}
		}
		t.Logf("embedded golden store: %d of %d cases in the C kernel's scope checked", ran, len(results))
	})

	if cases > 0 {
		t.Logf("%d cases through exec:ckernel in %s: %s per case (write inputs, run, read outputs, reference and bounds)",
			cases, time.Since(start).Round(time.Millisecond), (time.Since(start) / time.Duration(cases)).Round(time.Microsecond))
	}
}

// ckernelSupports reports whether the C kernel implements c's op and mode.
func ckernelSupports(c ops.Case) bool {
	switch c.Op {
	case "vector_add":
		return true
	case "gemm":
		m, ok := c.Params["mode"]
		return !ok || m == "fp16_fp32acc"
	}
	return false
}

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
		t.Fatalf("%s: got a result (pass=%v), want a backend error containing %q", faultCase.Subject(), r.Pass(), want)
	}
	msg := err.Error()
	if !harness.IsBackend(err) {
		t.Errorf("%s: got error %q (not a backend error), want a backend error (exit code 3)", faultCase.Subject(), msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: got error\n%s\nwant it to contain %q", faultCase.Subject(), msg, w)
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
		t.Fatalf("%s: reading the background pid: %v", faultCase.Subject(), err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: pid file %q: %v", faultCase.Subject(), b, err)
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
		t.Errorf("%s: got error\n%s\nwant only the last 20 lines of stderr", faultCase.Subject(), msg)
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
		t.Errorf("%s: got the timeout error after %s, want about 1s", faultCase.Subject(), d)
	}
	if pid := readPID(t, pidFile); !processGone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("%s: got the background child %d of the timed-out kernel still running, want it killed with its process group", faultCase.Subject(), pid)
	}
}

func TestExecFaultCanceled(t *testing.T) {
	b := newExec(t, script(t, `sleep 30`), backend.ExecOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	wantBackendErrorCtx(t, ctx, b, "canceled", "context canceled")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%s: got the cancellation error after %s, want about 0.2s", faultCase.Subject(), d)
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
		t.Errorf("%s: got the error after %s, want Run not to wait for the kernel's background child", faultCase.Subject(), d)
	}
	if pid := readPID(t, pidFile); !processGone(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("%s: got background child %d still running after the kernel exited, want it killed with its process group", faultCase.Subject(), pid)
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
		t.Errorf("%s: got %d bytes allocated for a header claiming 2^40 elements, want it rejected before allocation", faultCase.Subject(), d)
	}
}

func TestExecFaultMegabytesOfStderr(t *testing.T) {
	b := newExec(t, script(t, `head -c 20000000 /dev/zero | tr '\0' x >&2; echo >&2; echo "the real error" >&2; exit 1`), backend.ExecOptions{})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msg := wantBackendError(t, b, "exited with status 1", "20000016 bytes", "the real error")
	runtime.ReadMemStats(&after)
	if len(msg) > 8<<10 {
		t.Errorf("%s: got a %d-byte error message, want the stderr quote bounded (≤ 8 KiB)", faultCase.Subject(), len(msg))
	}
	// 20 MB went through the pipe; the capture keeps a 64 KiB tail.
	if d := after.TotalAlloc - before.TotalAlloc; d > 8<<20 {
		t.Errorf("%s: got %d bytes allocated while capturing 20 MB of stderr, want bounded capture (< 8 MiB)", faultCase.Subject(), d)
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
		t.Fatalf("%s: got error %v, want a judged result", faultCase.Subject(), err)
	}
	if r.Pass() {
		t.Errorf("%s: got pass for z = x, want a failed bound verdict", faultCase.Subject())
	}
}

// ---- the protocol ----

func TestSplitCommandLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`kernel`, []string{"kernel"}},
		{"  kernel \t--fast\n x ", []string{"kernel", "--fast", "x"}},
		{`./k 'a b' "c d"`, []string{"./k", "a b", "c d"}},
		{`a'b c'd`, []string{"ab cd"}},
		{`k '' ""`, []string{"k", "", ""}},
		{`k 'it'\''s'`, []string{"k", "it's"}},
		{`k "a \"q\" \\ \$x \n"`, []string{"k", `a "q" \ $x \n`}},
		{`k a\ b \'c`, []string{"k", "a b", "'c"}},
		{"k a\\\nb", []string{"k", "ab"}},
		{`k '$HOME' ~ *`, []string{"k", "$HOME", "~", "*"}},
		{`sh -c "./kernel --fast \"\$0\""`, []string{"sh", "-c", `./kernel --fast "$0"`}},
	} {
		got, err := backend.SplitCommandLine(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitCommandLine(%q): got %q, %v, want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestExecProtocol(t *testing.T) {
	save := t.TempDir()
	work := t.TempDir()
	// The script records its arguments, environment and the case directory,
	// then fails (so no outputs are needed).
	cmdline := script(t, `printf '%s\n' "$@" > `+quoteArg(filepath.Join(save, "args"))+`
printf '%s' "$NPUVERIFY_CASE" > `+quoteArg(filepath.Join(save, "env"))+`
cp "$NPUVERIFY_CASE" `+quoteArg(filepath.Join(save, "case.json"))+`
for dir; do :; done
ls "$dir" > `+quoteArg(filepath.Join(save, "ls"))+`
test -d "$dir/out" && test -f "$dir/x.npy" && test -f "$dir/y.npy" || exit 4
exit 1`) + ` --flag 'two words'`
	num := tensor.Numerics{Overflow: tensor.OverflowSaturate}
	c := faultCase
	c.Numerics = &num
	b := newExec(t, cmdline, backend.ExecOptions{WorkDir: work})
	if got, want := b.Name(), "exec:"+cmdline; got != want {
		t.Errorf("Name(): got %q, want %q", got, want)
	}
	_, err := harness.Run(context.Background(), b, c, harness.Options{})
	if err == nil || !harness.IsBackend(err) || !strings.Contains(err.Error(), "exited with status 1") {
		t.Fatalf("%s: got %v, want the script's exit status 1 (4 means the case directory was incomplete)", c.Subject(), err)
	}
	args, _ := os.ReadFile(filepath.Join(save, "args"))
	env, _ := os.ReadFile(filepath.Join(save, "env"))
	lines := strings.Split(strings.TrimSuffix(string(args), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "--flag" || lines[1] != "two words" {
		t.Fatalf("%s: got arguments %q, want --flag, 'two words' and the case directory", c.Subject(), lines)
	}
	dir := lines[2]
	if !filepath.IsAbs(dir) || filepath.Dir(dir) != work || string(env) != filepath.Join(dir, "case.json") {
		t.Errorf("%s: got case directory %q and NPUVERIFY_CASE=%q, want an absolute directory under %s and its case.json", c.Subject(), dir, env, work)
	}
	if ls, _ := os.ReadFile(filepath.Join(save, "ls")); string(ls) != "case.json\nout\nx.npy\ny.npy\n" {
		t.Errorf("%s: got case directory listing %q, want case.json, out, x.npy, y.npy", c.Subject(), ls)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: got case directory %s still present (%v), want it removed", c.Subject(), dir, err)
	}
	raw, err := os.ReadFile(filepath.Join(save, "case.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cf backend.ExecCaseFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		t.Fatalf("%s: case.json: %v\n%s", c.Subject(), err, raw)
	}
	want := backend.ExecCaseFile{
		Version: backend.ExecCaseVersion, Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Numerics: num,
		Inputs: []backend.ExecTensor{
			{Name: "x", File: "x.npy", DType: tensor.Float16, Shape: []int{17}},
			{Name: "y", File: "y.npy", DType: tensor.Float16, Shape: []int{17}},
		},
		Outputs: []backend.ExecTensor{{Name: "z", File: "out/z.npy", DType: tensor.Float16, Shape: []int{17}}},
	}
	if got, w := mustJSON(t, cf), mustJSON(t, want); got != w {
		t.Errorf("%s: got case.json\n%s\nwant\n%s", c.Subject(), got, w)
	}
	if !bytes.Contains(raw, []byte(`"overflow": "saturate"`)) || !bytes.Contains(raw, []byte(`"dtype": "fp16"`)) {
		t.Errorf("%s: got case.json\n%s\nwant numerics and dtypes by name", c.Subject(), raw)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestExecGEMMCaseFileOmitsAbsentC(t *testing.T) {
	if _, err := opdb.Op("gemm"); err != nil {
		t.Skipf("gemm: %v", err)
	}
	save := filepath.Join(t.TempDir(), "case.json")
	b := newExec(t, script(t, `cp "$NPUVERIFY_CASE" `+quoteArg(save)+`; exit 1`), backend.ExecOptions{})
	c := ops.Case{Op: "gemm", Params: ops.Params{"alpha": "0.5"}, Dims: map[string]int{"m": 2, "k": 3, "n": 4}, Dist: ops.DistUniform, Seed: 1}
	if _, err := harness.Run(context.Background(), b, c, harness.Options{}); !harness.IsBackend(err) {
		t.Fatalf("%s: got %v, want the script's backend error", c.Subject(), err)
	}
	raw, err := os.ReadFile(save)
	if err != nil {
		t.Fatal(err)
	}
	var cf backend.ExecCaseFile
	if err := json.Unmarshal(raw, &cf); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range cf.Inputs {
		names = append(names, in.Name)
	}
	if !slices.Equal(names, []string{"a", "b"}) || cf.Params["mode"] != "fp16_fp32acc" || cf.Params["alpha"] != "0.5" ||
		len(cf.Outputs) != 1 || cf.Outputs[0].File != "out/out.npy" || !slices.Equal(cf.Outputs[0].Shape, []int{2, 4}) {
		t.Errorf("%s: got case.json\n%s\nwant inputs a, b (no c), validated params, output out/out.npy [2 4]", c.Subject(), raw)
	}
}

func TestExecKeepAndTiming(t *testing.T) {
	work := t.TempDir()
	fix := fixture(t, tensor.MustNew(tensor.Float16, 17))
	ctx := context.Background()
	pc, err := harness.Prepare(faultCase)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		timing  string // "" = no timing.json
		seconds float64
		noCost  bool
		wantErr string
	}{
		{timing: "", noCost: true},
		{timing: `{"kernel_ns": []}`, noCost: true},
		{timing: `{"kernel_ns": [300, 100, 200]}`, seconds: 200e-9},
		{timing: `{"kernel_ns": [400, 100, 200, 300]}`, seconds: 250e-9},
		{timing: `{"kernel_ns": [1, `, wantErr: "out/timing.json"},
		{timing: `{"kernel_ns": [-5]}`, wantErr: "kernel_ns[0] = -5"},
		{timing: `{"kernel_seconds": [1]}`, wantErr: "unknown field"},
	} {
		body := `cp ` + fix + ` "$1/out/z.npy"`
		if tc.timing != "" {
			body += "\nprintf '%s' " + quoteArg(tc.timing) + ` > "$1/out/timing.json"`
		}
		b := newExec(t, script(t, body), backend.ExecOptions{WorkDir: work})
		out, cost, err := b.Run(ctx, "vector_add", pc.Params, pc.Inputs)
		switch {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: timing.json %s: got error %v, want one containing %q", faultCase.Subject(), tc.timing, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%s: timing.json %s: got error %v, want none", faultCase.Subject(), tc.timing, err)
		case out["z"] == nil:
			t.Errorf("%s: got outputs %v, want z", faultCase.Subject(), out)
		case tc.noCost && cost != nil:
			t.Errorf("%s: timing.json %q: got cost %+v, want nil", faultCase.Subject(), tc.timing, cost)
		case !tc.noCost && (cost == nil || cost.Seconds != tc.seconds):
			t.Errorf("%s: timing.json %s: got cost %+v, want Seconds %g (the median)", faultCase.Subject(), tc.timing, cost, tc.seconds)
		}
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("%s: got %d case directories left in WorkDir, want every one removed", faultCase.Subject(), len(ents))
	}

	// Keep leaves the directory and failures name it.
	b := newExec(t, script(t, `exit 5`), backend.ExecOptions{WorkDir: work, Keep: true})
	_, _, err = b.Run(ctx, "vector_add", pc.Params, pc.Inputs)
	ents, _ := os.ReadDir(work)
	if err == nil || len(ents) != 1 || !strings.Contains(err.Error(), "case directory kept: "+filepath.Join(work, ents[0].Name())) {
		t.Errorf("%s: Keep: got error %v and %d directories, want one kept directory named in the error", faultCase.Subject(), err, len(ents))
	}
}

func TestExecNumericsBackend(t *testing.T) {
	b := newExec(t, "true", backend.ExecOptions{})
	var nb harness.NumericsBackend = b
	num := tensor.Numerics{Subnormals: tensor.SubnormalFlush}
	c := nb.WithNumerics(num).(harness.NumericsBackend)
	if c.Numerics() != num || b.Numerics() != (tensor.Numerics{}) || c.Name() != b.Name() {
		t.Errorf("WithNumerics(%s): got %s (original %s), want a copy with the new profile and the original unchanged", num, c.Numerics(), b.Numerics())
	}
	if o := b.Options(); o.Timeout != backend.DefaultExecTimeout || o.MaxStderr != backend.DefaultExecMaxStderr {
		t.Errorf("NewExec defaults: got %+v, want timeout %s and stderr tail %d", o, backend.DefaultExecTimeout, backend.DefaultExecMaxStderr)
	}
}

// ---- how long one case takes ----

// BenchmarkExecVectorAdd measures one vector_add fp16 case through the
// exec backend and the C kernel: write case.json and the inputs, start the
// process, wait, read and check the output (the harness's reference and
// verification are not included).
func BenchmarkExecVectorAdd(b *testing.B) {
	bin := buildCKernel(b)
	workDirs := []string{""} // the system's temporary directory
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		workDirs = append(workDirs, "/dev/shm")
	}
	for _, wd := range workDirs {
		e := newExec(b, quoteArg(bin), backend.ExecOptions{WorkDir: wd})
		for _, n := range []int{257, 16385, 1 << 20} {
			name := fmt.Sprintf("n=%d", n)
			if wd != "" {
				name += "/workdir=" + wd
			}
			benchExec(b, e, name, n)
		}
	}
}

func benchExec(b *testing.B, e *backend.Exec, name string, n int) {
	b.Run(name, func(b *testing.B) {
		pc, err := harness.Prepare(ops.Case{Op: "vector_add", Params: ops.Params{"dtype": "fp16"},
			Dims: map[string]int{"n": n}, Dist: ops.DistNormal, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.SetBytes(int64(3 * 2 * n))
		for b.Loop() {
			if _, _, err := e.Run(ctx, "vector_add", pc.Params, pc.Inputs); err != nil {
				b.Fatal(err)
			}
		}
	})
}
