package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// progress turns the one-line-per-case progress of golden.Check into one
// status line, redrawn in place: cases done/total, rate and ETA. Lines of
// cases that did not pass are kept above it. It is only for a terminal:
// newProgress returns nil otherwise, so logs and pipes stay quiet.
type progress struct {
	w           io.Writer
	what        string
	total, done int
	start       time.Time
	now         func() time.Time
	partial     []byte
}

// newProgress returns a progress line for total cases on w, or nil when w
// is not a terminal.
func newProgress(w io.Writer, what string, total int) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progress{w: w, what: what, total: total, start: time.Now(), now: time.Now}
}

// Write implements io.Writer: each complete line is one case done.
func (p *progress) Write(b []byte) (int, error) {
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		line := string(p.partial[:i])
		p.partial = p.partial[i+1:]
		p.done++
		if !strings.HasPrefix(line, "PASS") {
			fmt.Fprintf(p.w, "\r\x1b[K%s\n", line)
		}
		fmt.Fprintf(p.w, "\r\x1b[K%s", p.status())
	}
	return len(b), nil
}

// status is e.g. "npuverify report: 37/140 cases, 12.3 cases/s, ETA 8s".
func (p *progress) status() string {
	el := p.now().Sub(p.start).Seconds()
	s := fmt.Sprintf("%s: %d/%d cases", p.what, p.done, p.total)
	if el <= 0 || p.done == 0 {
		return s
	}
	rate := float64(p.done) / el
	eta := time.Duration(float64(p.total-p.done) / rate * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf("%s, %.1f cases/s, ETA %s", s, rate, eta)
}

// Done ends the status line.
func (p *progress) Done() { fmt.Fprintln(p.w) }
