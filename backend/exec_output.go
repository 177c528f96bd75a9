package backend

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/npuverify/npuverify/safefile"
	"github.com/npuverify/npuverify/tensor"
)

// Output collection: the outputs, timing.json and the tails of stderr
// and stdout.

// ExecTiming is the content of the optional D/out/timing.json: the
// command's own measurements of the kernel, in nanoseconds, one per run.
type ExecTiming struct {
	KernelNS []float64 `json:"kernel_ns"`
}

// readOutput reads one output, holding it to its dtype and shape, by the
// deadline. The file is opened without following a link or blocking on a
// FIFO, and only if it is a regular file no larger than the contract's
// size allows (tensor.ReadNpyFile).
func readOutput(dir string, o ExecTensor, deadline time.Time) (*tensor.Tensor, error) {
	path := filepath.Join(dir, filepath.FromSlash(o.File))
	want := fmt.Sprintf("want %s%v", o.DType, o.Shape)
	n, err := tensor.NumElements(o.Shape)
	if err != nil {
		return nil, fmt.Errorf("output %q: %w", o.Name, err)
	}
	// The cap is the contract's size: nothing larger is ever allocated.
	t, err := tensor.ReadNpyFile(path, o.DType, tensor.ReadOptions{MaxElements: max(n, 1), Deadline: deadline})
	var pe *fs.PathError
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("output %q: %s was not written (%s)", o.Name, o.File, want)
	case errors.Is(err, safefile.ErrNotRegular) && errors.As(err, &pe):
		what := strings.TrimSuffix(pe.Err.Error(), ", "+safefile.ErrNotRegular.Error())
		if what == "is a directory" {
			return nil, fmt.Errorf("output %q: %s is a directory, not a .npy file (%s)", o.Name, o.File, want)
		}
		return nil, fmt.Errorf("output %q: %s is not a regular file (it %s; %s)", o.Name, o.File, what, want)
	case errors.As(err, &pe):
		return nil, fmt.Errorf("output %q: %s: %w (%s)", o.Name, o.File, pe.Err, want)
	default:
		// The reader names the file by its absolute path in the case
		// directory, a temporary name gone by the time anyone reads the
		// message; every other message names it as the protocol does.
		return nil, &namedErr{fmt.Sprintf("output %q: %s (%s)", o.Name, strings.ReplaceAll(err.Error(), path, o.File), want), err}
	}
	if t.DType != o.DType {
		return nil, fmt.Errorf("output %q: %s has dtype %s, %s", o.Name, o.File, t.DType, want)
	}
	if !t.SameShape(o.Shape) {
		return nil, fmt.Errorf("output %q: %s has shape %v, %s", o.Name, o.File, t.Shape, want)
	}
	return t, nil
}

// readTiming reads the optional timing.json: a nil measurement when it is
// absent or lists no time; otherwise its kernel times in seconds, in the
// order the command listed them. Exec models nothing, so that is all the
// Measurement holds.
func readTiming(path string, deadline time.Time) (*Measurement, error) {
	if time.Now().After(deadline) {
		return nil, errors.New("out/timing.json: not read: the deadline has passed")
	}
	b, err := safefile.ReadFile(path, maxTimingJSON)
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, safefile.ErrNotRegular) && errors.As(err, &pe):
		return nil, fmt.Errorf("out/timing.json: not a regular file (it %s)", strings.TrimSuffix(pe.Err.Error(), ", "+safefile.ErrNotRegular.Error()))
	case errors.As(err, &pe):
		return nil, fmt.Errorf("out/timing.json: %w", pe.Err)
	case err != nil:
		return nil, fmt.Errorf("out/timing.json: %w", err)
	}
	var tm ExecTiming
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tm); err != nil {
		return nil, fmt.Errorf("out/timing.json: %w (want {\"kernel_ns\": [...]})", err)
	}
	if len(tm.KernelNS) == 0 {
		return nil, nil
	}
	for i, v := range tm.KernelNS {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("out/timing.json: kernel_ns[%d] = %v is not a duration", i, v)
		}
	}
	secs := make([]float64, len(tm.KernelNS))
	for i, v := range tm.KernelNS {
		secs[i] = v / 1e9
	}
	return &Measurement{KernelSeconds: secs}, nil
}

// tailBuffer keeps the last max bytes written to it and counts them all.
// Memory stays below 2·max however much is written.
type tailBuffer struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

// Write keeps the tail of p; it never fails.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if len(t.buf)+len(p) > 2*t.max {
		keep := t.max - len(p)
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keep:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Total is the number of bytes ever written.
func (t *tailBuffer) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// Tail returns a copy of the last (at most max) bytes written.
func (t *tailBuffer) Tail() []byte {
	b, _ := t.snapshot()
	return b
}

// snapshot returns Tail and Total as of one moment.
func (t *tailBuffer) snapshot() ([]byte, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return slices.Clone(b), t.total
}

// Quote renders the last quoteLines lines (at most quoteBytes bytes) of
// the tail, each line prefixed by "  | " and with its control characters
// escaped (a \r or an escape sequence cannot move back to the start of the
// line or rewrite the terminal, so no quoted line can pass for one of the
// harness), under a heading that says how much was written and how much
// is shown.
func (t *tailBuffer) Quote(name string) string { return t.QuoteSince(name, 0) }

// QuoteSince is Quote of what was written after the first from bytes (a
// Total taken earlier): a worker's stderr during one case, not what it
// wrote for the cases before.
func (t *tailBuffer) QuoteSince(name string, from int64) string {
	tail, all := t.snapshot()
	total := all - from
	if total <= 0 {
		return name + ": (empty)"
	}
	if int64(len(tail)) > total {
		tail = tail[int64(len(tail))-total:]
	}
	b := bytes.TrimRight(tail, "\n")
	trailing := len(tail) - len(b)
	lines := 0
	cut := 0
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			lines++
			if lines == quoteLines {
				cut = i + 1
				break
			}
		}
	}
	b = b[cut:]
	if len(b) > quoteBytes {
		b = b[len(b)-quoteBytes:]
	}
	shown := strings.ToValidUTF8(string(b), "\uFFFD")
	head := fmt.Sprintf("%s (%d bytes):", name, total)
	if int64(len(b)+trailing) < total {
		head = fmt.Sprintf("%s (%d bytes, last %d shown):", name, total, len(b))
	}
	quoted := strings.Split(shown, "\n")
	for i, l := range quoted {
		quoted[i] = safefile.EscapeLine(l)
	}
	return head + "\n  | " + strings.Join(quoted, "\n  | ")
}

// namedErr is an error whose message was reworded (a path shortened) and
// that still wraps the original, so errors.Is and errors.As see through it.
type namedErr struct {
	msg string
	err error
}

func (e *namedErr) Error() string { return e.msg }
func (e *namedErr) Unwrap() error { return e.err }
