// Package report renders accuracy and performance reports from case
// results, summary first: an op × dtype/mode matrix of verdicts with the
// worst bound tightness, sections a caller adds (the GEMM precision-mode
// table; after the checklist, the attention quality under KV compression
// and incremental decoding against full recompute, each with its plots),
// the performance checklist per op from the cost model, and plots
// (ulp histograms, error heatmaps of failing cases, modeled cycles against
// the roofline). The per-case detail follows at the end: per case the op,
// params, dims, distribution and seed, the metrics of every output (max
// abs, max rel, MERE, MARE, RMSE, cosine, tightness, ulp histogram,
// non-finite mismatches, overflow-ambiguous elements), every policy's
// verdict, extra checks (e.g. golden budgets), the modeled cost and the
// case's performance checklist.
//
// Every section is rendered from Cases, the report's own record of each
// case, which is also what the JSON report stores under "cases"; so a
// report rebuilt from JSON results (ReadResults, Merge) equals the report
// of the run. Each section renders itself as Markdown, as a JSON value
// under its own key and, if it implements HTMLSection, as HTML (otherwise
// the HTML report shows its Markdown verbatim). The HTML report is one
// self-contained page with inline SVG plots drawn by gonum/plot. Output is
// deterministic: cases are sorted by ID and maps by key, and nothing
// depends on time or host.
package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/safefile"
	"github.com/npuverify/npuverify/verify"
)

// Section is one part of a report.
type Section interface {
	// Key is the section's key in the JSON report, e.g. "summary".
	Key() string
	// Markdown writes the section, starting with its "## " heading.
	Markdown(w io.Writer) error
	// JSON returns the section's value in the JSON report; it must
	// marshal deterministically (structs, slices, maps with string keys).
	// A section whose JSON is nil is left out of the JSON report.
	JSON() any
}

// Report is a title, metadata, the summary sections in order and, at the
// end, the per-case detail.
type Report struct {
	Title string
	// Meta are "key: value" facts shown under the title and under "meta"
	// in JSON (backend, profile, ...), rendered sorted by key.
	Meta     map[string]string
	Sections []Section
	// Details is rendered last, under "cases" in JSON.
	Details *Details
}

// New returns a report on outcomes with the standard sections (Standard).
func New(title string, outcomes []harness.Outcome) *Report {
	cs := make([]Case, len(outcomes))
	for i := range outcomes {
		cs[i] = FromOutcome(&outcomes[i])
	}
	return FromCases(title, cs)
}

// FromCases returns a report on cases (sorted by ID here) with the
// standard sections: the summary matrix, the performance checklist and the
// plots, then the per-case detail.
func FromCases(title string, cases []Case) *Report {
	cs := slices.Clone(cases)
	slices.SortStableFunc(cs, func(a, b Case) int { return strings.Compare(a.ID, b.ID) })
	secs := []Section{&Summary{Cases: cs}, &Performance{Cases: cs}}
	if slices.ContainsFunc(cs, func(c Case) bool { return c.timed() }) {
		secs = append(secs, &Throughput{Cases: cs}) // kernels that report their own times
	}
	return &Report{
		Title:    title,
		Meta:     map[string]string{},
		Sections: append(secs, &Plots{Cases: cs}),
		Details:  &Details{Cases: cs},
	}
}

// Add appends a section to the summary part (before the per-case detail).
func (r *Report) Add(s Section) { r.Sections = append(r.Sections, s) }

// InsertAfter inserts s right after the section with key after; it fails
// when there is none.
func (r *Report) InsertAfter(after string, s Section) error {
	i := slices.IndexFunc(r.Sections, func(x Section) bool { return x.Key() == after })
	if i < 0 {
		return fmt.Errorf("report: no section %q to insert %q after", after, s.Key())
	}
	r.Sections = slices.Insert(r.Sections, i+1, s)
	return nil
}

// all is the sections in rendering order, the detail last.
func (r *Report) all() []Section {
	if r.Details == nil {
		return r.Sections
	}
	return append(slices.Clip(r.Sections), r.Details)
}

// Markdown writes the whole report as Markdown: the summary, short enough
// for a PR comment, then the per-case detail.
func (r *Report) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "# %s\n\n", r.Title)
	for _, k := range slices.Sorted(maps.Keys(r.Meta)) {
		fmt.Fprintf(ew, "- %s: %s\n", k, r.Meta[k])
	}
	if len(r.Meta) > 0 {
		fmt.Fprintln(ew)
	}
	if ew.err != nil {
		return ew.err
	}
	for _, s := range r.all() {
		if err := s.Markdown(w); err != nil {
			return err
		}
	}
	return nil
}

// JSON writes the whole report as one indented JSON object:
// {"title", "meta", then each section under its key, "cases" last}.
func (r *Report) JSON(w io.Writer) error {
	type entry struct {
		key string
		v   any
	}
	meta := r.Meta
	if meta == nil {
		meta = map[string]string{}
	}
	entries := []entry{{"title", r.Title}, {"meta", meta}}
	seen := map[string]bool{"title": true, "meta": true}
	for _, s := range r.all() {
		if seen[s.Key()] {
			return fmt.Errorf("report: duplicate section key %q", s.Key())
		}
		seen[s.Key()] = true
		if v := s.JSON(); v != nil {
			entries = append(entries, entry{s.Key(), v})
		}
	}
	var b strings.Builder
	b.WriteString("{\n")
	for i, e := range entries {
		kb, _ := json.Marshal(e.key)
		vb, err := json.MarshalIndent(e.v, "  ", "  ")
		if err != nil {
			return fmt.Errorf("report: section %s: %w", e.key, err)
		}
		b.WriteString("  ")
		b.Write(kb)
		b.WriteString(": ")
		b.Write(vb)
		if i < len(entries)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Formats are the formats WriteFiles understands.
var Formats = []string{"md", "json", "html"}

// ParseFormats parses a comma-separated format list ("md,json,html").
func ParseFormats(s string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !slices.Contains(Formats, f) {
			return nil, fmt.Errorf("unknown format %q (want %s)", f, strings.Join(Formats, ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no format given (want " + strings.Join(Formats, ", ") + ")")
	}
	return out, nil
}

// RenderError is WriteFiles' error when a format could not be rendered:
// a fault of the report, not of the directory written to, and nothing was
// written.
type RenderError struct {
	Format string
	Err    error
}

// Error implements error.
func (e *RenderError) Error() string {
	return fmt.Sprintf("rendering report.%s: %v", e.Format, e.Err)
}

// Unwrap returns the renderer's error.
func (e *RenderError) Unwrap() error { return e.Err }

// WriteFiles writes dir/report.<format> for each format (creating dir) and
// returns the paths written. Every format is rendered to memory first, so
// a format that fails to render (a *RenderError) leaves every file as it
// was; then each is written to a temporary file beside its target, and
// only when all are whole are they renamed into place, one after the
// other. So the formats are replaced together or, when a render, a write
// or a check fails first, not at all: a reader never finds this run's
// Markdown beside the previous run's HTML. Only a regular file is
// replaced (a symbolic link, FIFO or directory in a target's place is
// refused before anything is written), and errors other than a
// *RenderError name the path.
func (r *Report) WriteFiles(dir string, formats []string) ([]string, error) {
	bodies := make([][]byte, len(formats))
	for i, f := range formats {
		var render func(io.Writer) error
		switch f {
		case "md":
			render = r.Markdown
		case "json":
			render = r.JSON
		case "html":
			render = r.HTML
		default:
			return nil, fmt.Errorf("unknown format %q", f)
		}
		var b bytes.Buffer
		if err := render(&b); err != nil {
			return nil, &RenderError{Format: f, Err: err}
		}
		bodies[i] = b.Bytes()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	paths := make([]string, len(formats))
	tmps := make([]string, 0, len(formats))
	defer func() {
		for _, t := range tmps {
			os.Remove(t) // those not renamed (a no-op for the others)
		}
	}()
	for i, f := range formats {
		paths[i] = filepath.Join(dir, "report."+f)
		if err := replaceable(paths[i]); err != nil {
			return nil, err
		}
		t, err := writeTemp(dir, "report."+f, bodies[i])
		if err != nil {
			return nil, err
		}
		tmps = append(tmps, t)
	}
	for i := range paths {
		if err := replaceable(paths[i]); err != nil {
			return nil, err
		}
	}
	for i, p := range paths {
		if err := os.Rename(tmps[i], p); err != nil {
			return paths[:i], fmt.Errorf("%s: %w (the formats before it are replaced)", p, err)
		}
	}
	tmps = nil
	if err := safefile.SyncDir(dir); err != nil {
		return paths, fmt.Errorf("%s: %w", dir, err)
	}
	return paths, nil
}

// writeTemp writes data to a new temporary file in dir named after base,
// fsynced, with mode 0644, and returns its path; on error nothing is left.
func writeTemp(dir, base string, data []byte) (path string, err error) {
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("%s: %w", filepath.Join(dir, base), err)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return "", err
	}
	if err := f.Chmod(0o644); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// replaceable fails when path exists and is not a regular file: only a
// regular file is replaced (as safefile.Write does).
func replaceable(path string) error {
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case st.Mode().IsRegular():
		return nil
	}
	return fmt.Errorf("%s: refusing to replace it: not a regular file (%s): %w", path, st.Mode().Type(), safefile.ErrNotRegular)
}

// num renders a metric for Markdown: 4 significant digits, "—" for NaN.
func num(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case math.IsInf(x, 1):
		return "+inf"
	case math.IsInf(x, -1):
		return "-inf"
	case x == 0:
		return "0"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

func cycles(c *Case) string {
	if c.Cost == nil {
		return "—"
	}
	return strconv.FormatInt(c.Cost.Cycles, 10)
}

func params(c *Case) string { return ops.Params(c.Params).String() }

func dims(d map[string]int) string {
	parts := make([]string, 0, len(d))
	for _, k := range slices.Sorted(maps.Keys(d)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, d[k]))
	}
	return strings.Join(parts, " ")
}

// ulpSummary renders the non-empty ulp buckets in display order, e.g.
// "0:200 1:57".
func ulpSummary(h map[string]int) string {
	var parts []string
	for _, k := range verify.UlpBuckets {
		if v := h[k]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s:%d", k, v))
		}
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, " ")
}

// anchor is the GitHub-style heading anchor of a case ID.
func anchor(id string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(id) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	return strings.ReplaceAll(s, "`", "'")
}

func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

// errWriter remembers the first write error so that renderers can write
// freely and check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
