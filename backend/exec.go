package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
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
// A non-zero exit, a timeout, a missing output, an output of the wrong
// dtype or shape, an output that is not a regular file or not a valid
// .npy file, or a malformed timing.json is an error naming the command
// and the output and quoting the tail of the command's stderr (its stdout
// when stderr is empty). Outputs are read with an element cap of the
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
}

// ExecOptions configure an Exec backend. The zero value is usable.
type ExecOptions struct {
	// Timeout bounds each case, from start to exit (default 60s).
	Timeout time.Duration
	// WorkDir is the parent directory of the case directories ("" = the
	// system's temporary directory).
	WorkDir string
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

// ExecCaseFile is the content of D/case.json, for example
//
//	{
//	  "version": 1,
//	  "op": "gemm",
//	  "params": {"accumulate": "sequential", "alpha": "1", "beta": "0", "mode": "fp16_fp32acc"},
//	  "numerics": {"overflow": "inf", "subnormals": "keep", "int8_rounding": "half_even"},
//	  "inputs": [
//	    {"name": "a", "file": "a.npy", "dtype": "fp16", "shape": [64, 128]},
//	    {"name": "b", "file": "b.npy", "dtype": "fp16", "shape": [128, 32]}
//	  ],
//	  "outputs": [
//	    {"name": "out", "file": "out/out.npy", "dtype": "fp16", "shape": [64, 32]}
//	  ]
//	}
//
// Params are the op's validated params with defaults filled in, all as
// strings. Files are relative to D. Inputs and outputs are listed in the
// op's contract order; optional inputs that the case does not have are
// left out.
type ExecCaseFile struct {
	Version  int             `json:"version"`
	Op       string          `json:"op"`
	Params   ops.Params      `json:"params"`
	Numerics tensor.Numerics `json:"numerics"`
	Inputs   []ExecTensor    `json:"inputs"`
	Outputs  []ExecTensor    `json:"outputs"`
}

// ExecTensor describes one input or output file of an exec case.
type ExecTensor struct {
	Name  string       `json:"name"`
	File  string       `json:"file"` // relative to the case directory, slash-separated
	DType tensor.DType `json:"dtype"`
	Shape []int        `json:"shape"`
}

// ExecTiming is the content of the optional D/out/timing.json: the
// command's own measurements of the kernel, in nanoseconds, one per run.
type ExecTiming struct {
	KernelNS []float64 `json:"kernel_ns"`
}

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
	return &Exec{cmdline: cmdline, argv: argv, opt: opt}, nil
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

// SplitCommandLine splits s into words the way a POSIX shell does, without
// running one: words are separated by unquoted blanks (space, tab,
// newline); single quotes keep everything up to the next single quote
// literally; inside double quotes a backslash escapes only $ ` " \ and
// newline; outside quotes a backslash escapes any character
// (backslash-newline is removed). Quotes may join parts of one word
// (a'b c'd is one word "ab cd"), and "" is an empty word. There is no
// expansion of any kind. An unterminated quote, a trailing backslash or
// an empty command is an error wrapping ErrCommandLine.
func SplitCommandLine(s string) ([]string, error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
	)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w %q: %s", ErrCommandLine, s, fmt.Sprintf(format, args...))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, bad("unterminated single quote at byte %d", i)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			inWord = true
			start := i
			closed := false
			for i++; i < len(s); i++ {
				d := s[i]
				if d == '"' {
					closed = true
					break
				}
				if d == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] != '\n' {
						cur.WriteByte(s[i])
					}
					continue
				}
				cur.WriteByte(d)
			}
			if !closed {
				return nil, bad("unterminated double quote at byte %d", start)
			}
		case c == '\\':
			if i+1 == len(s) {
				return nil, bad("trailing backslash")
			}
			i++
			if s[i] == '\n' {
				continue // line continuation
			}
			inWord = true
			cur.WriteByte(s[i])
		default:
			inWord = true
			cur.WriteByte(c)
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, bad("no command")
	}
	if words[0] == "" {
		return nil, bad("empty command name")
	}
	return words, nil
}

// Run runs one case through the command; see Exec.
func (e *Exec) Run(ctx context.Context, opName string, p ops.Params, in map[string]*tensor.Tensor) (out map[string]*tensor.Tensor, cost *npu.Cost, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("exec %s: not started: %w", e.argv[0], err)
	}
	op, err := opdb.Op(opName)
	if err != nil {
		return nil, nil, err
	}
	cf, err := e.caseFile(op, p, in)
	if err != nil {
		return nil, nil, err
	}
	dir, err := e.makeDir()
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if e.opt.Keep {
			if err != nil {
				err = fmt.Errorf("%w (case directory kept: %s)", err, dir)
			}
			return
		}
		removeAll(dir)
	}()
	if err := writeCase(dir, cf, in); err != nil {
		return nil, nil, err
	}
	res, err := e.command(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	if err := res.failure(e.opt.Timeout); err != nil {
		return nil, nil, err
	}
	out = make(map[string]*tensor.Tensor, len(cf.Outputs))
	for _, o := range cf.Outputs {
		t, err := readOutput(dir, o)
		if err != nil {
			return nil, nil, fmt.Errorf("exec %s: %w\n%s", e.argv[0], err, res.quote())
		}
		out[o.Name] = t
	}
	cost, err = readTiming(filepath.Join(dir, "out", "timing.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("exec %s: %w\n%s", e.argv[0], err, res.quote())
	}
	return out, cost, nil
}

// caseFile describes the case: inputs and outputs in contract order.
func (e *Exec) caseFile(op ops.Op, p ops.Params, in map[string]*tensor.Tensor) (*ExecCaseFile, error) {
	inSpecs, err := op.Inputs(p, in)
	if err != nil {
		return nil, err
	}
	outSpecs, err := op.Outputs(p, in)
	if err != nil {
		return nil, err
	}
	params := p.Clone()
	cf := &ExecCaseFile{Version: ExecCaseVersion, Op: op.Name(), Params: params, Numerics: e.opt.Numerics,
		Inputs: []ExecTensor{}, Outputs: []ExecTensor{}}
	known := map[string]bool{}
	for _, s := range inSpecs {
		known[s.Name] = true
		t, ok := in[s.Name]
		if !ok || t == nil {
			continue // optional and absent; CheckInputs is the caller's job
		}
		if !safeName(s.Name) {
			return nil, fmt.Errorf("exec: input name %q cannot be a file name", s.Name)
		}
		cf.Inputs = append(cf.Inputs, ExecTensor{Name: s.Name, File: s.Name + ".npy", DType: t.DType, Shape: shapeOf(t.Shape)})
	}
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if !known[name] {
			return nil, fmt.Errorf("%s: unknown input %q", op.Name(), name)
		}
	}
	for _, s := range outSpecs {
		if !safeName(s.Name) {
			return nil, fmt.Errorf("exec: output name %q cannot be a file name", s.Name)
		}
		cf.Outputs = append(cf.Outputs, ExecTensor{Name: s.Name, File: "out/" + s.Name + ".npy", DType: s.DType, Shape: shapeOf(s.Shape)})
	}
	return cf, nil
}

func shapeOf(s []int) []int {
	if s == nil {
		return []int{}
	}
	return slices.Clone(s)
}

// safeName reports whether a tensor name can be used as a file name as is.
func safeName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r == '.' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// makeDir creates a fresh, absolute case directory.
func (e *Exec) makeDir() (string, error) {
	dir, err := os.MkdirTemp(e.opt.WorkDir, "npuverify-case-")
	if err != nil {
		return "", fmt.Errorf("exec: making the case directory: %w", err)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir, nil
}

// writeCase writes case.json, the inputs and the empty out directory.
func writeCase(dir string, cf *ExecCaseFile, in map[string]*tensor.Tensor) error {
	for _, s := range cf.Inputs {
		if err := writeNpy(filepath.Join(dir, filepath.FromSlash(s.File)), in[s.Name]); err != nil {
			return fmt.Errorf("exec: writing input %q: %w", s.Name, err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	b, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return fmt.Errorf("exec: encoding case.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "case.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	return nil
}

// writeNpy writes t to a fresh file through a buffer (the case directory is
// private and short-lived: no temp file, no fsync).
func writeNpy(path string, t *tensor.Tensor) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 64<<10)
	if err := tensor.WriteNpy(w, t); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}

// cmdResult is how one run of the command ended.
type cmdResult struct {
	argv0    string
	state    *os.ProcessState // nil when the command did not start
	waitErr  error
	timedOut bool
	canceled error // the caller's context error, when it ended the run
	elapsed  time.Duration
	stderr   *tailBuffer
	stdout   *tailBuffer
}

// command runs the command on dir and waits for it (or kills it).
func (e *Exec) command(ctx context.Context, dir string) (*cmdResult, error) {
	args := append(slices.Clone(e.argv[1:]), dir)
	cmd := exec.Command(e.argv[0], args...)
	cmd.Env = append(os.Environ(), "NPUVERIFY_CASE="+filepath.Join(dir, "case.json"))
	setProcessGroup(cmd)
	res := &cmdResult{argv0: e.argv[0], stderr: newTailBuffer(e.opt.MaxStderr), stdout: newTailBuffer(e.opt.MaxStderr)}

	// Own pipes rather than io.Writers on the Cmd: exec's copying goroutines
	// would make Wait block until every process holding the pipes (e.g. a
	// background child) exits; here the group is killed first.
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("exec %s: %w", e.argv[0], err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		errR.Close()
		errW.Close()
		return nil, fmt.Errorf("exec %s: %w", e.argv[0], err)
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
			killProcessGroup(cmd.Process)
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
			killProcessGroup(cmd.Process)
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
		res.canceled = ctx.Err()
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

// readOutput reads one output, holding it to its dtype and shape.
func readOutput(dir string, o ExecTensor) (*tensor.Tensor, error) {
	path := filepath.Join(dir, filepath.FromSlash(o.File))
	want := fmt.Sprintf("want %s%v", o.DType, o.Shape)
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("output %q: %s was not written (%s)", o.Name, o.File, want)
	case err != nil:
		return nil, fmt.Errorf("output %q: %w", o.Name, err)
	case fi.IsDir():
		return nil, fmt.Errorf("output %q: %s is a directory, not a .npy file (%s)", o.Name, o.File, want)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("output %q: %s is not a regular file (mode %s; %s)", o.Name, o.File, fi.Mode(), want)
	}
	n, err := tensor.NumElements(o.Shape)
	if err != nil {
		return nil, fmt.Errorf("output %q: %w", o.Name, err)
	}
	// The cap is the contract's size: nothing larger is ever allocated.
	t, err := tensor.ReadNpyFile(path, o.DType, tensor.ReadOptions{MaxElements: max(n, 1)})
	if err != nil {
		return nil, fmt.Errorf("output %q: %w (%s)", o.Name, err, want)
	}
	if t.DType != o.DType {
		return nil, fmt.Errorf("output %q: %s has dtype %s, %s", o.Name, o.File, t.DType, want)
	}
	if !t.SameShape(o.Shape) {
		return nil, fmt.Errorf("output %q: %s has shape %v, %s", o.Name, o.File, t.Shape, want)
	}
	return t, nil
}

// readTiming reads the optional timing.json: nil cost when it is absent
// or lists no measurement; otherwise a Cost whose Seconds is the median
// of kernel_ns / 1e9. Exec models nothing else, so every other field of
// the Cost is zero.
func readTiming(path string) (*npu.Cost, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("out/timing.json: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("out/timing.json: not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTimingJSON+1))
	if err != nil {
		return nil, fmt.Errorf("out/timing.json: %w", err)
	}
	if len(b) > maxTimingJSON {
		return nil, fmt.Errorf("out/timing.json: larger than %d bytes", maxTimingJSON)
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
	return &npu.Cost{Seconds: median(tm.KernelNS) / 1e9}, nil
}

// median of a non-empty list (mean of the middle two for an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// removeAll removes a case directory, making directories the command left
// unwritable or unreadable writable first.
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
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
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return slices.Clone(b)
}

// Quote renders the last quoteLines lines (at most quoteBytes bytes) of
// the tail, each line prefixed by "  | ", under a heading that says how
// much was written and how much is shown.
func (t *tailBuffer) Quote(name string) string {
	total := t.Total()
	if total == 0 {
		return name + ": (empty)"
	}
	tail := t.Tail()
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
	return head + "\n  | " + strings.ReplaceAll(shown, "\n", "\n  | ")
}

var _ Backend = (*Exec)(nil)
