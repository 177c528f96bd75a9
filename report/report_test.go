package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// zeroOut is a wrong backend: every output element is +0.
type zeroOut struct{ backend.Backend }

func (zeroOut) Name() string { return "zero" }

func (b zeroOut) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	out, cost, err := b.Backend.Run(ctx, op, p, in)
	for _, t := range out {
		for i := 0; i < t.Len(); i++ {
			t.SetBits(i, 0)
		}
	}
	return out, cost, err
}

func cases(t *testing.T) []harness.Outcome {
	t.Helper()
	emu := emulator.New(npu.Ascend910B())
	mk := func(name, dtype, dist string, n int) ops.Case {
		return ops.Case{Name: name, Op: "vector_add", Params: ops.Params{"dtype": dtype}, Dims: map[string]int{"n": n}, Dist: dist, Seed: 7, Labels: []string{"UT"}}
	}
	var out []harness.Outcome
	for _, c := range []struct {
		hc ops.Case
		b  backend.Backend
	}{
		{mk("fp16_special", "fp16", "special", 64), emu},
		{mk("int8_uniform", "int8", "uniform", 40), emu},
		{mk("fp32_zero", "fp32", "uniform", 33), zeroOut{emu}},
		{mk("empty", "bf16", "uniform", 0), emu},
	} {
		r, err := harness.Run(context.Background(), c.b, c.hc, harness.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, harness.Outcome{ID: "vector_add/" + c.hc.Name, Case: c.hc, Result: r,
			Checks: []harness.Check{{Name: "budget cycles", Pass: true, Detail: "cycles 10 ≤ budget 12"}}})
	}
	out = append(out, harness.Outcome{ID: "vector_add/broken", Case: mk("broken", "fp16", "uniform", 3), Err: &harness.BackendError{Err: errors.New("backend exec:k: exit status 1\nstderr tail | with a pipe")}})
	out = append(out, harness.Outcome{ID: "vector_add/bad_input", Case: mk("bad_input", "fp16", "uniform", 3), Err: &harness.InputError{Err: errors.New("x.npy: truncated")}})
	return out
}

func render(t *testing.T, r *Report) (md, js string) {
	t.Helper()
	var m, j bytes.Buffer
	if err := r.Markdown(&m); err != nil {
		t.Fatal(err)
	}
	if err := r.JSON(&j); err != nil {
		t.Fatal(err)
	}
	return m.String(), j.String()
}

func TestReportContent(t *testing.T) {
	r := New("npuverify report", cases(t))
	r.Meta = map[string]string{"backend": "emulator", "profile": "ascend910b"}
	md, js := render(t, r)
	for _, s := range []string{
		"# npuverify report", "- backend: emulator", "## Summary", "6 cases: 3 pass, 1 fail, 1 input error, 1 backend error.",
		"| case | verdict | tightness | cycles |", "| [vector_add/fp32_zero](#vector_addfp32_zero) | **fail** |",
		"| op | bf16 | fp16 | fp32 | int8 |", "| vector_add | 1/1 pass · 0 | **1/3 pass** (2 error) · 1 | **0/1 pass** (1 fail) · 3.355e+07 |",
		"Failing cases (3):", "## Performance checklist", "## Plots",
		"## Cases", "### vector_add/fp16_special", "params `dtype=fp16`, dims `n=64`, dist `special`, seed 7",
		"| output | max abs | max rel | MERE | MARE | RMSE | cosine | tightness | ulp histogram | non-finite mismatches | ambiguous (taken) |",
		"| z | bound | pass |", "| z | bound | **fail** |", "budget cycles", "cycles 10 ≤ budget 12",
		"| cycles | GM bytes in | GM bytes out | HBM bytes | L2 hit bytes | vector util | cube util | overlap | load balance | UB peak bytes | cores |",
		"- error: `backend exec:k: exit status 1 ⏎ stderr tail | with a pipe`", "```\nvector_add dtype=fp32 seed=7 [fp32_zero]",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("Markdown lacks %q", s)
		}
	}
	// Summary first, sorted by ID.
	if strings.Index(md, "## Summary") > strings.Index(md, "## Cases") {
		t.Error("summary is not first")
	}
	if strings.Index(md, "| [vector_add/bad_input]") > strings.Index(md, "| [vector_add/broken]") {
		t.Error("summary rows not sorted")
	}
	var j struct {
		Title   string            `json:"title"`
		Meta    map[string]string `json:"meta"`
		Summary struct {
			Totals map[string]int `json:"totals"`
			Rows   []struct {
				Case      string `json:"case"`
				Verdict   string `json:"verdict"`
				Tightness any    `json:"tightness"`
				Cycles    *int64 `json:"cycles"`
			} `json:"rows"`
		} `json:"summary"`
		Cases []struct {
			ID      string `json:"id"`
			Verdict string `json:"verdict"`
			Error   string `json:"error"`
			Outputs []struct {
				Name    string         `json:"name"`
				Metrics map[string]any `json:"metrics"`
			} `json:"outputs"`
			Cost *struct {
				Cycles int64 `json:"cycles"`
			} `json:"cost"`
		} `json:"cases"`
	}
	if err := json.Unmarshal([]byte(js), &j); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if j.Title != "npuverify report" || j.Meta["profile"] != "ascend910b" || len(j.Cases) != 6 || j.Summary.Totals["fail"] != 1 {
		t.Errorf("JSON: %+v", j)
	}
	for _, c := range j.Cases {
		switch c.ID {
		case "vector_add/broken":
			if c.Verdict != "backend error" || c.Error == "" || c.Cost != nil {
				t.Errorf("broken: %+v", c)
			}
		case "vector_add/fp16_special":
			if len(c.Outputs) != 1 || c.Cost == nil || c.Cost.Cycles <= 0 {
				t.Errorf("fp16_special: %+v", c)
			}
			for _, k := range []string{"max_abs", "max_rel", "mere", "mare", "rmse", "cosine", "tightness", "ulp_hist", "nonfinite_mismatch", "ambiguous"} {
				if _, ok := c.Outputs[0].Metrics[k]; !ok {
					t.Errorf("metrics lack %q", k)
				}
			}
		}
	}
	// Error rows have no tightness: NaN is encoded, not an error.
	for _, row := range j.Summary.Rows {
		if row.Case == "vector_add/broken" && (row.Tightness != "NaN" || row.Cycles != nil) {
			t.Errorf("broken row: %+v", row)
		}
	}
}

func TestReportDeterministic(t *testing.T) {
	cs := cases(t)
	md1, js1 := render(t, New("r", cs))
	rev := make([]harness.Outcome, len(cs))
	for i := range cs {
		rev[len(cs)-1-i] = cs[i]
	}
	md2, js2 := render(t, New("r", rev))
	if md1 != md2 || js1 != js2 {
		t.Error("report depends on the order of the cases")
	}
}

// precisionTable stands for a later section (e.g. GEMM precision modes).
type precisionTable struct{ rows [][2]string }

func (precisionTable) Key() string { return "precision_modes" }

func (p precisionTable) Markdown(w io.Writer) error {
	_, err := fmt.Fprintf(w, "## Precision modes\n\n| mode | tightness |\n| --- | --- |\n| %s | %s |\n\n", p.rows[0][0], p.rows[0][1])
	return err
}

func (p precisionTable) JSON() any { return p.rows }

func TestExtraSection(t *testing.T) {
	r := New("r", cases(t)[:1])
	r.Add(precisionTable{rows: [][2]string{{"fp16_fp32acc", "0.01"}}})
	md, js := render(t, r)
	if !strings.Contains(md, "## Precision modes\n\n| mode | tightness |\n| --- | --- |\n| fp16_fp32acc | 0.01 |\n\n## Cases\n") {
		t.Errorf("extra section not last before the cases:\n%s", md)
	}
	var j map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &j); err != nil {
		t.Fatal(err)
	}
	if string(j["precision_modes"]) == "" {
		t.Errorf("JSON lacks the extra section: %s", js)
	}
	r.Add(precisionTable{rows: [][2]string{{"a", "b"}}})
	if err := r.JSON(io.Discard); err == nil {
		t.Error("duplicate section key accepted")
	}
}

func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	r := New("r", cases(t)[:2])
	paths, err := r.WriteFiles(dir, []string{"md", "json"})
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 2 || filepath.Base(paths[0]) != "report.md" || filepath.Base(paths[1]) != "report.json" {
		t.Fatalf("paths %v", paths)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("stray files in %s: %v", dir, entries)
	}
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"md,json", []string{"md", "json"}, true}, {" json , md,json", []string{"json", "md"}, true},
		{"html", []string{"html"}, true}, {"md,json,html", []string{"md", "json", "html"}, true}, {"pdf", nil, false}, {"", nil, false}, {",", nil, false},
	} {
		got, err := ParseFormats(c.in)
		if (err == nil) != c.ok || strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("ParseFormats(%q) = %v, %v", c.in, got, err)
		}
	}
}
