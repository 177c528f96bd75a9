// Package report renders accuracy and performance reports from case
// results: per case the op, params, dims, distribution and seed, the
// metrics of every output (max abs, max rel, MERE, MARE, RMSE, cosine,
// tightness, ulp histogram, non-finite mismatches, overflow-ambiguous
// elements), every policy's verdict, extra checks (e.g. golden budgets) and
// the modeled cost (cycles, GM bytes, vector and cube utilisation,
// DMA/compute overlap, load balance, UB peak).
//
// A Report is a list of Sections, rendered in order: the summary table
// first, then the per-case details, then any section a caller adds (e.g. a
// GEMM precision-mode table). Each section renders itself as Markdown, as
// a JSON value under its own key and, if it implements HTMLSection, as HTML
// (otherwise the HTML report shows its Markdown verbatim). The HTML report
// is one self-contained page with inline SVG plots drawn by gonum/plot.
// Output is deterministic: cases are sorted by ID and maps by key, and
// nothing depends on time or host.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/harness"
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
	JSON() any
}

// Report is an ordered list of sections with a title and metadata.
type Report struct {
	Title string
	// Meta are "key: value" facts shown under the title and under "meta"
	// in JSON (backend, profile, ...), rendered sorted by key.
	Meta     map[string]string
	Sections []Section
}

// New returns a report on cases with the standard sections: the summary
// table, then the per-case details. Cases are sorted by ID.
func New(title string, cases []harness.Outcome) *Report {
	cs := slices.Clone(cases)
	slices.SortStableFunc(cs, func(a, b harness.Outcome) int { return strings.Compare(a.ID, b.ID) })
	return &Report{
		Title:    title,
		Meta:     map[string]string{},
		Sections: []Section{&Summary{Cases: cs}, &Details{Cases: cs}},
	}
}

// Add appends a section.
func (r *Report) Add(s Section) { r.Sections = append(r.Sections, s) }

// Markdown writes the whole report as Markdown.
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
	for _, s := range r.Sections {
		if err := s.Markdown(w); err != nil {
			return err
		}
	}
	return nil
}

// JSON writes the whole report as one indented JSON object:
// {"title", "meta", then each section under its key}.
func (r *Report) JSON(w io.Writer) error {
	// A struct keeps title and meta first; sections follow in order.
	var b strings.Builder
	b.WriteString("{\n")
	write := func(key string, v any, last bool) error {
		kb, _ := json.Marshal(key)
		vb, err := json.MarshalIndent(v, "  ", "  ")
		if err != nil {
			return fmt.Errorf("report: section %s: %w", key, err)
		}
		b.WriteString("  ")
		b.Write(kb)
		b.WriteString(": ")
		b.Write(vb)
		if !last {
			b.WriteString(",")
		}
		b.WriteString("\n")
		return nil
	}
	if err := write("title", r.Title, false); err != nil {
		return err
	}
	meta := r.Meta
	if meta == nil {
		meta = map[string]string{}
	}
	if err := write("meta", meta, len(r.Sections) == 0); err != nil {
		return err
	}
	seen := map[string]bool{"title": true, "meta": true}
	for i, s := range r.Sections {
		if seen[s.Key()] {
			return fmt.Errorf("report: duplicate section key %q", s.Key())
		}
		seen[s.Key()] = true
		if err := write(s.Key(), s.JSON(), i == len(r.Sections)-1); err != nil {
			return err
		}
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

// WriteFiles writes dir/report.<format> for each format (creating dir) and
// returns the paths written. Each file is written atomically and only over
// a regular file (safefile.Write), so a reader never sees half a report.
func (r *Report) WriteFiles(dir string, formats []string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, f := range formats {
		var render func(io.Writer) error
		switch f {
		case "md":
			render = r.Markdown
		case "json":
			render = r.JSON
		case "html":
			render = r.HTML
		default:
			return paths, fmt.Errorf("unknown format %q", f)
		}
		p := filepath.Join(dir, "report."+f)
		if err := safefile.Write(p, 0o644, render); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// Summary is the first section: one row per case with its verdict,
// tightness and cycles, and the totals.
type Summary struct{ Cases []harness.Outcome }

// Key implements Section.
func (*Summary) Key() string { return "summary" }

// Totals counts cases by verdict.
func (s *Summary) Totals() map[string]int {
	t := map[string]int{"cases": len(s.Cases), harness.VerdictPass: 0, harness.VerdictFail: 0, harness.VerdictInputError: 0, harness.VerdictBackendError: 0}
	for i := range s.Cases {
		t[s.Cases[i].Verdict()]++
	}
	return t
}

// Markdown implements Section.
func (s *Summary) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	t := s.Totals()
	fmt.Fprintf(ew, "## Summary\n\n%d cases: %d pass, %d fail, %d input error, %d backend error.\n\n",
		t["cases"], t[harness.VerdictPass], t[harness.VerdictFail], t[harness.VerdictInputError], t[harness.VerdictBackendError])
	fmt.Fprintln(ew, "| case | verdict | tightness | cycles |")
	fmt.Fprintln(ew, "| --- | --- | ---: | ---: |")
	for i := range s.Cases {
		c := &s.Cases[i]
		verdict := c.Verdict()
		if verdict != harness.VerdictPass {
			verdict = "**" + verdict + "**"
		}
		fmt.Fprintf(ew, "| [%s](#%s) | %s | %s | %s |\n", c.ID, anchor(c.ID), verdict, num(c.Tightness()), cycles(c))
	}
	fmt.Fprintln(ew)
	return ew.err
}

type summaryRow struct {
	Case      string       `json:"case"`
	Verdict   string       `json:"verdict"`
	Tightness verify.Float `json:"tightness"`
	Cycles    *int64       `json:"cycles"`
}

// JSON implements Section.
func (s *Summary) JSON() any {
	rows := make([]summaryRow, len(s.Cases))
	for i := range s.Cases {
		c := &s.Cases[i]
		rows[i] = summaryRow{Case: c.ID, Verdict: c.Verdict(), Tightness: verify.Float(c.Tightness())}
		if c.Result != nil && c.Result.Cost != nil {
			cy := c.Result.Cost.Cycles
			rows[i].Cycles = &cy
		}
	}
	return struct {
		Totals map[string]int `json:"totals"`
		Rows   []summaryRow   `json:"rows"`
	}{s.Totals(), rows}
}

// Details is the per-case section.
type Details struct{ Cases []harness.Outcome }

// Key implements Section.
func (*Details) Key() string { return "cases" }

// Markdown implements Section.
func (d *Details) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "## Cases\n\n")
	for i := range d.Cases {
		writeCase(ew, &d.Cases[i])
	}
	return ew.err
}

func writeCase(w io.Writer, c *harness.Outcome) {
	hc := c.Ran()
	fmt.Fprintf(w, "### %s\n\n", c.ID)
	fmt.Fprintf(w, "- verdict: **%s**\n", c.Verdict())
	fmt.Fprintf(w, "- op `%s`, params `%s`, dims `%s`, dist `%s`, seed %d\n", hc.Op, params(c), dims(hc.Dims), hc.Dist, hc.Seed)
	if c.Result != nil {
		fmt.Fprintf(w, "- numerics: %s\n", c.Result.Numerics)
	}
	if len(hc.Labels) > 0 {
		fmt.Fprintf(w, "- labels: %s\n", strings.Join(hc.Labels, ", "))
	}
	if c.Err != nil {
		fmt.Fprintf(w, "- error: `%s`\n\n", oneLine(c.Err.Error()))
		return
	}
	fmt.Fprintln(w)
	vr := c.Result.Verify
	fmt.Fprintln(w, "| output | max abs | max rel | MERE | MARE | RMSE | cosine | tightness | ulp histogram | non-finite mismatches | ambiguous (taken) |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
	for _, o := range vr.Outputs {
		m := o.Metrics
		fmt.Fprintf(w, "| %s %s%v | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d (%d) |\n",
			o.Name, o.DType, o.Shape, num(m.MaxAbs), num(m.MaxRel), num(m.MERE), num(m.MARE), num(m.RMSE),
			num(m.Cosine), num(m.Tightness), ulpSummary(m.UlpHist), m.NonFiniteMismatch, m.Ambiguous, m.AmbiguousTaken)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| output | policy | verdict | reason |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, o := range vr.Outputs {
		for _, v := range o.Verdicts {
			pass := "pass"
			if !v.Pass {
				pass = "**fail**"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", o.Name, v.Policy, pass, cell(v.Reason))
		}
	}
	for _, k := range c.Checks {
		pass := "pass"
		if !k.Pass {
			pass = "**fail**"
		}
		fmt.Fprintf(w, "| — | %s | %s | %s |\n", k.Name, pass, cell(k.Detail))
	}
	fmt.Fprintln(w)
	if cost := c.Result.Cost; cost != nil {
		fmt.Fprintln(w, "| cycles | GM bytes in | GM bytes out | vector util | cube util | overlap | load balance | UB peak bytes | cores |")
		fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		fmt.Fprintf(w, "| %d | %d | %d | %s | %s | %s | %s | %d | %d |\n\n", cost.Cycles, cost.GMBytesIn, cost.GMBytesOut,
			num(cost.VectorUtil), num(cost.CubeUtil), num(cost.Overlap), num(cost.LoadBalance), cost.UBPeakBytes, cost.BlockDim)
	} else {
		fmt.Fprintf(w, "No cost model (the backend reports none).\n\n")
	}
	if f := vr.Failure(); f != "" {
		fmt.Fprintf(w, "```\n%s\n```\n\n", f)
	}
}

// caseJSON is one case in the JSON report.
type caseJSON struct {
	ID       string            `json:"id"`
	Op       string            `json:"op"`
	Params   map[string]string `json:"params"`
	Dims     map[string]int    `json:"dims"`
	Dist     string            `json:"dist"`
	Seed     uint64            `json:"seed"`
	Labels   []string          `json:"labels"`
	Numerics string            `json:"numerics,omitempty"`
	Verdict  string            `json:"verdict"`
	Error    string            `json:"error,omitempty"`
	Outputs  []outputJSON      `json:"outputs"`
	Checks   []harness.Check   `json:"checks"`
	Cost     *costJSON         `json:"cost"`
}

type outputJSON struct {
	Name     string         `json:"name"`
	DType    string         `json:"dtype"`
	Shape    []int          `json:"shape"`
	Metrics  verify.Metrics `json:"metrics"`
	Verdicts []verdictJSON  `json:"verdicts"`
}

type verdictJSON struct {
	Policy string `json:"policy"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

type costJSON struct {
	Device      string       `json:"device"`
	Cycles      int64        `json:"cycles"`
	Seconds     verify.Float `json:"seconds"`
	GMBytesIn   int64        `json:"gm_bytes_in"`
	GMBytesOut  int64        `json:"gm_bytes_out"`
	VectorUtil  verify.Float `json:"vector_util"`
	CubeUtil    verify.Float `json:"cube_util"`
	Overlap     verify.Float `json:"overlap"`
	LoadBalance verify.Float `json:"load_balance"`
	UBPeakBytes int64        `json:"ub_peak_bytes"`
	BlockDim    int          `json:"block_dim"`
}

// JSON implements Section.
func (d *Details) JSON() any {
	out := make([]caseJSON, len(d.Cases))
	for i := range d.Cases {
		c := &d.Cases[i]
		hc := c.Ran()
		j := caseJSON{
			ID: c.ID, Op: hc.Op, Params: map[string]string(hc.Params), Dims: hc.Dims, Dist: hc.Dist, Seed: hc.Seed,
			Labels: hc.Labels, Verdict: c.Verdict(), Outputs: []outputJSON{}, Checks: c.Checks,
		}
		if c.Result != nil {
			j.Params = map[string]string(c.Result.Params)
			j.Numerics = c.Result.Numerics.String()
		}
		if j.Labels == nil {
			j.Labels = []string{}
		}
		if j.Checks == nil {
			j.Checks = []harness.Check{}
		}
		if c.Err != nil {
			j.Error = c.Err.Error()
		}
		if c.Result != nil && c.Result.Verify != nil {
			for _, o := range c.Result.Verify.Outputs {
				oj := outputJSON{Name: o.Name, DType: o.DType.String(), Shape: o.Shape, Metrics: o.Metrics, Verdicts: []verdictJSON{}}
				for _, v := range o.Verdicts {
					oj.Verdicts = append(oj.Verdicts, verdictJSON{Policy: v.Policy, Pass: v.Pass, Reason: v.Reason})
				}
				j.Outputs = append(j.Outputs, oj)
			}
		}
		if c.Result != nil && c.Result.Cost != nil {
			k := c.Result.Cost
			j.Cost = &costJSON{
				Device: k.Device, Cycles: k.Cycles, Seconds: verify.Float(k.Seconds), GMBytesIn: k.GMBytesIn, GMBytesOut: k.GMBytesOut,
				VectorUtil: verify.Float(k.VectorUtil), CubeUtil: verify.Float(k.CubeUtil), Overlap: verify.Float(k.Overlap),
				LoadBalance: verify.Float(k.LoadBalance), UBPeakBytes: k.UBPeakBytes, BlockDim: k.BlockDim,
			}
		}
		out[i] = j
	}
	return out
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

func cycles(c *harness.Outcome) string {
	if c.Result == nil || c.Result.Cost == nil {
		return "—"
	}
	return strconv.FormatInt(c.Result.Cost.Cycles, 10)
}

func params(c *harness.Outcome) string {
	if c.Result != nil {
		return c.Result.Params.String()
	}
	return c.Case.Params.String()
}

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
