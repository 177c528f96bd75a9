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

// Worker is the backend that keeps its command running and hands it one
// case after another, following the worker protocol (docs/exec-backend.md,
// "Worker mode"): a kernel driver that pays for its start once (a Python
// interpreter and its imports, a device context) rather than once per case.
//
//  1. A worker is the command line, split as for Exec, started with no
//     argument added and with NPUVERIFY_WORKER=1 (and NPUVERIFY_WORKER_ID,
//     unique to it) in its environment, in a process group of its own and
//     under the containment of Exec: its descendants are followed while it
//     lives and killed with it. Workers are started when a Run needs one
//     and none is idle, so there are as many as Runs ever ran at once
//     (WorkerOptions.Slots caps them), and each is reused.
//  2. For each case Run lays out the case directory D exactly as Exec does
//     and writes one line to the worker's stdin: {"version": 1,
//     "case_dir": "<D>"} (WorkerRequest).
//  3. The worker writes D/out/… as an exec command would and answers with
//     one line on its stdout: {"case_dir": "<D>", "ok": true}, or "ok":
//     false with an "error" text (WorkerReply).
//  4. Run reads the outputs, timing.json and the inputs back as Exec does
//     (element caps, inputs re-hashed: an *InputsModifiedError comes with
//     the outputs), and removes D.
//
// A worker that does not reply within ExecOptions.Timeout, exits, closes
// its stdout, writes a line that is not a JSON reply, or replies for
// another case fails the case as a backend error naming what it wrote
// (quoted, capped), and is killed with its whole process tree; the next
// case gets a fresh worker. A reply "ok": false fails the case with the
// worker's error text and keeps the worker. Every failure quotes the tail
// of what the worker wrote to stderr during the case, escaped as Exec
// escapes it. Close closes the stdin of idle workers, which lets them
// exit 0, and kills whatever is left.
//
// Worker is safe for concurrent use: each Run has its own directory and,
// while it runs, a worker of its own.
type Worker struct {
	cmdline string
	argv    []string
	opt     WorkerOptions
	pool    *workerPool // shared by the copies WithNumerics makes
}

// WorkerOptions configure a Worker backend. The zero value is usable.
type WorkerOptions struct {
	// ExecOptions are the options of a case, as for Exec: Timeout bounds
	// a case from the moment it is handed to a worker until its outputs
	// are read; MaxStderr is how much of a worker's stderr is kept (the
	// tail, across the cases it serves); case.json carries Numerics, so
	// the copies WithNumerics makes share the workers.
	ExecOptions
	// Slots caps the number of workers, and so the cases run at once:
	// further Runs wait for a worker to be free. 0 starts one per Run
	// running at once, as many as the caller's concurrency.
	Slots int
}

// WorkerRequestVersion is the version of the request line a worker is
// sent (WorkerRequest.Version).
const WorkerRequestVersion = 1

// WorkerRequest is the line a worker reads from its stdin for each case.
type WorkerRequest struct {
	Version int    `json:"version"`
	CaseDir string `json:"case_dir"` // absolute; D/case.json describes the case
}

// WorkerReply is the line a worker answers a WorkerRequest with on its
// stdout. CaseDir is the request's; Error says why, when OK is false.
// Other keys are ignored.
type WorkerReply struct {
	CaseDir string `json:"case_dir"`
	OK      bool   `json:"ok"`
	Error   string `json:"error,omitempty"`
}

// NewWorker returns a backend that serves cases to workers running
// cmdline. cmdline is split by SplitCommandLine; an empty or unbalanced
// command line is an error wrapping ErrCommandLine. No worker starts
// here: whether the program exists is found out by Run (a backend
// failure).
func NewWorker(cmdline string, opt WorkerOptions) (*Worker, error) {
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
	opt.Slots = max(opt.Slots, 0)
	enableSubreaper()
	pool := &workerPool{argv: argv, dir: opt.Dir, tail: opt.MaxStderr,
		live: &liveRuns{cancel: map[int]context.CancelCauseFunc{}}}
	if opt.Slots > 0 {
		pool.slots = make(chan struct{}, opt.Slots)
	}
	return &Worker{cmdline: cmdline, argv: argv, opt: opt, pool: pool}, nil
}

// Name returns "worker:" followed by the command line as given.
func (w *Worker) Name() string { return "worker:" + w.cmdline }

// Args returns the command's words as SplitCommandLine split them.
func (w *Worker) Args() []string { return slices.Clone(w.argv) }

// Options returns the options in effect (defaults filled in).
func (w *Worker) Options() WorkerOptions { return w.opt }

// Numerics returns the numerics profile written to every case.json.
func (w *Worker) Numerics() tensor.Numerics { return w.opt.Numerics }

// WithNumerics returns a copy of w that writes num to case.json. The copy
// shares w's workers (the profile travels in case.json) and is closed
// with it.
func (w *Worker) WithNumerics(num tensor.Numerics) Backend {
	c := *w
	c.opt.Numerics = num
	return &c
}

var _ InputGuard = (*Worker)(nil)

// GuardsInputs reports true: the kernel reads its inputs from files, and
// Run reports a file it wrote into as an *InputsModifiedError.
func (w *Worker) GuardsInputs() bool { return true }

// Close ends the Runs in progress (their workers are killed with
// everything they started, their case directories removed unless
// ExecOptions.Keep), then closes the stdin of every idle worker, waits a
// little for it to exit, and kills what is left of it. Every later Run
// fails with ErrClosed. The error lists the workers that did not exit 0
// when their stdin was closed. The CLI calls Close when it is done or
// interrupted. It is safe to call more than once and concurrently with
// Run.
func (w *Worker) Close() error {
	idle := w.pool.close()
	w.pool.live.close()
	errs := make([]error, len(idle))
	var wg sync.WaitGroup
	for i, wp := range idle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = wp.retire()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Run runs one case on a worker; see Worker.
func (w *Worker) Run(ctx context.Context, opName string, p ops.Params, in map[string]*tensor.Tensor) (out map[string]*tensor.Tensor, meas *Measurement, err error) {
	argv0 := safefile.Quote(w.argv[0])
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("worker %s: not started: %w", argv0, err)
	}
	ctx, done, err := w.pool.live.start(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("worker %s: not started: %w", argv0, err)
	}
	defer done()
	cd, err := layoutCase(opName, p, in, w.opt.ExecOptions)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if cd.close(&err) { // a leftover directory fails the case, whatever the outputs
			out, meas = nil, nil
		}
	}()
	wp, err := w.pool.get(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("worker %s: %w", argv0, err)
	}
	defer w.pool.put(wp)
	sc, err := wp.serve(ctx, cd.path, w.opt.Timeout)
	if err != nil {
		return nil, nil, err
	}
	deadline := readDeadline(ctx, sc.start, w.opt.Timeout)
	out, meas, modified, err := cd.collect(ctx, deadline)
	if err != nil {
		if time.Now().After(deadline) {
			err = fmt.Errorf("timed out after %s reading the outputs: %w", formatDuration(w.opt.Timeout), err)
		}
		return nil, nil, sc.fail("%w", err)
	}
	if modified != nil {
		return out, meas, fmt.Errorf("%s: %w", wp.who(), modified)
	}
	return out, meas, nil
}
