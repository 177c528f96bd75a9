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
	"strings"
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
	marker := "NPUVERIFY_CASE=" + filepath.Join(dir, "case.json")
	p, err := startProcess(procConfig{
		argv:   append(slices.Clone(e.argv), dir),
		env:    []string{marker},
		marker: marker,
		tail:   e.opt.MaxStderr,
		dir:    e.opt.Dir,
	})
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	res := &cmdResult{argv0: p.argv0, stderr: p.stderr, stdout: p.stdout, start: p.start}
	timer := time.NewTimer(e.opt.Timeout)
	defer timer.Stop()
	select {
	case <-p.done:
	case <-timer.C:
		res.timedOut = true
		p.kill()
		<-p.done
	case <-ctx.Done():
		res.canceled = context.Cause(ctx)
		p.kill()
		<-p.done
	}
	res.elapsed = time.Since(p.start)
	res.state, res.waitErr = p.cmd.ProcessState, p.waitErr
	p.finish()
	return res, nil
}

// procConfig says how to start a process under containment.
type procConfig struct {
	argv []string
	// dir is the working directory ("" = the harness's).
	dir string
	// env is added to the harness's environment; marker is the entry of
	// it that identifies the process's orphans (contain_linux.go), unique
	// to this process.
	env    []string
	marker string
	// tail is how many bytes of stderr (and of stdout, when it is kept)
	// are kept.
	tail int
	// stdin gives the process a pipe for its standard input (else
	// /dev/null); process.stdin is its write end.
	stdin bool
	// stdout, when set, reads the process's standard output (in a
	// goroutine of its own, until EOF or an error) instead of keeping its
	// tail. It must return when its reader fails: finish closes it.
	stdout func(io.Reader)
}

// process is a started command: the leader of a process group of its own,
// its descendants followed (track), its standard error (and output,
// unless procConfig.stdout reads it) kept as bounded tails. Exec runs one
// per case; Worker keeps one per job slot across cases.
type process struct {
	cmd    *exec.Cmd
	argv0  string // quoted, for messages
	start  time.Time
	stderr *tailBuffer
	stdout *tailBuffer // nil when procConfig.stdout reads it
	stdin  *os.File    // the write end of its stdin, when procConfig.stdin
	errR   *os.File    // the read end of its stderr
	tr     *tracker

	// done is closed once the process has exited and is reaped; waitErr
	// is then cmd.Wait's error.
	done    chan struct{}
	waitErr error

	mu     sync.Mutex
	reaped bool

	copies sync.WaitGroup
	pipes  []*os.File // the harness's read ends, closed by finish
}

// startProcess starts c.argv under containment and starts following it.
// The caller must wait for done (killing it first, or not) and then call
// finish.
func startProcess(c procConfig) (*process, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Env = append(os.Environ(), c.env...)
	cmd.Dir = c.dir
	setProcessGroup(cmd)
	p := &process{cmd: cmd, argv0: safefile.Quote(c.argv[0]), stderr: newTailBuffer(c.tail), done: make(chan struct{})}

	// Own pipes rather than io.Writers on the Cmd: exec's copying goroutines
	// would make Wait block until every process holding the pipes (e.g. a
	// background child) exits; here the group is killed first.
	var theirs []*os.File
	closeAll := func() {
		for _, f := range append(theirs, p.pipes...) {
			f.Close()
		}
		if p.stdin != nil {
			p.stdin.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: %w", p.argv0, err)
		}
		return r, w, nil
	}
	errR, errW, err := pipe()
	if err != nil {
		return nil, err
	}
	p.errR, p.pipes, theirs = errR, append(p.pipes, errR), append(theirs, errW)
	outR, outW, err := pipe()
	if err != nil {
		return nil, err
	}
	p.pipes, theirs = append(p.pipes, outR), append(theirs, outW)
	cmd.Stderr, cmd.Stdout = errW, outW
	if c.stdin {
		inR, inW, err := pipe()
		if err != nil {
			return nil, err
		}
		p.stdin, theirs = inW, append(theirs, inR)
		cmd.Stdin = inR
	}
	p.start = time.Now()
	err = cmd.Start()
	for _, f := range theirs {
		f.Close()
	}
	theirs = nil
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("starting command %q: %w%s", c.argv[0], err, startHint(c.argv[0], err))
	}
	// Follow the command's descendants from now on; whatever of them is
	// left is killed when it exits, is killed, or is finished.
	p.tr = track(cmd.Process.Pid, c.marker)
	p.read(func() { io.Copy(p.stderr, errR) }) // ends at EOF, or with an error when finish closes errR
	if c.stdout != nil {
		p.read(func() { c.stdout(outR) })
	} else {
		p.stdout = newTailBuffer(c.tail)
		p.read(func() { io.Copy(p.stdout, outR) })
	}
	go func() {
		p.waitErr = waitAndReap(cmd, func() {
			// The leader has exited but is not reaped yet: whatever it left
			// running in its group goes too (it could still write into the
			// case directory, and it holds the pipes).
			p.mu.Lock()
			defer p.mu.Unlock()
			p.tr.kill(func() { killProcessGroup(cmd.Process) })
			p.reaped = true
		})
		close(p.done)
	}()
	return p, nil
}

// read runs f, a reader of one of the process's pipes, in a goroutine
// that finish waits for.
func (p *process) read(f func()) {
	p.copies.Add(1)
	go func() {
		defer p.copies.Done()
		f()
	}()
}

// kill kills the process with everything it started (SIGKILL); done is
// closed soon after. It does nothing once the process is reaped.
func (p *process) kill() {
	// The group may be signalled only while its leader is unreaped: after
	// that its id can be reused by an unrelated process.
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		p.tr.kill(func() { killProcessGroup(p.cmd.Process) })
	}
}

// finish, once done is closed, waits a little for the readers of stderr
// and stdout to reach EOF (a process that escaped the group may hold the
// pipes open), closes the pipes and stops following the process.
func (p *process) finish() {
	drained := make(chan struct{})
	go func() { p.copies.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(reapDelay):
	}
	for _, f := range p.pipes {
		f.Close()
	}
	if p.stdin != nil {
		p.stdin.Close()
	}
	<-drained
	p.tr.stop()
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

// startHint says what a new user needs to know when a command does not
// start, beyond the system's words: a directory reports "permission
// denied", and a bare name that is a file in the working directory is
// looked up in $PATH only (as a shell does), so it needs a "./".
func startHint(argv0 string, err error) string {
	if fi, serr := os.Stat(argv0); serr == nil && fi.IsDir() {
		return " (it is a directory, not an executable file)"
	}
	if errors.Is(err, exec.ErrNotFound) && !strings.ContainsRune(argv0, '/') {
		if fi, serr := os.Stat(argv0); serr == nil && !fi.IsDir() {
			return fmt.Sprintf(" (a bare name is looked up in $PATH only; write %s for the file in the current directory)", safefile.Quote("./"+argv0))
		}
		return " (a bare name is looked up in $PATH only; give a path for a command that is not there)"
	}
	return ""
}
