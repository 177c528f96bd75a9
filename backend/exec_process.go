package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/npuverify/npuverify/safefile"
)

// Process control: running the command, killing it and everything it
// started, and describing how it ended.

// cmdResult is how one run of the command ended.
type cmdResult struct {
	argv0    string
	state    *os.ProcessState // nil when the command did not start
	waitErr  error
	timedOut bool
	canceled error // the caller's context error (or its cause), when it ended the run
	start    time.Time
	elapsed  time.Duration
	stderr   *tailBuffer
	stdout   *tailBuffer
}

// command runs the command on dir and waits for it (or kills it).
func (e *Exec) command(ctx context.Context, dir string) (*cmdResult, error) {
	args := append(slices.Clone(e.argv[1:]), dir)
	cmd := exec.Command(e.argv[0], args...)
	marker := "NPUVERIFY_CASE=" + filepath.Join(dir, "case.json")
	cmd.Env = append(os.Environ(), marker)
	setProcessGroup(cmd)
	res := &cmdResult{argv0: safefile.Quote(e.argv[0]), stderr: newTailBuffer(e.opt.MaxStderr), stdout: newTailBuffer(e.opt.MaxStderr)}

	// Own pipes rather than io.Writers on the Cmd: exec's copying goroutines
	// would make Wait block until every process holding the pipes (e.g. a
	// background child) exits; here the group is killed first.
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec %s: %w", res.argv0, err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		errR.Close()
		errW.Close()
		return nil, fmt.Errorf("exec %s: %w", res.argv0, err)
	}
	cmd.Stderr, cmd.Stdout = errW, outW
	start := time.Now()
	err = cmd.Start()
	errW.Close()
	outW.Close()
	if err != nil {
		errR.Close()
		outR.Close()
		return nil, fmt.Errorf("exec: starting command %q: %w", e.argv[0], err)
	}
	res.start = start
	// Follow the command's descendants from now on; whatever of them is
	// left is killed before Run returns (also when the command exits 0).
	tr := track(cmd.Process.Pid, marker)
	defer tr.stop()
	var copies sync.WaitGroup
	for _, c := range []struct {
		r *os.File
		w *tailBuffer
	}{{errR, res.stderr}, {outR, res.stdout}} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			io.Copy(c.w, c.r) // ends at EOF, or with an error when the reader is closed below
		}()
	}
	// The group may be signalled only while its leader is unreaped: after
	// that its id can be reused by an unrelated process.
	var (
		mu     sync.Mutex
		reaped bool
	)
	kill := func() {
		mu.Lock()
		defer mu.Unlock()
		if !reaped {
			tr.kill(func() { killProcessGroup(cmd.Process) })
		}
	}
	waited := make(chan error, 1)
	go func() {
		waited <- waitAndReap(cmd, func() {
			// The leader has exited but is not reaped yet: whatever it left
			// running in its group goes too (it could still write into the
			// case directory, and it holds the pipes).
			mu.Lock()
			defer mu.Unlock()
			tr.kill(func() { killProcessGroup(cmd.Process) })
			reaped = true
		})
	}()

	timer := time.NewTimer(e.opt.Timeout)
	defer timer.Stop()
	select {
	case res.waitErr = <-waited:
	case <-timer.C:
		res.timedOut = true
		kill()
		res.waitErr = <-waited
	case <-ctx.Done():
		res.canceled = context.Cause(ctx)
		kill()
		res.waitErr = <-waited
	}
	res.elapsed = time.Since(start)
	res.state = cmd.ProcessState
	drained := make(chan struct{})
	go func() { copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(reapDelay):
	}
	errR.Close()
	outR.Close()
	<-drained
	return res, nil
}

// failure describes why the run failed, or returns nil after a clean exit 0.
func (r *cmdResult) failure(timeout time.Duration) error {
	switch {
	case r.timedOut:
		return fmt.Errorf("exec %s: timed out after %s; killed its process group\n%s", r.argv0, formatDuration(timeout), r.quote())
	case errors.Is(r.canceled, context.DeadlineExceeded):
		return fmt.Errorf("exec %s: timed out after %s (the caller's deadline); killed its process group\n%s", r.argv0, formatDuration(r.elapsed), r.quote())
	case r.canceled != nil:
		return fmt.Errorf("exec %s: canceled after %s (%w); killed its process group\n%s", r.argv0, formatDuration(r.elapsed), r.canceled, r.quote())
	case r.state == nil:
		return fmt.Errorf("exec %s: %v\n%s", r.argv0, r.waitErr, r.quote())
	case !r.state.Success():
		if code := r.state.ExitCode(); code >= 0 {
			return fmt.Errorf("exec %s: exited with status %d\n%s", r.argv0, code, r.quote())
		}
		return fmt.Errorf("exec %s: terminated (%s)\n%s", r.argv0, r.state, r.quote())
	}
	return nil
}

// formatDuration renders whole seconds as "60s" and anything else as
// time.Duration does.
func formatDuration(d time.Duration) string {
	if d >= time.Second && d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.Round(time.Millisecond).String()
}

// quote renders the tail of stderr (or of stdout when stderr is empty).
func (r *cmdResult) quote() string {
	name, t := "stderr", r.stderr
	if t.Total() == 0 && r.stdout.Total() > 0 {
		name, t = "stdout (stderr was empty)", r.stdout
	}
	return t.Quote(name)
}
