//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/internal/panicguard"
)

// Issue 33 items 2, 3 and 9, the panic guard, and the status file and
// SIGPIPE of item 11: one shutdown path for every command, result files
// that a closed standard output never costs, case directories that cannot
// be left behind silently.

// shutdownSignals are the signals every command ends on the same way.
var shutdownSignals = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE}

// TestShutdownEverySignalBinary sends each signal to each command that runs
// kernels while the sleeper kernel runs (for SIGPIPE, with the reader of
// standard output gone, as under `| head -1`): the command must exit with
// 128 + the signal, kill the kernel and its setsid child, remove the case
// directory, leave nothing in TMPDIR, and (check) flush --json and
// --junit marked interrupted, (report) replace no report file. report and
// SIGQUIT to check left the kernel running and its case directory behind.
func TestShutdownEverySignalBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs kernels")
	}
	bin := cliBinary(t)
	for _, command := range []string{"check", "report", "run", "explore"} {
		for _, sig := range shutdownSignals {
			switch {
			case command == "run" && sig != syscall.SIGINT && sig != syscall.SIGQUIT && sig != syscall.SIGPIPE,
				command == "explore" && sig != syscall.SIGTERM && sig != syscall.SIGPIPE:
				continue // the same shutdown path as check's and report's
			}
			t.Run(command+"/"+signalName(sig), func(t *testing.T) { shutdownBinary(t, bin, command, sig) })
		}
	}
}

func shutdownBinary(t *testing.T, bin, command string, sig syscall.Signal) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	pidFile, dirFile := filepath.Join(dir, "pid"), filepath.Join(dir, "casedir")
	js, ju := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	reportDir := filepath.Join(dir, "report")
	backendFlag := "exec:" + kernelScript(t, "sleeper.sh")
	var args []string
	switch command {
	case "check":
		args = []string{"check", "--op", "vector_add", "--backend", backendFlag, "--json", js, "--junit", ju}
	case "report":
		args = []string{"report", "--op", "vector_add", "--backend", backendFlag, "--out", reportDir}
	case "run":
		x, y, _, _ := writeInputs(t, dir, "fp16", 17)
		args = []string{"run", "vector_add", "--param", "dtype=fp16", "--in", "x=" + x, "--in", "y=" + y, "--out", filepath.Join(dir, "out"), "--backend", backendFlag}
	case "explore":
		args = []string{"explore", "--op", "vector_add", "--backend", backendFlag, "--budget", "5m", "--json", js, "--out", filepath.Join(dir, "found")}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "PIDFILE="+pidFile, "DIRFILE="+dirFile)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	var pr *os.File
	if sig == syscall.SIGPIPE {
		// Standard output is a pipe nobody reads any more.
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, pr = w, r
		defer w.Close()
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if pr != nil {
		pr.Close()
		cmd.Stdout.(*os.File).Close()
	}
	kpid, _ := strconv.Atoi(waitFile(t, pidFile))
	defer syscall.Kill(-kpid, syscall.SIGKILL) // should the test fail: the kernel's group (ESRCH when gone)
	child, _ := strconv.Atoi(waitFile(t, pidFile+".child"))
	caseDir := waitFile(t, dirFile)
	subject := fmt.Sprintf("npuverify %s, %s after the kernel started", strings.Join(args, " "), signalName(sig))
	cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: still running 20s after the signal\nstderr:\n%s", subject, e.String())
	}
	if got, want := cmd.ProcessState.ExitCode(), 128+int(sig); got != want {
		t.Errorf("%s: got exit %d, want %d\nstdout:\n%s\nstderr:\n%s", subject, got, want, o.String(), e.String())
	}
	if want := "npuverify: " + command + ": interrupted by " + signalName(sig); !strings.Contains(e.String(), want) {
		t.Errorf("%s: got stderr\n%s\nwant %q", subject, e.String(), want)
	}
	for _, s := range []string{"goroutine ", "panic"} {
		if strings.Contains(e.String(), s) {
			t.Errorf("%s: got stderr\n%s\nwant no %q in it", subject, e.String(), s)
		}
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
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("%s: got %v left in TMPDIR, want nothing", subject, left)
	}
	switch command {
	case "check":
		for _, f := range []string{js, ju} {
			b, err := os.ReadFile(f)
			if err != nil || !bytes.Contains(b, []byte("interrupted")) || !bytes.Contains(b, []byte(signalName(sig))) {
				t.Errorf("%s: %s: got %v\n%s\nwant the partial results marked interrupted by %s", subject, f, err, b, signalName(sig))
			}
		}
	case "report":
		if left, _ := filepath.Glob(filepath.Join(reportDir, "report.*")); len(left) > 0 {
			t.Errorf("%s: got %v written, want no report file from an interrupted run", subject, left)
		}
	}
}

// closedStdout runs the binary with args and standard output a pipe whose
// reader has gone before anything is written, and returns the exit code
// and stderr.
func closedStdout(t *testing.T, bin string, env []string, args ...string) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	defer w.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var e bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("npuverify %s: still running after 2 minutes", strings.Join(args, " "))
	}
	return cmd.ProcessState.ExitCode(), e.String()
}

// TestClosedStdoutKeepsResultsBinary: `check --json --junit | head -1` exited
// 141 and wrote neither file (the table came first); a successful run or
// report whose output nobody reads turned into 141. Now the result files
// are written whatever happens to standard output, and the exit code is
// the verdict's.
func TestClosedStdoutKeepsResultsBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := cliBinary(t)
	dir := t.TempDir()
	env := []string{"TMPDIR=" + t.TempDir()}

	js, ju := filepath.Join(dir, "p.json"), filepath.Join(dir, "p.xml")
	args := []string{"check", "--run", "^vector_add/fp16_", "--json", js, "--junit", ju}
	code, e := closedStdout(t, bin, env, args...)
	subject := "npuverify " + strings.Join(args, " ") + " with standard output closed"
	if code != 0 {
		t.Errorf("%s: got exit %d, want 0 (every case passes)\nstderr:\n%s", subject, code, e)
	}
	var rep struct {
		Cases []json.RawMessage `json:"cases"`
	}
	if b, err := os.ReadFile(js); err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Cases) == 0 {
		t.Errorf("%s: got %s = %.200q (%v), want the cases as JSON", subject, js, b, err)
	}
	if b, err := os.ReadFile(ju); err != nil || !bytes.Contains(b, []byte("<testsuites")) {
		t.Errorf("%s: got %s = %.200q (%v), want JUnit XML", subject, ju, b, err)
	}

	x, y, _, _ := writeInputs(t, dir, "fp16", 17)
	out := filepath.Join(dir, "out")
	args = []string{"run", "vector_add", "--param", "dtype=fp16", "--in", "x=" + x, "--in", "y=" + y, "--out", out}
	code, e = closedStdout(t, bin, env, args...)
	subject = "npuverify " + strings.Join(args, " ") + " with standard output closed"
	if code != 0 {
		t.Errorf("%s: got exit %d, want 0\nstderr:\n%s", subject, code, e)
	}
	for _, f := range []string{"z.npy", "cost.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: got %v, want %s written", subject, err, f)
		}
	}

	rdir := filepath.Join(dir, "report")
	args = []string{"report", "--op", "vector_add", "--out", rdir, "--format", "md,json"}
	code, e = closedStdout(t, bin, env, args...)
	subject = "npuverify " + strings.Join(args, " ") + " with standard output closed"
	if code != 0 {
		t.Errorf("%s: got exit %d, want 0\nstderr:\n%s", subject, code, e)
	}
	for _, f := range []string{"report.md", "report.json"} {
		if _, err := os.Stat(filepath.Join(rdir, f)); err != nil {
			t.Errorf("%s: got %v, want %s written", subject, err, f)
		}
	}
}

// TestPanicGuard: a panic in a command is exit 3 and one line on stderr,
// "npuverify: internal error: ...", naming the file its stack went to;
// the stack never reaches the terminal. The seam is a command that panics.
func TestPanicGuard(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func()
		want string
	}{
		{"panic with a value", func() { panic("seam: kaboom\nsecond line") }, "seam: kaboom second line"},
		{"runtime error", func() {
			i := len(os.Args) + 3
			_ = []int{1}[i] // index out of range
		}, "runtime error: index out of range"},
		{"panic on a worker goroutine, raised again on the command's", func() {
			var c panicguard.Catcher
			var wg sync.WaitGroup
			wg.Go(func() {
				defer c.Catch()
				panic("worker: kaboom")
			})
			wg.Wait()
			c.Rethrow()
		}, "worker: kaboom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			commands["panic-seam"] = func([]string, io.Writer, io.Writer) error { tc.fn(); return nil }
			defer delete(commands, "panic-seam")
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			t.Setenv("NPUVERIFY_DEBUG", "")
			code, stdout, stderr := cli(t, "panic-seam", "--flag")
			subject := "npuverify panic-seam (" + tc.name + ")"
			if code != exitBackend {
				t.Errorf("%s: got exit %d, want %d", subject, code, exitBackend)
			}
			if !strings.HasPrefix(stderr, "npuverify: internal error: "+tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%s: got stderr\n%s\nwant one line starting %q", subject, stderr, "npuverify: internal error: "+tc.want)
			}
			if strings.Contains(stderr+stdout, "goroutine ") {
				t.Errorf("%s: got the stack on the terminal:\n%s", subject, stderr)
			}
			files, _ := filepath.Glob(filepath.Join(tmp, "npuverify-panic-*.txt"))
			if len(files) != 1 || !strings.Contains(stderr, files[0]) {
				t.Fatalf("%s: got stack files %v and stderr\n%s\nwant one file in TMPDIR, named on stderr", subject, files, stderr)
			}
			b, err := os.ReadFile(files[0])
			if err != nil || !bytes.Contains(b, []byte("npuverify panic-seam --flag")) || !bytes.Contains(b, []byte("goroutine ")) || !bytes.Contains(b, []byte("shutdown_test.go")) {
				t.Errorf("%s: got %s = %s (%v), want the command line and the stack down to the panic", subject, files[0], b, err)
			}
		})
	}
}

// nobodyCred returns the credential of the unprivileged user (uid 65534)
// when the test runs as root, so that permissions bind the binary as they
// bind a user; nil otherwise (the test already runs unprivileged).
func nobodyCred(t *testing.T, bin string, dirs ...string) *syscall.SysProcAttr {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	// The binary's directory and every directory given are reachable.
	for _, d := range append([]string{filepath.Dir(bin)}, dirs...) {
		for p := d; p != "/" && p != "."; p = filepath.Dir(p) {
			if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o005 != 0o005 {
				os.Chmod(p, st.Mode().Perm()|0o005)
			}
		}
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// chownTree gives every entry under root to uid 65534 when running as root.
func chownTree(t *testing.T, root string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err == nil {
			os.Lchown(p, 65534, 65534)
		}
		return nil
	})
}

// vectorStore makes a store holding one vector_add case and a kernel
// script that answers it with the stored expected output (so it passes)
// and then runs extra, and returns the store and the kernel.
func vectorStore(t *testing.T, dir, extra string) (store, kernel string) {
	t.Helper()
	store = filepath.Join(dir, "store")
	copyCase(t, filepath.Join("..", "..", "golden", "cases"), store, vectorCase)
	if err := os.WriteFile(filepath.Join(store, golden.MarkerName), []byte(storeMarker), 0o644); err != nil {
		t.Fatal(err)
	}
	kernel = filepath.Join(dir, "kernel.sh")
	z := filepath.Join(store, filepath.FromSlash(vectorCase), "expected", "z.npy")
	script := fmt.Sprintf("#!/bin/sh\ncp %q \"$1/out/z.npy\" || exit 1\n%s\n", z, extra)
	if err := os.WriteFile(kernel, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return store, kernel
}

// TestDeepTreeLeftoverBinary: a kernel that passes but builds a 3000-deep
// tree in its case directory and takes the permissions away near the
// bottom left 3001 directories in TMPDIR, with exit 0 and no word. The
// binary runs unprivileged (as uid 65534 when the test is root), as a
// user's would.
func TestDeepTreeLeftoverBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("the kernel builds its tree with perl (a shell cannot cd past PATH_MAX)")
	}
	bin := cliBinary(t)
	dir, err := os.MkdirTemp("", "npuverify-deeptree")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tree := `perl -e 'chdir $ARGV[0] or die; for (1..3000) { mkdir "d" or die "mkdir: $!"; chdir "d" or die "chdir: $!" } chdir "../.." or die; chmod 0, "d" or die; for (1..1500) { chdir ".." or die } chmod 0, "d" or die' "$1" || exit 1`
	store, kernel := vectorStore(t, dir, tree)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	chownTree(t, dir)
	args := []string{"check", "--golden", store, "--backend", "exec:" + kernel}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	cmd.SysProcAttr = nobodyCred(t, bin, dir)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Run()
	subject := "npuverify " + strings.Join(args, " ") + " (the kernel leaves a 3000-deep tree with mode 000 directories)"
	if got := cmd.ProcessState.ExitCode(); got != 0 {
		t.Errorf("%s: got exit %d, want 0 (the case passes and its directory is removed)\nstdout:\n%s\nstderr:\n%s", subject, got, o.String(), e.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("%s: got %v left in TMPDIR, want nothing", subject, left)
		for _, l := range left {
			removeStuck(filepath.Join(tmp, l.Name()))
		}
	}
}

// removeStuck removes what a failed test left, through the same walk.
func removeStuck(p string) {
	exec.Command("chmod", "-R", "u+rwx", p).Run()
	os.RemoveAll(p)
}

// TestUnremovableCaseDirBinary: a case directory that cannot be removed at
// all (the kernel made a file immutable, which even root cannot unlink)
// fails the run with exit 3 and names the path; it passed silently. Needs
// root (chattr +i) and a file system with the attribute.
func TestUnremovableCaseDirBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("chattr +i needs root")
	}
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.WriteFile(probe, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", probe).CombinedOutput(); err != nil {
		t.Skipf("chattr +i: %v %s", err, out)
	}
	exec.Command("chattr", "-i", probe).Run()
	bin := cliBinary(t)
	dir := t.TempDir()
	store, kernel := vectorStore(t, dir, `touch "$1/stuck" && chattr +i "$1/stuck"`)
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stuck, _ := filepath.Glob(filepath.Join(tmp, "npuverify-case-*", "stuck"))
		for _, s := range stuck {
			exec.Command("chattr", "-i", s).Run()
		}
	}()
	args := []string{"check", "--golden", store, "--backend", "exec:" + kernel}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Run()
	subject := "npuverify " + strings.Join(args, " ") + " (the kernel leaves an immutable file)"
	if got := cmd.ProcessState.ExitCode(); got != exitBackend {
		t.Errorf("%s: got exit %d, want %d\nstdout:\n%s\nstderr:\n%s", subject, got, exitBackend, o.String(), e.String())
	}
	stuck, _ := filepath.Glob(filepath.Join(tmp, "npuverify-case-*", "stuck"))
	if len(stuck) != 1 {
		t.Fatalf("%s: got %v, want the one immutable file left", subject, stuck)
	}
	for _, want := range []string{"npuverify: check: " + vectorCase + ": ", "could not be removed", stuck[0], "operation not permitted"} {
		if !strings.Contains(e.String(), want) {
			t.Errorf("%s: got stderr\n%s\nwant %q in it", subject, e.String(), want)
		}
	}
}

// TestStatusFileOfSomeoneElseBinary: Bazel's shard status file existing
// and belonging to another user made check fail with EPERM (exit 2) when
// it set the file's times. The file is there, which is all Bazel asks:
// check runs. Needs root, to own the file and run the binary as another.
func TestStatusFileOfSomeoneElseBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a file of another user")
	}
	bin := cliBinary(t)
	dir, err := os.MkdirTemp("", "npuverify-status")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	for _, mode := range []os.FileMode{0o644, 0o600} {
		status := filepath.Join(dir, fmt.Sprintf("status-%o", mode))
		if err := os.WriteFile(status, nil, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(status, mode)
		old := time.Now().Add(-time.Hour)
		os.Chtimes(status, old, old)
		args := []string{"check", "--run", "^vector_add/fp16_uniform_n17$"}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+dir, envTotalShards+"=1", envShardIndex+"=0", envShardStatus+"="+status)
		cmd.SysProcAttr = nobodyCred(t, bin, dir)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		cmd.Run()
		subject := fmt.Sprintf("npuverify %s as uid 65534, %s=%s (root's, mode %o)", strings.Join(args, " "), envShardStatus, status, mode)
		if got := cmd.ProcessState.ExitCode(); got != 0 {
			t.Errorf("%s: got exit %d, want 0\nstderr:\n%s", subject, got, e.String())
		}
		if st, err := os.Stat(status); err != nil || st.Mode().Perm() != mode || st.Sys().(*syscall.Stat_t).Uid != 0 {
			t.Errorf("%s: got the status file changed (%v, %v), want it left as it was", subject, st, err)
		}
	}
}
