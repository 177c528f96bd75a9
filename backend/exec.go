package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/safefile"
	"github.com/npuverify/npuverify/tensor"
)

// Exec is the backend that runs each case through an external command,
// following the exec backend protocol (docs/exec-backend.md):
//
//  1. Run makes a fresh case directory D (under ExecOptions.WorkDir) and
//     writes D/case.json (ExecCaseFile) and every input as D/<name>.npy
//     (fp16 as '<f2', bf16 as its '<u2' bit patterns); it also creates the
//     empty directory D/out.
//  2. It runs the command with D (an absolute path) appended as the last
//     argument and NPUVERIFY_CASE=D/case.json added to the environment, in
//     the caller's working directory, stdin from /dev/null, in a process
//     group of its own.
//  3. The command writes D/out/<output>.npy for every output of the op's
//     contract, in the contract's dtype and shape, optionally
//     D/out/timing.json {"kernel_ns": [...]}, and exits 0.
//  4. Run reads the outputs back and removes D (unless ExecOptions.Keep).
//
// On timeout or cancellation the whole process group is killed (SIGKILL);
// so are processes the command leaves behind in its group when it exits.
// On Linux the harness is also a child subreaper (PR_SET_CHILD_SUBREAPER):
// the command's descendants are followed while it runs (by parent, by
// process group, and by the NPUVERIFY_CASE in their environment once they
// are orphaned and adopted by the harness), so those that left the group
// with setsid are killed and reaped too (contain_linux.go). Close kills
// every running command the same way and removes its case directory.
// Outputs are read within the same time limit as the command.
// A non-zero exit, a timeout, a missing output, an output of the wrong
// dtype or shape, an output that is not a regular file or not a valid
// .npy file, or a malformed timing.json is an error naming the command
// and the output and quoting the tail of the command's stderr (its stdout
// when stderr is empty), every control character of it escaped
// (safefile.EscapeLine) so that the command cannot forge a line of the
// harness. Outputs are read with an element cap of the
// contract's size, so a hostile header cannot make Run allocate more.
// Standard error and output are kept only as a bounded tail
// (ExecOptions.MaxStderr), however much the command writes.
//
// The command line is split into words like a shell would split it
// (SplitCommandLine), but no shell runs it: there is no variable, glob or
// tilde expansion, and no redirection. To use shell features, run a shell:
// exec:'sh -c "./kernel --fast \"$0\""' (the case directory is then $0).
//
// Exec is safe for concurrent use: every Run has its own directory.
type Exec struct {
	cmdline string
	argv    []string
	opt     ExecOptions
	live    *liveRuns // shared by the copies WithNumerics makes
}

// ExecOptions configure an Exec backend. The zero value is usable.
type ExecOptions struct {
	// Timeout bounds each case, from start to exit (default 60s).
	Timeout time.Duration
	// WorkDir is the parent directory of the case directories ("" = the
	// system's temporary directory).
	WorkDir string
	// Dir is the command's working directory ("" = the harness's own):
	// where the user stands, so that relative paths in the command line
	// mean what they mean in the user's shell when the harness runs
	// elsewhere (go test runs the suites in their package directory).
	Dir string
	// Keep leaves each case directory in place after Run (for debugging);
	// errors then name it.
	Keep bool
	// Numerics is the numerics profile written to case.json; the command is
	// expected to follow it when it converts results to storage formats.
	Numerics tensor.Numerics
	// MaxStderr is how many bytes of the command's standard error (and,
	// separately, standard output) are kept: the last MaxStderr bytes
	// (default 64 KiB).
	MaxStderr int
}

// DefaultExecTimeout is the per-case timeout when ExecOptions.Timeout is 0.
const DefaultExecTimeout = 60 * time.Second

// DefaultExecMaxStderr is the stderr tail kept when ExecOptions.MaxStderr is 0.
const DefaultExecMaxStderr = 64 << 10

// ExecCaseVersion is the version of the case.json schema Exec writes.
const ExecCaseVersion = 1

// Limits on what error messages quote of the command's stderr.
const (
	quoteLines = 20
	quoteBytes = 4 << 10
)

// reapDelay bounds how long Run waits for the command's stderr and stdout
// to reach EOF after the process group is gone (a process that escaped the
// group may hold them open).
const reapDelay = 2 * time.Second

// maxTimingJSON caps the size of out/timing.json.
const maxTimingJSON = 1 << 20

// ErrCommandLine is wrapped by NewExec's errors about the command line
// (empty, unbalanced quotes, trailing backslash): a usage error, not a
// backend failure.
var ErrCommandLine = errors.New("bad exec command line")

// NewExec returns a backend that runs cmdline for each case. cmdline is
// split by SplitCommandLine; an empty or unbalanced command line is an
// error wrapping ErrCommandLine. Whether the program exists is found out
// by Run (a backend failure), not here.
func NewExec(cmdline string, opt ExecOptions) (*Exec, error) {
	argv, err := SplitCommandLine(cmdline)
	if err != nil {
		return nil, err
	}
	if opt.Timeout <= 0 {
		opt.Timeout = DefaultExecTimeout
	}
	if opt.MaxStderr <= 0 {
		opt.MaxStderr = DefaultExecMaxStderr
	}
	enableSubreaper()
	return &Exec{cmdline: cmdline, argv: argv, opt: opt, live: &liveRuns{cancel: map[int]context.CancelCauseFunc{}}}, nil
}

// Name returns "exec:" followed by the command line as given.
func (e *Exec) Name() string { return "exec:" + e.cmdline }

// Args returns the command's words as SplitCommandLine split them.
func (e *Exec) Args() []string { return slices.Clone(e.argv) }

// Options returns the options in effect (defaults filled in).
func (e *Exec) Options() ExecOptions { return e.opt }

// Numerics returns the numerics profile written to every case.json.
func (e *Exec) Numerics() tensor.Numerics { return e.opt.Numerics }

// WithNumerics returns a copy of e that writes num to case.json.
func (e *Exec) WithNumerics(num tensor.Numerics) Backend {
	c := *e
	c.opt.Numerics = num
	return &c
}

// ErrClosed is the cause of the cancellation of the runs Close ends (of an
// Exec or a Worker), and the error of a Run started after Close.
var ErrClosed = errors.New("backend closed")

// liveRuns are the Runs in progress, for Close.
type liveRuns struct {
	mu     sync.Mutex
	closed bool
	next   int
	cancel map[int]context.CancelCauseFunc
	wg     sync.WaitGroup
}

// start registers a run; the returned context ends when Close is called.
func (l *liveRuns) start(ctx context.Context) (context.Context, func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, nil, ErrClosed
	}
	ctx, cancel := context.WithCancelCause(ctx)
	id := l.next
	l.next++
	l.cancel[id] = cancel
	l.wg.Add(1)
	return ctx, func() {
		l.mu.Lock()
		delete(l.cancel, id)
		l.mu.Unlock()
		cancel(nil)
		l.wg.Done()
	}, nil
}

// Close kills every command running for e (or a copy of it made by
// WithNumerics) with everything it started, waits until their Runs have
// returned and removed their case directories (unless ExecOptions.Keep),
// and makes every later Run fail with ErrClosed. The CLI calls it when it
// is interrupted. It is safe to call more than once and concurrently with
// Run.
func (e *Exec) Close() error {
	e.live.close()
	return nil
}

// close cancels every run with ErrClosed, waits until they have returned,
// and makes every later start fail with ErrClosed.
func (l *liveRuns) close() {
	l.mu.Lock()
	l.closed = true
	for _, cancel := range l.cancel {
		cancel(ErrClosed)
	}
	l.mu.Unlock()
	l.wg.Wait()
}

// Run runs one case through the command; see Exec.
func (e *Exec) Run(ctx context.Context, opName string, p ops.Params, in map[string]*tensor.Tensor) (out map[string]*tensor.Tensor, meas *Measurement, err error) {
	argv0 := safefile.Quote(e.argv[0])
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("exec %s: not started: %w", argv0, err)
	}
	ctx, done, err := e.live.start(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("exec %s: not started: %w", argv0, err)
	}
	defer done()
	cd, err := layoutCase(opName, p, in, e.opt)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if cd.close(&err) { // a leftover directory fails the case, whatever the outputs
			out, meas = nil, nil
		}
	}()
	res, err := e.command(ctx, cd.path)
	if err != nil {
		return nil, nil, err
	}
	if err := res.failure(e.opt.Timeout); err != nil {
		return nil, nil, err
	}
	deadline := readDeadline(ctx, res.start, e.opt.Timeout)
	out, meas, modified, err := cd.collect(ctx, deadline)
	if err != nil {
		if time.Now().After(deadline) {
			err = fmt.Errorf("timed out after %s reading the outputs: %w", formatDuration(e.opt.Timeout), err)
		}
		return nil, nil, fmt.Errorf("exec %s: %w\n%s", argv0, err, res.quote())
	}
	if modified != nil {
		return out, meas, fmt.Errorf("exec %s: %w", argv0, modified)
	}
	return out, meas, nil
}

var _ InputGuard = (*Exec)(nil)

// GuardsInputs reports true: the kernel reads its inputs from files, and
// Run reports a file it wrote into as an *InputsModifiedError.
func (e *Exec) GuardsInputs() bool { return true }
