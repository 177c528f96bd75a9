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

// HTML writes the whole report as one self-contained HTML page: the title
// and meta, then each section in order; plots are inline SVG, styles are
// inline, and there is no script.
func (r *Report) HTML(w io.Writer) error {
	type kv struct{ K, V string }
	type sec struct {
		ID       string
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
	for _, s := range r.Sections {
		var b bytes.Buffer
		v := sec{ID: "section-" + s.Key()}
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
	return htmlTemplates.ExecuteTemplate(w, "page", page)
}

// HTML implements HTMLSection: the totals, the tightness plot and the
// table, each case linking to its details.
func (s *Summary) HTML(w io.Writer) error {
	plot, err := tightnessPlot(s.Cases)
	if err != nil {
		return err
	}
	type row struct{ ID, Anchor, Verdict, Class, Tightness, Cycles string }
	v := struct {
		Totals map[string]int
		Plot   template.HTML
		Rows   []row
	}{Totals: s.Totals(), Plot: plot}
	anchors := htmlAnchors(s.Cases)
	for i := range s.Cases {
		c := &s.Cases[i]
		v.Rows = append(v.Rows, row{c.ID, anchors[i], c.Verdict(), verdictClass(c.Verdict()), num(c.Tightness()), cycles(c)})
	}
	return htmlTemplates.ExecuteTemplate(w, "summary", v)
}

// HTML implements HTMLSection: per case its facts, the metrics and
// verdicts of every output, extra checks, the cost and the failure report.
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
		Cycles, GMIn, GMOut, Vector, Cube, Overlap, Balance, UBPeak, Cores string
	}
	type caseView struct {
		ID, Anchor, Verdict, Class          string
		Op, Params, Dims, Dist, Seed, Error string
		Numerics, Labels, Failure           string
		Outputs                             []output
		Verdicts                            []verdict
		Cost                                *cost
	}
	anchors := htmlAnchors(d.Cases)
	views := make([]caseView, len(d.Cases))
	for i := range d.Cases {
		c := &d.Cases[i]
		hc := c.Ran()
		v := caseView{
			ID: c.ID, Anchor: anchors[i], Verdict: c.Verdict(), Class: verdictClass(c.Verdict()),
			Op: hc.Op, Params: params(c), Dims: dims(hc.Dims), Dist: hc.Dist, Seed: strconv.FormatUint(hc.Seed, 10),
			Labels: strings.Join(hc.Labels, ", "),
		}
		if c.Err != nil {
			v.Error = c.Err.Error()
		}
		if c.Result != nil {
			v.Numerics = c.Result.Numerics.String()
		}
		if c.Err == nil && c.Result != nil && c.Result.Verify != nil {
			vr := c.Result.Verify
			for _, o := range vr.Outputs {
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
			v.Failure = vr.Failure()
			if k := c.Result.Cost; k != nil {
				i64 := func(x int64) string { return strconv.FormatInt(x, 10) }
				v.Cost = &cost{i64(k.Cycles), i64(k.GMBytesIn), i64(k.GMBytesOut), num(k.VectorUtil), num(k.CubeUtil),
					num(k.Overlap), num(k.LoadBalance), i64(k.UBPeakBytes), strconv.Itoa(k.BlockDim)}
			}
		}
		views[i] = v
	}
	return htmlTemplates.ExecuteTemplate(w, "details", views)
}

// HTML implements HTMLSection: the description, the table and the RMSE
// plot.
func (t *PrecisionTable) HTML(w io.Writer) error {
	plot, err := rmsePlot(t.Rows)
	if err != nil {
		return err
	}
	type row struct {
		Dist, Mode, Cycles, GMBytes, CubeUtil, MaxRel, MERE, RMSE, Cosine, Tightness string
		Pass                                                                         bool
	}
	f := func(format string, x float64) string { return fmt.Sprintf(format, x) }
	v := struct {
		C       PrecisionConfig
		Backend string
		Rows    []row
		Plot    template.HTML
	}{C: t.Config, Backend: t.Backend, Plot: plot}
	for _, r := range t.Rows {
		v.Rows = append(v.Rows, row{
			r.Dist, r.Mode, strconv.FormatInt(r.Cycles, 10), strconv.FormatInt(r.GMBytes, 10), f("%.3f", float64(r.CubeUtil)),
			f("%.3g", float64(r.MaxRel)), f("%.3g", float64(r.MERE)), f("%.3g", float64(r.RMSE)), f("%.9f", float64(r.Cosine)),
			f("%.3g", float64(r.Tightness)), r.BoundPassed,
		})
	}
	return htmlTemplates.ExecuteTemplate(w, "precision", v)
}

// htmlAnchors returns a unique element id per case: "case-" and the
// Markdown anchor, with "-2", "-3", ... on collisions.
func htmlAnchors(cases []harness.Outcome) []string {
	out := make([]string, len(cases))
	seen := map[string]bool{}
	for i := range cases {
		base := "case-" + anchor(cases[i].ID)
		a := base
		for n := 2; seen[a]; n++ {
			a = base + "-" + strconv.Itoa(n)
		}
		seen[a] = true
		out[i] = a
	}
	return out
}

func verdictClass(v string) string {
	switch v {
	case harness.VerdictPass:
		return "pass"
	case harness.VerdictFail:
		return "fail"
	}
	return "error"
}

var htmlTemplates = template.Must(template.New("report").Parse(`
{{- define "page" -}}
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1, h2, h3 { line-height: 1.2; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
h3 { margin-top: 1.6em; }
table { border-collapse: collapse; margin: .6em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; vertical-align: top; }
th { background: #f4f4f4; text-align: left; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tbody tr:nth-child(even) { background: #fafafa; }
.pass { color: #1a7f37; }
.fail, .error { color: #cf222e; font-weight: bold; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; font-size: 12px; }
code { font-size: 12px; }
figure { margin: 1em 0; }
svg { max-width: 100%; height: auto; }
ul.meta { list-style: none; padding: 0; color: #555; }
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
{{- range .Sections}}
<section id="{{.ID}}">
{{if .Body}}{{.Body}}{{else}}<pre class="markdown">{{.Markdown}}</pre>
{{end -}}
</section>
{{- end}}
</body>
</html>
{{end -}}

{{- define "summary" -}}
<h2>Summary</h2>
<p>{{index .Totals "cases"}} cases: {{index .Totals "pass"}} pass, {{index .Totals "fail"}} fail, {{index .Totals "input error"}} input error, {{index .Totals "backend error"}} backend error.</p>
{{- if .Plot}}
<figure>{{.Plot}}</figure>
{{- end}}
<table>
<thead><tr><th>case</th><th>verdict</th><th>tightness</th><th>cycles</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr><td><a href="#{{.Anchor}}">{{.ID}}</a></td><td class="{{.Class}}">{{.Verdict}}</td><td class="n">{{.Tightness}}</td><td class="n">{{.Cycles}}</td></tr>
{{- end}}
</tbody>
</table>
{{end -}}

{{- define "details" -}}
<h2>Cases</h2>
{{- range .}}
<h3 id="{{.Anchor}}">{{.ID}}</h3>
<ul>
<li>verdict: <span class="{{.Class}}">{{.Verdict}}</span></li>
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
<thead><tr><th>cycles</th><th>GM bytes in</th><th>GM bytes out</th><th>vector util</th><th>cube util</th><th>overlap</th><th>load balance</th><th>UB peak bytes</th><th>cores</th></tr></thead>
<tbody><tr><td class="n">{{.Cycles}}</td><td class="n">{{.GMIn}}</td><td class="n">{{.GMOut}}</td><td class="n">{{.Vector}}</td><td class="n">{{.Cube}}</td><td class="n">{{.Overlap}}</td><td class="n">{{.Balance}}</td><td class="n">{{.UBPeak}}</td><td class="n">{{.Cores}}</td></tr></tbody>
</table>
{{- else}}{{if not .Error}}
<p>No cost model (the backend reports none).</p>
{{- end}}{{end}}
{{- if .Failure}}
<pre>{{.Failure}}</pre>
{{- end}}
{{- end}}
{{end -}}

{{- define "precision" -}}
<h2>GEMM precision modes</h2>
<p>One float64 source A [{{.C.M}}×{{.C.K}}], B [{{.C.K}}×{{.C.N}}] per distribution (seed {{.C.Seed}}), cast to each mode's input dtype
(int8: symmetric per-row/per-column scales, max |x| → 127), run on backend {{.Backend}}. Errors are against the float64
product of the source; <em>bound</em> says whether the output is within the mode's own rigorous bound, with its tightness.</p>
<table>
<thead><tr><th>dist</th><th>mode</th><th>cycles</th><th>GM bytes</th><th>cube util</th><th>max rel err</th><th>MERE</th><th>RMSE</th><th>cosine</th><th>bound (tightness)</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr><td>{{.Dist}}</td><td>{{.Mode}}</td><td class="n">{{.Cycles}}</td><td class="n">{{.GMBytes}}</td><td class="n">{{.CubeUtil}}</td><td class="n">{{.MaxRel}}</td><td class="n">{{.MERE}}</td><td class="n">{{.RMSE}}</td><td class="n">{{.Cosine}}</td>{{if .Pass}}<td class="pass">pass ({{.Tightness}})</td>{{else}}<td class="fail">FAIL ({{.Tightness}})</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- if .Plot}}
<figure>{{.Plot}}</figure>
{{- end}}
{{end -}}
`))
