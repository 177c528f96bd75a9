package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/verify"
)

// maxListed caps the failing cases the summary lists, so that a run where
// everything fails still has a summary that fits in a PR comment.
const maxListed = 20

// Summary is the first section: the totals, the op × dtype/mode matrix of
// verdicts with the worst tightness, and the failing cases.
type Summary struct{ Cases []Case }

// Key implements Section.
func (*Summary) Key() string { return "summary" }

// Totals counts cases by verdict.
func (s *Summary) Totals() map[string]int {
	t := map[string]int{"cases": len(s.Cases), harness.VerdictPass: 0, harness.VerdictFail: 0, harness.VerdictInputError: 0, harness.VerdictBackendError: 0}
	for i := range s.Cases {
		t[s.Cases[i].Verdict]++
	}
	return t
}

// Cell is one op and dtype/mode in the summary matrix.
type Cell struct {
	Op      string `json:"op"`
	Variant string `json:"variant"`
	Cases   int    `json:"cases"`
	Pass    int    `json:"pass"`
	Fail    int    `json:"fail"`
	Errors  int    `json:"errors"` // input and backend errors
	// Worst is the largest tightness over the cell's judged cases (NaN
	// when none was judged) and WorstCase the case it comes from.
	Worst     verify.Float `json:"worst_tightness"`
	WorstCase string       `json:"worst_case"`
}

// Matrix is the op × dtype/mode matrix: Ops are the rows (registered ops
// in ops.Names order, then any other op present, sorted), Variants the columns
// (sorted), and Cells the non-empty cells, row by row.
type Matrix struct {
	Ops      []string `json:"ops"`
	Variants []string `json:"variants"`
	Cells    []Cell   `json:"cells"`
}

// Cell returns the cell of op and variant, or nil.
func (m *Matrix) Cell(op, variant string) *Cell {
	for i := range m.Cells {
		if m.Cells[i].Op == op && m.Cells[i].Variant == variant {
			return &m.Cells[i]
		}
	}
	return nil
}

// Matrix builds the op × dtype/mode matrix of the cases.
func (s *Summary) Matrix() *Matrix { return matrixOf(s.Cases) }

func matrixOf(cases []Case) *Matrix {
	m := &Matrix{Ops: opsOf(cases)}
	cells := map[[2]string]*Cell{}
	for i := range cases {
		c := &cases[i]
		v := c.Variant()
		if !slices.Contains(m.Variants, v) {
			m.Variants = append(m.Variants, v)
		}
		k := [2]string{c.Op, v}
		cell := cells[k]
		if cell == nil {
			cell = &Cell{Op: c.Op, Variant: v, Worst: verify.Float(math.NaN())}
			cells[k] = cell
		}
		cell.Cases++
		switch c.Verdict {
		case harness.VerdictPass:
			cell.Pass++
		case harness.VerdictFail, harness.VerdictNondeterministic, harness.VerdictSlower, harness.VerdictInefficient:
			cell.Fail++ // a nondeterministic, slower or inefficient kernel is a finding, like a failure (exit 1)
		default:
			cell.Errors++
		}
		if t := c.Tightness(); !math.IsNaN(t) && (math.IsNaN(float64(cell.Worst)) || t > float64(cell.Worst)) {
			cell.Worst, cell.WorstCase = verify.Float(t), c.ID
		}
	}
	slices.Sort(m.Variants)
	for _, op := range m.Ops {
		for _, v := range m.Variants {
			if c := cells[[2]string{op, v}]; c != nil {
				m.Cells = append(m.Cells, *c)
			}
		}
	}
	return m
}

// opsOf lists the ops of cases: registered ops in ops.Names order, then
// any other (an op a newer binary wrote into merged JSON), sorted. The
// contracts' registry, not opdb's, names them: opdb would link the
// emulated kernels into the renderer.
func opsOf(cases []Case) []string {
	present := map[string]bool{}
	for i := range cases {
		present[cases[i].Op] = true
	}
	var out []string
	for _, n := range ops.Names() {
		if present[n] {
			out = append(out, n)
			delete(present, n)
		}
	}
	rest := make([]string, 0, len(present))
	for n := range present {
		rest = append(rest, n)
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// text renders a cell for Markdown: "25/25 pass · 0.998", or with the
// failures in bold.
func (c *Cell) text(bold func(string) string) string {
	s := fmt.Sprintf("%d/%d pass", c.Pass, c.Cases)
	if c.Pass < c.Cases {
		var bad []string
		if c.Fail > 0 {
			bad = append(bad, fmt.Sprintf("%d fail", c.Fail))
		}
		if c.Errors > 0 {
			bad = append(bad, fmt.Sprintf("%d error", c.Errors))
		}
		s = bold(s) + " (" + strings.Join(bad, ", ") + ")"
	}
	return s + " · " + num(float64(c.Worst))
}

// Markdown implements Section.
func (s *Summary) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	t := s.Totals()
	fmt.Fprintf(ew, "## Summary\n\n%d cases: %d pass, %d fail, %d input error, %d backend error",
		t["cases"], t[harness.VerdictPass], t[harness.VerdictFail], t[harness.VerdictInputError], t[harness.VerdictBackendError])
	if n := t[harness.VerdictNondeterministic]; n > 0 {
		fmt.Fprintf(ew, ", %d nondeterministic", n)
	}
	for _, v := range []string{harness.VerdictSlower, harness.VerdictInefficient} {
		if n := t[v]; n > 0 {
			fmt.Fprintf(ew, ", %d %s", n, v)
		}
	}
	fmt.Fprint(ew, ".\n\n")
	fmt.Fprintf(ew, "%s\n\n", verdictNote)
	m := s.Matrix()
	if len(m.Ops) == 0 {
		// No case: a merged explore that found nothing.
		fmt.Fprint(ew, "No case to tabulate by op and dtype/mode.\n\n")
		return ew.err
	}
	fmt.Fprintln(ew, "Verdicts by op and dtype/mode: cases passing, and the worst bound tightness (max |err|/bound over the outputs; above 1 is out of bound).")
	fmt.Fprintln(ew)
	fmt.Fprintf(ew, "| op | %s |\n", strings.Join(m.Variants, " | "))
	fmt.Fprintf(ew, "| --- |%s\n", strings.Repeat(" --- |", len(m.Variants)))
	bold := func(s string) string { return "**" + s + "**" }
	for _, op := range m.Ops {
		row := []string{op}
		for _, v := range m.Variants {
			if c := m.Cell(op, v); c != nil {
				row = append(row, c.text(bold))
			} else {
				row = append(row, "")
			}
		}
		fmt.Fprintf(ew, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(ew)
	if notes := matrixNotes(m); len(notes) > 0 {
		fmt.Fprintf(ew, "%s\n\n", strings.Join(notes, " "))
	}
	failing := s.failing()
	if len(failing) == 0 {
		fmt.Fprintf(ew, "%s\n\n", noFailNote)
		return ew.err
	}
	fmt.Fprintf(ew, "Failing cases (%d):\n\n", len(failing))
	for i, c := range failing {
		if i == maxListed {
			fmt.Fprintf(ew, "- … and %d more (see Cases below)\n", len(failing)-maxListed)
			break
		}
		fmt.Fprintf(ew, "- [%s](#%s): %s — %s\n", c.ID, anchor(c.ID), c.Verdict, cell(firstLine(c.Why())))
	}
	fmt.Fprintln(ew)
	return ew.err
}

// failing returns the cases that did not pass, in ID order.
func (s *Summary) failing() []*Case {
	var out []*Case
	for i := range s.Cases {
		if s.Cases[i].Verdict != harness.VerdictPass {
			out = append(out, &s.Cases[i])
		}
	}
	return out
}

// Why is the case's error, failure report or first failed check: its
// first line is what a list of failing cases shows for it. A failure
// report starts with the failing checks, not with its summary
// line ("subject: 1 of 1 verdicts failed"), which would read the same for
// every failing case of a list that names each case already.
func (c *Case) Why() string {
	switch {
	case c.Error != "":
		return c.Error
	case c.Failure != "":
		if _, rest, ok := strings.Cut(c.Failure, "\n"); ok && strings.TrimSpace(rest) != "" {
			return rest
		}
		return c.Failure
	}
	for _, k := range c.Checks {
		if !k.Pass {
			return k.Name + ": " + k.Detail
		}
	}
	return c.Verdict
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
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
		rows[i] = summaryRow{Case: c.ID, Verdict: c.Verdict, Tightness: verify.Float(c.Tightness())}
		if c.Cost != nil {
			cy := c.Cost.Cycles
			rows[i].Cycles = &cy
		}
	}
	return struct {
		Totals map[string]int `json:"totals"`
		Matrix *Matrix        `json:"matrix"`
		Rows   []summaryRow   `json:"rows"`
	}{s.Totals(), s.Matrix(), rows}
}

// Details is the per-case section, rendered last.
type Details struct{ Cases []Case }

// Key implements Section.
func (*Details) Key() string { return "cases" }

// JSON implements Section.
func (d *Details) JSON() any { return d.Cases }

// Markdown implements Section: an index of the cases, then each case.
func (d *Details) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "## Cases\n\n")
	fmt.Fprintln(ew, "| case | verdict | tightness | cycles | reason |")
	fmt.Fprintln(ew, "| --- | --- | ---: | ---: | --- |")
	for i := range d.Cases {
		c := &d.Cases[i]
		v := c.Verdict
		if v != harness.VerdictPass {
			v = "**" + v + "**"
		}
		fmt.Fprintf(ew, "| [%s](#%s) | %s | %s | %s | %s |\n", c.ID, anchor(c.ID), v, num(c.Tightness()), cycles(c), cell(reasonOf(c)))
	}
	fmt.Fprintln(ew)
	fmt.Fprintf(ew, "%s\n\n", casesNote)
	for i := range d.Cases {
		writeCase(ew, &d.Cases[i])
	}
	return ew.err
}

func writeCase(w io.Writer, c *Case) {
	fmt.Fprintf(w, "### %s\n\n", c.ID)
	fmt.Fprintf(w, "- verdict: **%s**\n", c.Verdict)
	if r := reasonOf(c); r != "" && c.Error == "" {
		fmt.Fprintf(w, "- reason: %s\n", oneLine(r))
	}
	fmt.Fprintf(w, "- op `%s`, params `%s`, dims `%s`, dist `%s`, seed %d\n", c.Op, params(c), dims(c.Dims), c.Dist, c.Seed)
	if c.Numerics != "" {
		fmt.Fprintf(w, "- numerics: %s\n", c.Numerics)
	}
	if len(c.Labels) > 0 {
		fmt.Fprintf(w, "- labels: %s\n", strings.Join(c.Labels, ", "))
	}
	if c.Error != "" {
		fmt.Fprintf(w, "- error: `%s`\n\n", oneLine(c.Error))
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| output | max abs | max rel | MERE | MARE | RMSE | cosine | tightness | ulp histogram | non-finite mismatches | ambiguous (taken) |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |")
	for _, o := range c.Outputs {
		m := o.Metrics
		fmt.Fprintf(w, "| %s %s%v | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d (%d) |\n",
			o.Name, o.DType, o.Shape, num(m.MaxAbs), num(m.MaxRel), num(m.MERE), num(m.MARE), num(m.RMSE),
			num(m.Cosine), num(m.Tightness), ulpSummary(m.UlpHist), m.NonFiniteMismatch, m.Ambiguous, m.AmbiguousTaken)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| output | policy | verdict | reason |")
	fmt.Fprintln(w, "| --- | --- | --- | --- |")
	for _, o := range c.Outputs {
		for _, v := range o.Verdicts {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", o.Name, v.Policy, passText(v.Pass), cell(v.Reason))
		}
	}
	for _, k := range c.Checks {
		fmt.Fprintf(w, "| — | %s | %s | %s |\n", k.Name, passText(k.Pass), cell(k.Detail))
	}
	fmt.Fprintln(w)
	if k := c.Cost; k != nil {
		fmt.Fprintln(w, "| cycles | GM bytes in | GM bytes out | HBM bytes | L2 hit bytes | vector util | cube util | overlap | load balance | UB peak bytes | cores |")
		fmt.Fprintln(w, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
		fmt.Fprintf(w, "| %d | %d | %d | %d | %d | %s | %s | %s | %s | %d | %d |\n\n", k.Cycles, k.GMBytesIn, k.GMBytesOut, k.HBMBytes, k.L2HitBytes,
			num(float64(k.VectorUtil)), num(float64(k.CubeUtil)), num(float64(k.Overlap)), num(float64(k.LoadBalance)), k.UBPeakBytes, k.BlockDim)
		var items []string
		for _, it := range checklist(c) {
			items = append(items, it.Metric+" "+it.Status)
		}
		fmt.Fprintf(w, "Performance checklist: %s.\n\n", strings.Join(items, "; "))
	} else {
		fmt.Fprintf(w, "No cost model (the backend reports none).\n\n")
	}
	if c.Failure != "" {
		fmt.Fprintf(w, "```\n%s\n```\n\n", c.Failure)
	}
}

func passText(ok bool) string {
	if ok {
		return "pass"
	}
	return "**fail**"
}
