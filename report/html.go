package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/npuverify/npuverify/harness"
)

// HTMLSection is implemented by sections that render themselves as HTML.
// A section that does not is shown in the HTML report as its Markdown,
// verbatim in a <pre>, so new sections appear without changes here.
type HTMLSection interface {
	// HTML writes the section's body, starting with its <h2> heading; the
	// report wraps it in <section id="KEY">. It must escape what it writes
	// (use html/template) and must not load anything from outside the page.
	HTML(w io.Writer) error
}

// sectionNames are the names of the known sections in the page's table of
// contents; any other section is listed by its key.
var sectionNames = map[string]string{
	"summary": "Summary", "gemm_precision_modes": "GEMM precision modes", "performance": "Performance checklist",
	"plots": "Plots", "cases": "Cases", "attention_quality": "Attention quality", "incremental_decoding": "Incremental decoding",
	"throughput": "Kernel throughput", "layout_cost": "The cost of layout", "timelines": "Timelines",
}

// HTML writes the whole report as one self-contained HTML page: the title,
// meta and a table of contents, then each section in order; plots are
// inline SVG, styles are inline, and the one script opens a collapsed case
// when a link points into it.
func (r *Report) HTML(w io.Writer) error {
	type kv struct{ K, V string }
	type sec struct {
		ID, Name string
		Body     template.HTML
		Markdown string
	}
	page := struct {
		Title    string
		Meta     []kv
		Sections []sec
	}{Title: r.Title}
	for _, k := range slices.Sorted(maps.Keys(r.Meta)) {
		page.Meta = append(page.Meta, kv{k, r.Meta[k]})
	}
	for _, s := range r.all() {
		var b bytes.Buffer
		v := sec{ID: "section-" + s.Key(), Name: sectionNames[s.Key()]}
		if v.Name == "" {
			v.Name = s.Key()
		}
		if h, ok := s.(HTMLSection); ok {
			if err := h.HTML(&b); err != nil {
				return fmt.Errorf("report: section %s: %w", s.Key(), err)
			}
			v.Body = template.HTML(b.String()) // escaped by the section
		} else {
			if err := s.Markdown(&b); err != nil {
				return fmt.Errorf("report: section %s: %w", s.Key(), err)
			}
			v.Markdown = b.String()
		}
		page.Sections = append(page.Sections, v)
	}
	return htmlTemplates().ExecuteTemplate(w, "page", page)
}

// HTML implements HTMLSection: the totals, the matrix (each cell links to
// its worst case) and the failing cases.
func (s *Summary) HTML(w io.Writer) error {
	type cellView struct {
		Text, Class, Link string
		Empty             bool
	}
	type rowView struct {
		Op    string
		Cells []cellView
	}
	m := s.Matrix()
	anchors := anchorMap(s.Cases)
	v := struct {
		Totals   map[string]int
		Variants []string
		Rows     []rowView
		Failing  []row
		More     int
		Verdict  string
		Notes    []string
		NoFail   string
	}{Totals: s.Totals(), Variants: m.Variants, Verdict: verdictNote, Notes: matrixNotes(m), NoFail: noFailNote}
	for _, op := range m.Ops {
		r := rowView{Op: op}
		for _, variant := range m.Variants {
			c := m.Cell(op, variant)
			if c == nil {
				r.Cells = append(r.Cells, cellView{Empty: true})
				continue
			}
			class := "pass"
			switch {
			case c.Errors > 0:
				class = "error"
			case c.Fail > 0:
				class = "fail"
			}
			r.Cells = append(r.Cells, cellView{Text: c.text(func(s string) string { return s }), Class: class, Link: anchors[c.WorstCase]})
		}
		v.Rows = append(v.Rows, r)
	}
	for i, c := range s.failing() {
		if i == maxListed {
			v.More = len(s.failing()) - maxListed
			break
		}
		v.Failing = append(v.Failing, row{ID: c.ID, Anchor: anchors[c.ID], Verdict: c.Verdict, Class: verdictClass(c.Verdict), Why: reasonOf(c)})
	}
	return htmlTemplates().ExecuteTemplate(w, "summary", v)
}

// row is one case in a list of cases.
type row struct{ ID, Anchor, Verdict, Class, Tightness, Cycles, Why string }

// HTML implements HTMLSection: the tallies per op and target.
func (p *Performance) HTML(w io.Writer) error {
	type cellView struct{ Text, Class string }
	type rowView struct {
		Op    string
		Cells []cellView
	}
	v := struct {
		Intro   string
		Verdict string
		Targets []Target
		Rows    []rowView
		Notes   []string
	}{Intro: perfIntro, Verdict: perfNote, Targets: Targets}
	tl := p.tallies()
	for i := 0; i < len(tl); i += len(Targets) {
		r := rowView{Op: tl[i].Op}
		for j := range Targets {
			t := &tl[i+j]
			class := "pass"
			switch {
			case t.Fail > 0:
				class = "fail"
			case t.Pass == 0:
				class = "na"
			}
			r.Cells = append(r.Cells, cellView{t.text(func(s string) string { return s }), class})
		}
		v.Rows = append(v.Rows, r)
	}
	for _, t := range tl {
		if r := t.reasons(); r != "" {
			v.Notes = append(v.Notes, t.Op+", "+t.Metric+" n/a: "+r)
		}
	}
	for _, t := range Targets {
		if t.NotModelled != "" {
			v.Notes = append(v.Notes, t.Metric+": not modelled ("+t.NotModelled+")")
		}
		if t.Note != "" {
			v.Notes = append(v.Notes, t.Metric+": "+t.Note)
		}
	}
	return htmlTemplates().ExecuteTemplate(w, "performance", v)
}

// HTML implements HTMLSection: the charts.
func (p *Plots) HTML(w io.Writer) error {
	hist, heat, cyc, note, err := p.charts()
	if err != nil {
		return err
	}
	v := struct {
		Hist, Heat, Cycles []Chart
		HeatNote           string
	}{hist, heat, cyc, note}
	return htmlTemplates().ExecuteTemplate(w, "plots", v)
}

// HTML implements HTMLSection: an index of the cases, then per case,
// collapsed, its facts, the metrics and verdicts of every output, extra
// checks, the cost, its performance checklist and the failure report.
func (d *Details) HTML(w io.Writer) error {
	type output struct {
		Name                                                            string
		MaxAbs, MaxRel, MERE, MARE, RMSE, Cosine, Tightness, Ulp, Ambig string
		NonFinite                                                       int
	}
	type verdict struct {
		Output, Policy, Reason string
		Pass                   bool
	}
	type cost struct {
		Cycles, GMIn, GMOut, HBM, L2Hit, Vector, Cube, Overlap, Balance, UBPeak, Cores string
	}
	type caseView struct {
		row
		Op, Params, Dims, Dist, Seed, Error string
		Numerics, Labels, Failure           string
		Outputs                             []output
		Verdicts                            []verdict
		Cost                                *cost
		Checklist                           []Item
	}
	anchors := anchorMap(d.Cases)
	views := make([]caseView, len(d.Cases))
	for i := range d.Cases {
		c := &d.Cases[i]
		v := caseView{
			row: row{ID: c.ID, Anchor: anchors[c.ID], Verdict: c.Verdict, Class: verdictClass(c.Verdict), Tightness: num(c.Tightness()), Cycles: cycles(c), Why: reasonOf(c)},
			Op:  c.Op, Params: params(c), Dims: dims(c.Dims), Dist: c.Dist, Seed: strconv.FormatUint(c.Seed, 10),
			Labels: strings.Join(c.Labels, ", "), Error: c.Error, Numerics: c.Numerics, Failure: c.Failure,
		}
		if c.Error == "" {
			for _, o := range c.Outputs {
				m := o.Metrics
				v.Outputs = append(v.Outputs, output{
					Name:   fmt.Sprintf("%s %s%v", o.Name, o.DType, o.Shape),
					MaxAbs: num(m.MaxAbs), MaxRel: num(m.MaxRel), MERE: num(m.MERE), MARE: num(m.MARE), RMSE: num(m.RMSE),
					Cosine: num(m.Cosine), Tightness: num(m.Tightness), Ulp: ulpSummary(m.UlpHist), NonFinite: m.NonFiniteMismatch,
					Ambig: fmt.Sprintf("%d (%d)", m.Ambiguous, m.AmbiguousTaken),
				})
				for _, vd := range o.Verdicts {
					v.Verdicts = append(v.Verdicts, verdict{o.Name, vd.Policy, vd.Reason, vd.Pass})
				}
			}
			for _, k := range c.Checks {
				v.Verdicts = append(v.Verdicts, verdict{"—", k.Name, k.Detail, k.Pass})
			}
			if k := c.Cost; k != nil {
				i64 := func(x int64) string { return strconv.FormatInt(x, 10) }
				v.Cost = &cost{i64(k.Cycles), i64(k.GMBytesIn), i64(k.GMBytesOut), i64(k.HBMBytes), i64(k.L2HitBytes), num(float64(k.VectorUtil)), num(float64(k.CubeUtil)),
					num(float64(k.Overlap)), num(float64(k.LoadBalance)), i64(k.UBPeakBytes), strconv.Itoa(k.BlockDim)}
				v.Checklist = checklist(c)
			}
		}
		views[i] = v
	}
	return htmlTemplates().ExecuteTemplate(w, "details", struct {
		Cases []caseView
		Note  string
	}{views, casesNote})
}

// HTML implements HTMLSection: the description, the table and the RMSE
// plot.
func (t *PrecisionTable) HTML(w io.Writer) error {
	plot, err := rmsePlot(t.Rows)
	if err != nil {
		return err
	}
	type row struct {
		Dist, Mode, Cycles, GMBytes, HBMBytes, CubeUtil, MaxRel, MERE, RMSE, Cosine, Tightness string
		Pass                                                                                   bool
	}
	f := func(format string, x float64) string { return fmt.Sprintf(format, x) }
	v := struct {
		C       PrecisionConfig
		Backend string
		Rows    []row
		Plot    template.HTML
		Note    string
	}{C: t.Config, Backend: t.Backend, Plot: plot, Note: precisionNote}
	for _, r := range t.Rows {
		v.Rows = append(v.Rows, row{
			r.Dist, r.Mode, strconv.FormatInt(r.Cycles, 10), strconv.FormatInt(r.GMBytes, 10), strconv.FormatInt(r.HBMBytes, 10), f("%.3f", float64(r.CubeUtil)),
			f("%.3g", float64(r.MaxRel)), f("%.3g", float64(r.MERE)), f("%.3g", float64(r.RMSE)), f("%.9f", float64(r.Cosine)),
			f("%.3g", float64(r.Tightness)), r.BoundPassed,
		})
	}
	return htmlTemplates().ExecuteTemplate(w, "precision", v)
}

// anchorMap returns a unique element id per case ID: "case-" and the
// Markdown anchor, with "-2", "-3", ... on collisions.
func anchorMap(cases []Case) map[string]string {
	out := map[string]string{}
	seen := map[string]bool{}
	for i := range cases {
		base := "case-" + anchor(cases[i].ID)
		a := base
		for n := 2; seen[a]; n++ {
			a = base + "-" + strconv.Itoa(n)
		}
		seen[a] = true
		out[cases[i].ID] = a
	}
	return out
}

func verdictClass(v string) string {
	switch v {
	case harness.VerdictPass:
		return "pass"
	case harness.VerdictFail, harness.VerdictSlower, harness.VerdictInefficient:
		return "fail"
	}
	return "error"
}

// htmlTemplates are the HTML report's page and sections, parsed on first
// use rather than at package initialisation, which every process of the
// CLI runs: a `run` does not write a report, and parsing them cost every
// process 0.5 ms of its start and 1 MiB of resident pages.
var htmlTemplates = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Parse(`
{{- define "page" -}}
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 1.2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1, h2, h3 { line-height: 1.2; }
h1 { margin-bottom: .2em; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; vertical-align: top; }
th { background: #f4f4f4; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafafa; }
table.matrix td { text-align: center; white-space: nowrap; }
table.matrix td.pass { background: #e6f4ea; }
table.matrix td.fail, table.matrix td.error { background: #fde7e9; }
table.matrix td.na { color: #666; }
.pass { color: #1a7f37; }
.fail, .error { color: #cf222e; font-weight: bold; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; font-size: 12px; }
code { font-size: 12px; }
figure { margin: .5em 1em .5em 0; display: inline-block; vertical-align: top; }
figcaption { font-size: 12px; color: #555; }
svg { max-width: 100%; height: auto; }
ul.meta { list-style: none; padding: 0; margin: 0; color: #555; display: flex; gap: 1.5em; flex-wrap: wrap; }
nav { margin: .6em 0; font-size: 13px; }
nav a { margin-right: 1em; }
details { border: 1px solid #e4e4e4; border-radius: 4px; margin: .3em 0; padding: .2em .6em; }
details > summary { cursor: pointer; }
details[open] { background: #fcfcfc; }
p.note { color: #555; font-size: 13px; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
{{- if .Meta}}
<ul class="meta">
{{- range .Meta}}
<li><b>{{.K}}</b>: {{.V}}</li>
{{- end}}
</ul>
{{- end}}
<nav>{{range .Sections}}<a href="#{{.ID}}">{{.Name}}</a>{{end}}</nav>
{{- range .Sections}}
<section id="{{.ID}}">
{{if .Body}}{{.Body}}{{else}}<pre class="markdown">{{.Markdown}}</pre>
{{end -}}
</section>
{{- end}}
<script>
// Open the collapsed case a link points to, so that following it shows it.
function openTarget(hash) {
  var id = decodeURIComponent((typeof hash === "string" ? hash : location.hash).slice(1));
  var el = id && document.getElementById(id);
  if (el && el.tagName === "DETAILS") { el.open = true; }
}
window.addEventListener("hashchange", openTarget);
document.addEventListener("click", function (e) {
  var a = e.target.closest && e.target.closest("a[href^='#']");
  if (a) { openTarget(a.getAttribute("href")); }
});
openTarget();
</script>
</body>
</html>
{{end -}}

{{- define "summary" -}}
<h2>Summary</h2>
<p>{{index .Totals "cases"}} cases: <span class="pass">{{index .Totals "pass"}} pass</span>, {{index .Totals "fail"}} fail, {{index .Totals "input error"}} input error, {{index .Totals "backend error"}} backend error.
Each cell: cases passing, and the worst bound tightness (max |err|/bound over the outputs; above 1 is out of bound); it links to that case.</p>
<p class="note verdict">{{.Verdict}}</p>
<table class="matrix">
<thead><tr><th>op</th>{{range .Variants}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr><th>{{.Op}}</th>{{range .Cells}}{{if .Empty}}<td></td>{{else}}<td class="{{.Class}}"><a href="#{{.Link}}">{{.Text}}</a></td>{{end}}{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- range .Notes}}
<p class="note">{{.}}</p>
{{- end}}
{{- if .Failing}}
<p>Failing cases:</p>
<ul>
{{- range .Failing}}
<li><a href="#{{.Anchor}}">{{.ID}}</a>: <span class="{{.Class}}">{{.Verdict}}</span> — {{.Why}}</li>
{{- end}}
{{- if .More}}
<li>… and {{.More}} more (see Cases)</li>
{{- end}}
</ul>
{{- else}}
<p class="pass">{{.NoFail}}</p>
{{- end}}
{{end -}}

{{- define "performance" -}}
<h2>Performance checklist</h2>
<p class="note verdict">{{.Verdict}}</p>
<p class="note">{{.Intro}}</p>
<table class="matrix">
<thead><tr><th>op</th>{{range .Targets}}<th>{{.Metric}} {{.Target}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Rows}}
<tr><th>{{.Op}}</th>{{range .Cells}}<td class="{{.Class}}">{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
<ul class="notes">
{{- range .Notes}}
<li>{{.}}</li>
{{- end}}
</ul>
{{end -}}

{{- define "plots" -}}
<h2>Plots</h2>
<h3>Error in ulps per op and dtype/mode</h3>
{{- range .Hist}}
<figure id="{{.ID}}" class="plot">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{- end}}
<h3>Error heatmaps of failing cases</h3>
{{- range .Heat}}
<figure id="{{.ID}}" class="plot">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{- end}}
{{- if .HeatNote}}
<p class="note">{{.HeatNote}}</p>
{{- end}}
<h3>Modeled cycles against size, with the roofline</h3>
{{- range .Cycles}}
<figure id="{{.ID}}" class="plot">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{- end}}
{{end -}}

{{- define "details" -}}
<h2>Cases</h2>
<table>
<thead><tr><th>case</th><th>verdict</th><th>tightness</th><th>cycles</th><th>reason</th></tr></thead>
<tbody>
{{- range .Cases}}
<tr><td><a href="#{{.Anchor}}">{{.ID}}</a></td><td class="{{.Class}}">{{.Verdict}}</td><td class="n">{{.Tightness}}</td><td class="n">{{.Cycles}}</td><td>{{.Why}}</td></tr>
{{- end}}
</tbody>
</table>
<p class="note">{{.Note}}</p>
{{- range .Cases}}
<details id="{{.Anchor}}" class="case">
<summary><b>{{.ID}}</b> — <span class="{{.Class}}">{{.Verdict}}</span>, tightness {{.Tightness}}, cycles {{.Cycles}}{{if .Why}} — {{.Why}}{{end}}</summary>
<ul>
<li>op <code>{{.Op}}</code>, params <code>{{.Params}}</code>, dims <code>{{.Dims}}</code>, dist <code>{{.Dist}}</code>, seed {{.Seed}}</li>
{{- if .Numerics}}
<li>numerics: {{.Numerics}}</li>
{{- end}}
{{- if .Labels}}
<li>labels: {{.Labels}}</li>
{{- end}}
{{- if .Error}}
<li>error: <code>{{.Error}}</code></li>
{{- end}}
</ul>
{{- if .Outputs}}
<table>
<thead><tr><th>output</th><th>max abs</th><th>max rel</th><th>MERE</th><th>MARE</th><th>RMSE</th><th>cosine</th><th>tightness</th><th>ulp histogram</th><th>non-finite mismatches</th><th>ambiguous (taken)</th></tr></thead>
<tbody>
{{- range .Outputs}}
<tr><td>{{.Name}}</td><td class="n">{{.MaxAbs}}</td><td class="n">{{.MaxRel}}</td><td class="n">{{.MERE}}</td><td class="n">{{.MARE}}</td><td class="n">{{.RMSE}}</td><td class="n">{{.Cosine}}</td><td class="n">{{.Tightness}}</td><td>{{.Ulp}}</td><td class="n">{{.NonFinite}}</td><td class="n">{{.Ambig}}</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
{{- if .Verdicts}}
<table>
<thead><tr><th>output</th><th>policy</th><th>verdict</th><th>reason</th></tr></thead>
<tbody>
{{- range .Verdicts}}
<tr><td>{{.Output}}</td><td>{{.Policy}}</td>{{if .Pass}}<td class="pass">pass</td>{{else}}<td class="fail">fail</td>{{end}}<td>{{.Reason}}</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
{{- with .Cost}}
<table>
<thead><tr><th>cycles</th><th>GM bytes in</th><th>GM bytes out</th><th>HBM bytes</th><th>L2 hit bytes</th><th>vector util</th><th>cube util</th><th>overlap</th><th>load balance</th><th>UB peak bytes</th><th>cores</th></tr></thead>
<tbody><tr><td class="n">{{.Cycles}}</td><td class="n">{{.GMIn}}</td><td class="n">{{.GMOut}}</td><td class="n">{{.HBM}}</td><td class="n">{{.L2Hit}}</td><td class="n">{{.Vector}}</td><td class="n">{{.Cube}}</td><td class="n">{{.Overlap}}</td><td class="n">{{.Balance}}</td><td class="n">{{.UBPeak}}</td><td class="n">{{.Cores}}</td></tr></tbody>
</table>
{{- else}}{{if not .Error}}
<p>No cost model (the backend reports none).</p>
{{- end}}{{end}}
{{- if .Checklist}}
<p>Performance checklist: {{range $i, $it := .Checklist}}{{if $i}}; {{end}}{{$it.Metric}} <span class="{{$it.Status}}">{{$it.Status}}</span>{{if $it.Reason}} ({{$it.Reason}}){{end}}{{end}}.</p>
{{- end}}
{{- if .Failure}}
<pre>{{.Failure}}</pre>
{{- end}}
</details>
{{- end}}
{{end -}}
{{- define "precision" -}}
<h2>GEMM precision modes</h2>
<p>One float64 source A [{{.C.M}}×{{.C.K}}], B [{{.C.K}}×{{.C.N}}] per distribution (seed {{.C.Seed}}), cast to each mode's input dtype
(int8: symmetric per-row/per-column scales, max |x| → 127), run on backend {{.Backend}}. Errors are against the float64
product of the source; <em>bound</em> says whether the output is within the mode's own rigorous bound, with its tightness.</p>
<table>
<thead><tr><th>dist</th><th>mode</th><th>cycles</th><th>GM bytes</th><th>HBM bytes</th><th>cube util</th><th>max rel err</th><th>MERE</th><th>RMSE</th><th>cosine</th><th>bound (tightness)</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr><td>{{.Dist}}</td><td>{{.Mode}}</td><td class="n">{{.Cycles}}</td><td class="n">{{.GMBytes}}</td><td class="n">{{.HBMBytes}}</td><td class="n">{{.CubeUtil}}</td><td class="n">{{.MaxRel}}</td><td class="n">{{.MERE}}</td><td class="n">{{.RMSE}}</td><td class="n">{{.Cosine}}</td>{{if .Pass}}<td class="pass">pass ({{.Tightness}})</td>{{else}}<td class="fail">FAIL ({{.Tightness}})</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
<p class="note">{{.Note}}</p>
{{- if .Plot}}
<figure>{{.Plot}}</figure>
{{- end}}
{{end -}}
`))
})
