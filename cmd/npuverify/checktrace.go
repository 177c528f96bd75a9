package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/safefile"
)

// traceDir is check's --trace DIR: each case's schedule on the emulator,
// written as it finishes to DIR/<op>/<case>.json (Chrome trace events,
// npu.Trace) and dropped, so that no more traces are held at once than
// cases run at once (--jobs), each at most npu.DefaultTraceLimit events.
// A file that cannot be written does not stop the run: the cases are
// still judged, and check ends with an input error naming the first.
type traceDir struct {
	dir string

	mu        sync.Mutex
	written   int
	truncated []string // IDs of the cases whose trace hit the limit
	failed    int
	err       error // the first write error
}

// traceFileName is the file of case id's trace in dir: DIR/<op>/<case>.json,
// each name escaped (safeName) so that any case name a store may hold
// makes one plain file name, and two IDs never share a file.
func traceFileName(dir, id string) string {
	op, name, _ := strings.Cut(id, "/")
	return filepath.Join(dir, safeName(op), safeName(name)+".json")
}

// safeName keeps letters, digits and _ - . + = of s and writes every
// other byte (and a leading dot, which would hide the file) as %XX, which
// is reversible, so distinct names stay distinct.
func safeName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '_', c == '-', c == '+', c == '=', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// prepare checks --trace DIR before the first case runs and makes DIR
// when it is missing: DIR inside the golden store under check (which
// check never writes), or a trace file that would replace one of files
// (the result files, and the input files --baseline, --device and a
// --profile file), is a usage error; DIR that is not a directory, cannot
// be made or takes no file is an input error.
func (td *traceDir) prepare(where, storeDir string, store *golden.Store, opt golden.CheckOptions, files ...resultFile) error {
	if storeDir != "" && inside(td.dir, storeDir) {
		return usageErr(where, "--trace %s: inside the golden store %s that is being checked; check never writes the store (write the traces elsewhere)", td.dir, storeDir)
	}
	if cases, err := golden.Select(store, opt); err == nil { // a bad selection is golden.Check's to report
		for _, c := range cases {
			p := traceFileName(td.dir, c.ID)
			for _, f := range files {
				if f.path != "" && sameTarget(p, f.path) {
					return usageErr(where, "--trace %s: the trace of %s would replace the %s file %s: give each its own", td.dir, c.ID, f.flag, f.path)
				}
			}
		}
	}
	if st, err := os.Stat(td.dir); err == nil && !st.IsDir() {
		return inputErr(where, fmt.Errorf("--trace %s: not a directory (the traces are written into it, one file per case)", td.dir))
	}
	if err := os.MkdirAll(td.dir, 0o755); err != nil {
		return inputErr(where, fmt.Errorf("--trace %s: cannot be made: %w", td.dir, unwrapPath(err)))
	}
	if err := safefile.CheckTarget(filepath.Join(td.dir, ".npuverify-trace")); err != nil {
		return inputErr(where, fmt.Errorf("--trace %s: %w", td.dir, err))
	}
	return nil
}

// unwrapPath drops an os.PathError's repetition of a path the message
// names already.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Path, pe.Err)
	}
	return err
}

// observe is golden.CheckOptions.Observe: the case's first run goes
// under a fresh trace, written out as soon as the run returns.
func (td *traceDir) observe(ctx context.Context, id string) (context.Context, func()) {
	t := npu.NewTrace()
	return npu.WithTrace(ctx, t), func() { td.write(id, t) }
}

// write writes case id's trace (replacing only a regular file, whole:
// safefile) and records the outcome.
func (td *traceDir) write(id string, t *npu.Trace) {
	file := traceFileName(td.dir, id)
	err := os.MkdirAll(filepath.Dir(file), 0o755)
	if err != nil {
		err = unwrapPath(err)
	} else {
		err = safefile.WriteAll([]safefile.Target{{Path: file, Perm: 0o644, Render: t.WriteJSON}})
	}
	td.mu.Lock()
	defer td.mu.Unlock()
	if err != nil {
		td.failed++
		if td.err == nil {
			td.err = fmt.Errorf("%s: %w", id, err)
		}
		return
	}
	td.written++
	if t.Dropped() > 0 {
		td.truncated = append(td.truncated, id)
	}
}

// summary is check's line on the traces written, "" without --trace.
func (td *traceDir) summary() string {
	if td == nil {
		return ""
	}
	td.mu.Lock()
	defer td.mu.Unlock()
	s := fmt.Sprintf("traces: %d written to %s (one per case: <op>/<case>.json; open in ui.perfetto.dev)", td.written, td.dir)
	if n := len(td.truncated); n > 0 {
		s += fmt.Sprintf("; %d kept only their first %d events: %s", n, npu.DefaultTraceLimit, strings.Join(slices.Sorted(slices.Values(td.truncated)), ", "))
	}
	return s
}

// failure is the error of the traces that could not be written, nil when
// every one was.
func (td *traceDir) failure() error {
	if td == nil {
		return nil
	}
	td.mu.Lock()
	defer td.mu.Unlock()
	if td.err == nil {
		return nil
	}
	return fmt.Errorf("--trace %s: %d of %d traces not written, the first: %w", td.dir, td.failed, td.failed+td.written, td.err)
}
