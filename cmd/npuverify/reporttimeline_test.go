package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/report"
)

// TestReportTimelines: report --op vector_add draws one timeline, of the
// vector_add case with the most modelled cycles, with the instructions,
// cores and rows of that case's schedule, and report.html holds it as an
// SVG figure; the case is the one check --trace writes, and the drawn
// instruction count is that file's span count.
func TestReportTimelines(t *testing.T) {
	out := t.TempDir()
	wantCLI(t, 0, nil, "report", "--op", "vector_add", "--out", out, "--format", "json,html")
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Timelines report.Timelines `json:"timelines"`
		Cases     []report.Case    `json:"cases"`
	}
	if err := json.Unmarshal(data, &js); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	want := report.TimelineCases(js.Cases)
	if len(want) != 1 || len(js.Timelines.Timelines) != 1 {
		t.Fatalf("report --op vector_add: timelines %+v, want one, of %q", js.Timelines, want)
	}
	tl := js.Timelines.Timelines[0]
	if tl.Case != want[0] || tl.Error != "" || tl.Spans == 0 || tl.Cores == 0 || len(tl.Rows) == 0 {
		t.Fatalf("report --op vector_add: timeline %+v, want one of %s with spans", tl, want[0])
	}
	for i := range js.Cases {
		if c := &js.Cases[i]; c.ID == tl.Case && c.Cost.Cycles != tl.Cycles {
			t.Errorf("timeline of %s: %d cycles, the case's cost %d", tl.Case, tl.Cycles, c.Cost.Cycles)
		}
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `<figure id="timeline-vector_add" class="timeline">`+"\n<svg") {
		t.Error("report.html lacks the figure timeline-vector_add with its SVG")
	}
	dir := filepath.Join(t.TempDir(), "traces")
	wantCLI(t, 0, nil, "check", "--run", "^"+tl.Case+"$", "--trace", dir)
	b, err := os.ReadFile(traceFileName(dir, tl.Case))
	if err != nil {
		t.Fatal(err)
	}
	spans, _, err := checkChromeTrace(b)
	if err != nil || spans != tl.Spans {
		t.Errorf("check --trace %s: %d spans (%v), the report's timeline %d", tl.Case, spans, err, tl.Spans)
	}
}

// TestReportMergeOtherStoreTimelines: results merged from a store other
// than the embedded one get a note in place of timelines (the report
// traces again only the embedded store's cases, and must not draw
// another case of the same ID), and the report still exits 0.
func TestReportMergeOtherStoreTimelines(t *testing.T) {
	store := gemmStore(t)
	dir := t.TempDir()
	res := filepath.Join(dir, "r.json")
	wantCLI(t, 0, nil, "check", "--golden", store, "--json", res)
	out := filepath.Join(dir, "rep")
	wantCLI(t, 0, nil, "report", "--merge", res, "--out", out, "--format", "json,md", "--precision", "off", "--attention", "off", "--decoding", "off", "--layout", "off")
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Timelines report.Timelines `json:"timelines"`
	}
	if err := json.Unmarshal(data, &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Timelines.Timelines) != 0 || !strings.Contains(js.Timelines.Note, "No timeline: the cases come from the store "+store) {
		t.Errorf("report --merge of a check --golden %s: timelines %+v, want none and a note naming the store", store, js.Timelines)
	}
}
