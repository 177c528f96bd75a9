package report

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/quality"
)

const evilID = `vector_add/<script>alert("x")</script>&`

// htmlReport is cases(t), a case whose ID and error hold markup, the GEMM
// precision table, a section without an HTML method, and the
// attention-quality and decoding sections. The attention table is
// quality's (float64, linked by this package anyway); the precision and
// decoding tables are fixtures, as computing them takes a backend.
func htmlReport(t *testing.T, cs []harness.Outcome) *Report {
	t.Helper()
	r := New("npuverify <report>", cs)
	r.Meta = map[string]string{"backend": "emulator", "profile": "<b>ascend910b</b>"}
	if err := r.InsertAfter("summary", precisionFixture()); err != nil {
		t.Fatal(err)
	}
	r.Add(precisionTable{rows: [][2]string{{"<i>mode</i>", "0.01"}}})
	qc := quality.DefaultConfig()
	qc.Tokens, qc.Queries = 64, 4
	qt, err := quality.AttentionQuality(qc)
	if err != nil {
		t.Fatal(err)
	}
	r.Add(&AttentionQuality{Table: qt})
	r.Add(decodingFixture())
	r.Add(timelineFixture(t))
	return r
}

// modelPlots are the figures of the attention-quality, decoding and
// timeline sections, which every rendering of htmlReport must hold.
var modelPlots = []string{"plot-attention-1", "plot-attention-2", "plot-decoding-1", "plot-decoding-2", "timeline-gemm", "timeline-vector_add"}

func htmlCases(t *testing.T) []harness.Outcome {
	cs := cases(t)
	evil := cs[len(cs)-1]
	evil.ID, evil.Err = evilID, &harness.InputError{Err: errors.New(`<script>alert(1)</script>`)}
	return append(cs, evil)
}

func renderHTML(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.HTML(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// textOf is the text content of n.
func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

func TestReportHTML(t *testing.T) {
	cs := htmlCases(t)
	page := renderHTML(t, htmlReport(t, cs))
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var h3s, tds, pres, scripts []string
	ids := map[string]bool{}
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		if n.Namespace == "svg" && n.Data == "title" {
			count["svg title"]++ // a timeline row's tooltip, not the page's title
		} else {
			count[n.Data]++
		}
		for _, a := range n.Attr {
			if a.Key == "id" {
				if ids[a.Val] {
					t.Errorf("duplicate id %q", a.Val)
				}
				ids[a.Val] = true
			}
			if (a.Key == "href" || a.Key == "src") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q>: the page must be self-contained", n.Data, a.Key, a.Val)
			}
		}
		switch n.Data {
		case "summary":
			h3s = append(h3s, textOf(n))
		case "script":
			scripts = append(scripts, textOf(n))
		case "td":
			tds = append(tds, textOf(n))
		case "pre":
			pres = append(pres, textOf(n))
		}
	}
	// One script, the page's own (it opens a collapsed case on a link).
	if count["script"] != 1 || !strings.Contains(scripts[0], "openTarget") || count["link"] != 0 || count["img"] != 0 {
		t.Errorf("script, link or img elements: %v", count)
	}
	if count["svg"] < 3 || count["title"] != 1 || count["h1"] != 1 {
		t.Errorf("element counts %v, want ≥ 3 svg (RMSE, ulps, cycles), one title and h1", count)
	}
	for _, c := range cs {
		if !strings.Contains(strings.Join(h3s, "\n"), c.ID) {
			t.Errorf("no collapsed <details> for case %q", c.ID)
		}
		if !strings.Contains(strings.Join(tds, "\n"), c.ID) {
			t.Errorf("summary table lacks case %q", c.ID)
		}
	}
	cells := "\n" + strings.Join(tds, "\n") + "\n"
	for _, mode := range ops.GEMMModes() {
		if !strings.Contains(cells, "\n"+mode.Name+"\n") {
			t.Errorf("precision table lacks mode %s", mode.Name)
		}
	}
	for _, s := range []string{"\ncancel\n", "\nbudget cycles\n", "\ncycles 10 ≤ budget 12\n", "\nfail\n", "\n" + evilID + "\n"} {
		if !strings.Contains(cells, s) {
			t.Errorf("no table cell %q", strings.TrimSpace(s))
		}
	}
	// The section without an HTML method is its Markdown, verbatim.
	if !strings.Contains(strings.Join(pres, "\n"), "## Precision modes\n\n| mode | tightness |\n| --- | --- |\n| <i>mode</i> | 0.01 |") {
		t.Errorf("fallback section missing: %q", pres)
	}
	// Markup in IDs, errors, meta and the title is escaped.
	for _, s := range []string{"<script>alert", "<i>mode", "<b>ascend", "<report>"} {
		if strings.Contains(page, s) {
			t.Errorf("page holds unescaped %q", s)
		}
	}
	for _, s := range []string{"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;", "<title>npuverify &lt;report&gt;</title>", "<section id=\"section-gemm_precision_modes\">",
		"<section id=\"section-attention_quality\">", "<section id=\"section-incremental_decoding\">"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	// Every inline SVG is well-formed XML.
	svgs := regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1)
	if len(svgs) < 2 {
		t.Fatalf("%d <svg> elements", len(svgs))
	}
	for i, s := range svgs {
		d := xml.NewDecoder(strings.NewReader(s))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("svg %d: %v", i, err)
			}
		}
	}
	// Precision RMSE plot, then the ulp histogram and cycles of vector_add.
	if !strings.Contains(svgs[0], "int8_int32acc") || !strings.Contains(svgs[1], "share of elements") || !strings.Contains(svgs[2], "roofline bound") {
		t.Error("plots lack their labels")
	}
	for _, id := range modelPlots {
		if !ids[id] {
			t.Errorf("no figure %q", id)
		}
	}
	// One case fails, a 1-D output: no heatmap, and the page says why not.
	if !strings.Contains(page, "<h3>Error heatmaps of failing cases</h3>") {
		t.Error("no heatmap heading")
	}
}

func TestReportHTMLDeterministic(t *testing.T) {
	cs := htmlCases(t)
	rev := make([]harness.Outcome, len(cs))
	for i := range cs {
		rev[len(cs)-1-i] = cs[i]
	}
	if renderHTML(t, htmlReport(t, cs)) != renderHTML(t, htmlReport(t, rev)) {
		t.Error("HTML report depends on the order of the cases")
	}
}

func TestWriteFilesHTML(t *testing.T) {
	dir := t.TempDir()
	paths, err := New("r", cases(t)[:2]).WriteFiles(dir, []string{"html"})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 1 || filepath.Base(paths[0]) != "report.html" {
		t.Fatalf("paths %v", paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil || !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("report.html: %v\n%.300s", err, b)
	}
}
