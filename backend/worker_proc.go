package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/npuverify/npuverify/safefile"
)

// One worker process: starting it, handing it a case, judging its reply,
// killing it; and the pool of them a Worker keeps.

// maxReplyLine caps a line of a worker's stdout: a reply is a few hundred
// bytes, and a worker that prints a huge line must not make the harness
// hold it.
const maxReplyLine = 64 << 10

// quoteLineBytes is how much of a line of a worker's stdout a message
// quotes.
const quoteLineBytes = 256

// retireWait bounds how long a worker has to exit once its stdin is
// closed before it is killed.
const retireWait = 2 * time.Second

// settleWait bounds how long a failure message waits for what the worker
// wrote to stderr before it replied to come through the pipe: the reply
// and the log travel on different pipes, and the log explains the reply.
const settleWait = 200 * time.Millisecond

// workerSeq numbers the workers of this process, for their
// NPUVERIFY_WORKER_ID.
var workerSeq atomic.Uint64

var errLineTooLong = fmt.Errorf("line longer than %d KiB", maxReplyLine>>10)

// workerLine is one line of a worker's stdout, without its newline, or
// the end of it: err is io.EOF (text is what came after the last newline)
// or another read error, or errLineTooLong (text is the line's start).
type workerLine struct {
	text []byte
	err  error
}

// workerProc is one running worker.
type workerProc struct {
	p        *process
	lines    chan workerLine // from readLines
	stop     chan struct{}   // closed when the worker is killed: readLines returns
	stopOnce sync.Once
	// dead is set once the worker is killed or broken: it serves no more
	// cases. Only the Run holding the worker touches it.
	dead bool
}

// startWorker starts a worker of argv in dir, keeping tail bytes of its
// stderr.
// Its environment marks it as a worker (NPUVERIFY_WORKER=1) and carries
// an id of its own, which is how its orphans are recognised (the exec
// command's NPUVERIFY_CASE plays that part).
func startWorker(argv []string, dir string, tail int) (*workerProc, error) {
	marker := fmt.Sprintf("NPUVERIFY_WORKER_ID=%d-%d", os.Getpid(), workerSeq.Add(1))
	w := &workerProc{lines: make(chan workerLine, 1), stop: make(chan struct{})}
	p, err := startProcess(procConfig{argv: argv, env: []string{"NPUVERIFY_WORKER=1", marker}, marker: marker,
		tail: tail, stdin: true, stdout: w.readLines, dir: dir})
	if err != nil {
		return nil, err
	}
	w.p = p
	return w, nil
}

// who names the worker in messages.
func (w *workerProc) who() string {
	return fmt.Sprintf("worker %s (pid %d)", w.p.argv0, w.p.cmd.Process.Pid)
}

// readLines passes the worker's stdout on, line by line, until its end.
func (w *workerProc) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, maxReplyLine)
	for {
		b, err := br.ReadSlice('\n')
		l := workerLine{text: bytes.Clone(bytes.TrimSuffix(b, []byte("\n")))}
		if errors.Is(err, bufio.ErrBufferFull) {
			err = errLineTooLong
		}
		l.err = err
		select {
		case w.lines <- l:
		case <-w.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// servedCase is a case a worker has replied "ok": true to.
type servedCase struct {
	w     *workerProc
	start time.Time // when the case was handed over
	mark  int64     // the worker's stderr total then
}

// fail describes a failure of the case served, quoting what the worker
// wrote to stderr during it.
func (sc *servedCase) fail(format string, args ...any) error {
	sc.w.settleStderr()
	return fmt.Errorf("%s: %w\n%s", sc.w.who(), fmt.Errorf(format, args...), sc.w.p.stderr.QuoteSince("stderr during the case", sc.mark))
}

// serve hands the case in dir to the worker and waits for its reply, at
// most timeout. It returns the case once the worker replied "ok": true;
// every other outcome is an error, and unless the worker replied "ok":
// false it is killed (w.dead).
func (w *workerProc) serve(ctx context.Context, dir string, timeout time.Duration) (*servedCase, error) {
	sc := &servedCase{w: w, start: time.Now(), mark: w.p.stderr.Total()}
	// A line already waiting was written while the worker had no case: it
	// answers nothing this case asked.
	select {
	case l := <-w.lines:
		if l.err != nil {
			return nil, w.ended(sc, l, "before it was sent the case")
		}
		return nil, w.killed(sc, fmt.Errorf("protocol error: it wrote %s on its stdout before it was sent the case", quoteLine(l.text)))
	default:
	}
	var req bytes.Buffer
	enc := json.NewEncoder(&req)
	enc.SetEscapeHTML(false) // the path as it is: a minimal parser need not decode \u escapes
	if err := enc.Encode(WorkerRequest{Version: WorkerRequestVersion, CaseDir: dir}); err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", w.who(), err)
	}
	w.p.stdin.SetWriteDeadline(sc.start.Add(timeout))
	if _, err := w.p.stdin.Write(req.Bytes()); err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, w.killed(sc, fmt.Errorf("timed out after %s: it does not read its stdin", formatDuration(timeout)))
		}
		// Its stdin is closed: it has exited, or is about to.
		return nil, w.ended(sc, workerLine{err: err}, "before it was sent the case")
	}
	timer := time.NewTimer(timeout - time.Since(sc.start))
	defer timer.Stop()
	select {
	case l := <-w.lines:
		return w.judge(sc, l, dir)
	case <-w.p.done:
		// Its reply, if it wrote one, may still be in the pipe.
		select {
		case l := <-w.lines:
			return w.judge(sc, l, dir)
		case <-time.After(reapDelay):
			return nil, w.ended(sc, workerLine{err: io.EOF}, "before replying")
		}
	case <-timer.C:
		return nil, w.killed(sc, fmt.Errorf("timed out after %s without replying", formatDuration(timeout)))
	case <-ctx.Done():
		cause := context.Cause(ctx)
		if errors.Is(cause, context.DeadlineExceeded) {
			return nil, w.killed(sc, fmt.Errorf("timed out after %s (the caller's deadline) without replying", formatDuration(time.Since(sc.start))))
		}
		return nil, w.killed(sc, fmt.Errorf("canceled after %s (%w)", formatDuration(time.Since(sc.start)), cause))
	}
}

// judge holds line l of the worker's stdout to the protocol as the reply
// to the case in dir.
func (w *workerProc) judge(sc *servedCase, l workerLine, dir string) (*servedCase, error) {
	switch {
	case errors.Is(l.err, errLineTooLong):
		head := strconv.Quote(string(l.text[:min(len(l.text), quoteLineBytes)]))
		return nil, w.killed(sc, fmt.Errorf("protocol error: a line of its stdout is longer than %d KiB: %s… (the first %d bytes shown)", maxReplyLine>>10, head, quoteLineBytes))
	case l.err != nil:
		return nil, w.ended(sc, l, "before replying")
	}
	r, err := parseReply(l.text)
	switch {
	case err != nil:
		return nil, w.killed(sc, fmt.Errorf("protocol error: its stdout line %s is not a reply (%v); stdout carries replies only, logs go to stderr", quoteLine(l.text), err))
	case r.CaseDir != dir:
		return nil, w.killed(sc, fmt.Errorf("protocol error: its reply %s is for another case (want case_dir %s)", quoteLine(l.text), strconv.Quote(dir)))
	case !r.OK:
		return nil, sc.fail("replied \"ok\": false:%s", quoteText(r.Error))
	}
	return sc, nil
}

// parseReply decodes one reply line, which must be a JSON object with
// "case_dir" and "ok".
func parseReply(line []byte) (WorkerReply, error) {
	var r struct {
		CaseDir *string `json:"case_dir"`
		OK      *bool   `json:"ok"`
		Error   string  `json:"error"`
	}
	if err := json.Unmarshal(line, &r); err != nil {
		return WorkerReply{}, err
	}
	switch {
	case r.CaseDir == nil:
		return WorkerReply{}, errors.New(`no "case_dir"`)
	case r.OK == nil:
		return WorkerReply{}, errors.New(`no "ok"`)
	}
	return WorkerReply{CaseDir: *r.CaseDir, OK: *r.OK, Error: r.Error}, nil
}

// ended reports a worker whose stdout or stdin closed (l.err) when, from
// how it exited: it is given a moment to exit by itself so that its own
// exit status is what is reported, then killed with what it left.
func (w *workerProc) ended(sc *servedCase, l workerLine, when string) error {
	what := "closed its stdout (EOF)"
	switch {
	case len(l.text) > 0:
		what = fmt.Sprintf("wrote %s with no newline and closed its stdout (EOF)", quoteLine(l.text))
	case !errors.Is(l.err, io.EOF):
		what = fmt.Sprintf("could not be reached (%v)", l.err)
	}
	select {
	case <-w.p.done:
		return w.killed(sc, fmt.Errorf("%s %s: it %s", what, when, w.exitStatus()))
	case <-time.After(reapDelay):
		return w.killed(sc, fmt.Errorf("%s %s, and did not exit", what, when))
	}
}

// killed kills the worker with its processes and describes the case's
// failure, err, quoting the whole of its stderr during the case.
func (w *workerProc) killed(sc *servedCase, err error) error {
	w.kill()
	return fmt.Errorf("%s: %w; killed it with its processes (a fresh worker serves the next case)\n%s",
		w.who(), err, w.p.stderr.QuoteSince("stderr during the case", sc.mark))
}

// exitStatus describes how the worker ended, once it has.
func (w *workerProc) exitStatus() string {
	st := w.p.cmd.ProcessState
	switch {
	case st == nil:
		return fmt.Sprintf("ended (%v)", w.p.waitErr)
	case st.ExitCode() >= 0:
		return fmt.Sprintf("exited with status %d", st.ExitCode())
	}
	return fmt.Sprintf("was terminated (%s)", st)
}

// kill kills the worker with everything it started, waits for it, and
// releases its pipes. It may be called more than once.
func (w *workerProc) kill() {
	w.dead = true
	w.stopOnce.Do(func() {
		close(w.stop)
		w.p.kill()
		<-w.p.done
		w.p.finish()
	})
}

// retire closes the worker's stdin, which tells it to exit, and kills
// what is left of it after it exits or after retireWait. The error says
// how it failed to exit 0.
func (w *workerProc) retire() error {
	w.p.stdin.Close()
	var err error
	select {
	case <-w.p.done:
		if st := w.p.cmd.ProcessState; st == nil || !st.Success() {
			err = fmt.Errorf("%s: %s after its stdin was closed", w.who(), w.exitStatus())
		}
	case <-time.After(retireWait):
		err = fmt.Errorf("%s: still running %s after its stdin was closed; killed it", w.who(), formatDuration(retireWait))
	}
	w.kill()
	return err
}

// settleStderr waits, at most settleWait, until nothing the worker wrote
// to stderr is left in the pipe, for a quote of it to be whole.
func (w *workerProc) settleStderr() {
	deadline := time.Now().Add(settleWait)
	last := w.p.stderr.Total()
	for {
		time.Sleep(time.Millisecond)
		now := w.p.stderr.Total()
		if now == last && pipeBuffered(w.p.errR) == 0 || time.Now().After(deadline) {
			return
		}
		last = now
	}
}

// quoteLine renders a line of a worker's stdout for a message: Go-quoted
// (no control character gets through) and cut at quoteLineBytes.
func quoteLine(b []byte) string {
	if len(b) <= quoteLineBytes {
		return strconv.Quote(string(b))
	}
	return fmt.Sprintf("%s… (%d bytes, the first %d shown)", strconv.Quote(string(b[:quoteLineBytes])), len(b), quoteLineBytes)
}

// quoteText renders a worker's error text to follow a colon: at most
// quoteBytes of it, every control character escaped
// (safefile.EscapeLine), a text of several lines as a quoted block.
func quoteText(s string) string {
	if s == "" {
		return " (no error text)"
	}
	n := len(s)
	if n > quoteBytes {
		s = s[:quoteBytes]
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = safefile.EscapeLine(l)
	}
	if n > quoteBytes {
		lines[len(lines)-1] += fmt.Sprintf("… (%d bytes, the first %d shown)", n, quoteBytes)
	}
	if len(lines) == 1 {
		return " " + lines[0]
	}
	return "\n  | " + strings.Join(lines, "\n  | ")
}

// workerPool is the workers of a Worker and of its WithNumerics copies.
type workerPool struct {
	argv  []string
	dir   string // ExecOptions.Dir
	tail  int
	live  *liveRuns
	slots chan struct{} // WorkerOptions.Slots tokens; nil when unbounded

	started atomic.Int64 // workers ever started, for the tests

	mu     sync.Mutex
	closed bool
	idle   []*workerProc // the most recently used last
}

// get takes an idle worker, or starts one, for a Run; put gives it back.
func (pl *workerPool) get(ctx context.Context) (*workerProc, error) {
	if pl.slots != nil {
		select {
		case pl.slots <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("not started: waiting for a free worker: %w", context.Cause(ctx))
		}
	}
	for {
		pl.mu.Lock()
		if pl.closed {
			pl.mu.Unlock()
			pl.release()
			return nil, fmt.Errorf("not started: %w", ErrClosed)
		}
		n := len(pl.idle)
		if n == 0 {
			pl.mu.Unlock()
			break
		}
		w := pl.idle[n-1] // the warmest
		pl.idle = pl.idle[:n-1]
		pl.mu.Unlock()
		select {
		case <-w.p.done:
			w.kill() // it exited between cases: no case of its to fail
		default:
			return w, nil
		}
	}
	w, err := startWorker(pl.argv, pl.dir, pl.tail)
	if err != nil {
		pl.release()
		return nil, err
	}
	pl.started.Add(1)
	return w, nil
}

// put makes w idle again, unless it is dead, or retires it once the pool
// is closed (Close reports only the workers it finds idle).
func (pl *workerPool) put(w *workerProc) {
	defer pl.release()
	if w.dead {
		return
	}
	pl.mu.Lock()
	if !pl.closed {
		pl.idle = append(pl.idle, w)
		pl.mu.Unlock()
		return
	}
	pl.mu.Unlock()
	w.retire()
}

// release frees the slot get took.
func (pl *workerPool) release() {
	if pl.slots != nil {
		<-pl.slots
	}
}

// close makes every later get fail and returns the idle workers, for the
// caller to retire.
func (pl *workerPool) close() []*workerProc {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.closed = true
	idle := pl.idle
	pl.idle = nil
	return idle
}
