package report

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/verify"
)

// explainedReport is the report of cases(t) (vector_add, seed 7, one of
// them failing on a backend that writes zeros) plus a case of an op with
// neither dtype nor mode and a GEMM precision table with a cancel row, as
// Markdown and as HTML (unescaped, so that both are searched alike).
func explainedReport(t *testing.T) (md, page string) {
	t.Helper()
	cs := New("r", cases(t)).Details.Cases
	cs = append(cs, Case{ID: "sparse_compress/copy", Op: "sparse_compress", Verdict: "pass", Policies: []string{"exact"},
		Outputs: []Output{{Name: "idx", DType: "int32", Shape: []int{4}, Metrics: verify.Metrics{Tightness: 0}}}})
	for i := range cs {
		if cs[i].ID == "vector_add/fp16_special" {
			cs[i].Outputs[0].Metrics.Tightness = 1 // a tie
		}
	}
	r := FromCases("npuverify report", cs)
	r.Add(&PrecisionTable{Config: PrecisionConfig{M: 8, K: 8, N: 8, Seed: 1}, Backend: "emulator", Rows: []PrecisionRow{
		{Dist: "cancel", Mode: "int8_int32acc", MaxRel: 2e5, Cosine: 0.66, RMSE: 0.03, BoundPassed: true, Tightness: 1}}})
	var m, h bytes.Buffer
	if err := r.Markdown(&m); err != nil {
		t.Fatal(err)
	}
	if err := r.HTML(&h); err != nil {
		t.Fatal(err)
	}
	return m.String(), html.UnescapeString(h.String())
}

// TestReportExplainsItself: a reader finds, where they stop, what counts
// towards the verdict (under the totals, before the performance checklist
// with its red cells, which says it does not count), the reason beside
// every FAIL in the index of cases, and under each table a line on the
// figures that look alarming and are not: the — column, tightness exactly
// 1 and 0, the GEMM table's relative error and cosine on cancelling sums.
func TestReportExplainsItself(t *testing.T) {
	md, page := explainedReport(t)
	const failing = "vector_add/fp32_zero"
	for format, doc := range map[string]string{"md": md, "html": page} {
		perf := max(strings.Index(doc, "## Performance checklist"), strings.Index(doc, "<h2>Performance checklist"))
		for _, c := range []struct{ what, want string }{
			{"what counts towards the verdict", "What counts towards the verdict and the exit code"},
			{"the checklist does not count", "Not part of the verdict: a fail here is a cost-model target"},
			{"relative error near zero", "a tiny absolute error is a huge relative one"},
			{"the — column", "The — column holds the cases that name neither a dtype nor a mode"},
			{"tightness exactly 1", "A worst tightness of exactly 1 uses the whole bound and passes"},
			{"tightness 0", "A tightness of 0 means every compared element is exact"},
			{"FAIL beside tightness ≤ 1", "A case can fail with tightness ≤ 1 when what failed is not the bound"},
		} {
			if !strings.Contains(doc, c.want) {
				t.Errorf("vector_add cases seed 7 + sparse_compress + precision table, %s report: no line on %s: want %q", format, c.what, c.want)
			}
		}
		if v := strings.Index(doc, "What counts towards the verdict"); v < 0 || perf < 0 || v > perf {
			t.Errorf("vector_add cases seed 7, %s report: the verdict note is at byte %d, the performance checklist at %d: want the note first", format, v, perf)
		}
		// The index of cases shows the failing case's reason on its row.
		var row string
		for _, l := range strings.Split(doc, "\n") {
			if strings.Contains(l, failing) && (strings.HasPrefix(l, "| [") || strings.HasPrefix(l, "<tr><td><a")) {
				row = l
			}
		}
		for _, want := range []string{`output "z"`, "out of bound"} {
			if !strings.Contains(row, want) {
				t.Errorf("vector_add dtype=fp32 seed=7 (%s), %s report: index row %q: want its reason, containing %q", failing, format, row, want)
			}
		}
	}
	// A note explains only what is on the page.
	r := FromCases("r", New("r", cases(t)[:1]).Details.Cases)
	var m bytes.Buffer
	if err := r.Markdown(&m); err != nil {
		t.Fatal(err)
	}
	if s := m.String(); strings.Contains(s, "The — column") || !strings.Contains(s, noFailNote) {
		t.Errorf("vector_add fp16_special seed 7 alone: got a note on the — column (%v) or no %q (%v), want neither missing nor extra",
			strings.Contains(s, "The — column"), noFailNote, strings.Contains(s, noFailNote))
	}
}

// TestVariantCacheDType: a KV-cache op's case whose labels name no dtype
// sits in its cache's column, not in "—" beside the ops with no precision.
func TestVariantCacheDType(t *testing.T) {
	c := Case{ID: "decode_attention/paged_int8_long", Op: "decode_attention", Params: map[string]string{"cache_dtype": "int8", "layout": "paged"}}
	if got := c.Variant(); got != "int8" {
		t.Errorf("decode_attention params %v labels %v: Variant got %q, want %q", c.Params, c.Labels, got, "int8")
	}
}
