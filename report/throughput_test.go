package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/perf"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// chip is a made-up device with round rates: 1 GB/s, so that 6 kB take 6 µs.
var chip = perf.Peaks{Name: "chip", GMGBps: 1, CubeFP16TFLOPS: 1, CubeFP32TFLOPS: 1, CubeInt8TOPS: 1, VectorGBps: 1000}

// timedOutcome is vector_add fp16 n = 1000 (x, y, z: 6000 bytes) whose
// kernel reported the given times.
func timedOutcome(t *testing.T, times []float64) harness.Outcome {
	t.Helper()
	c := ops.NewCase("vector_add", "fp16_n1000", ops.Params{"dtype": "fp16"}, map[string]int{"n": 1000}, ops.DistUniform)
	p, err := ops.VectorAdd.Validate(c.Params)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*tensor.Tensor{"x": tensor.MustNew(tensor.Float16, 1000), "y": tensor.MustNew(tensor.Float16, 1000)}
	res := &harness.Result{Case: c, Params: p, Inputs: in, Verify: &verify.Result{Pass: true}, Measurement: &backend.Measurement{KernelSeconds: times}}
	return harness.Outcome{ID: "vector_add/fp16_n1000", Case: c, Result: res}
}

// TestThroughputSection: a case whose kernel reported times gets its
// roofline (6000 B; on chip 6 µs) and a row in every format: at a median
// of 12 µs, 0.5 GB/s, 1000 adds / 12 µs = 0.08333 GFLOP/s, 50 % of the
// roofline. The section is absent when no case has times, and the JSON
// report read back renders the same (report --merge).
func TestThroughputSection(t *testing.T) {
	o := timedOutcome(t, []float64{11e-6, 12e-6, 13e-6})
	c := FromOutcome(&o)
	if c.Roofline == nil || c.Roofline.Work.Bytes != 6000 || c.Roofline.Device != "ascend910b" {
		t.Fatalf("vector_add fp16 n=1000 with kernel times: roofline %+v, want 6000 bytes on ascend910b", c.Roofline)
	}
	c.SetRoofline(chip)
	if c.Roofline.Device != "chip" || c.Roofline.Seconds != 6e-6 || c.Roofline.Bound != perf.BoundMemory {
		t.Fatalf("roofline on chip: got %+v, want 6 µs memory-bound", c.Roofline)
	}
	r := FromCases("t", []Case{c})
	var md, js, html bytes.Buffer
	if err := r.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.JSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := r.HTML(&html); err != nil {
		t.Fatal(err)
	}
	for format, want := range map[string][]string{
		md.String():   {"## Kernel throughput", "| [vector_add/fp16_n1000](#vector_addfp16_n1000) | pass | chip | 12 µs (3) | 0.5 | 0.08333 | 6 µs | memory | 50 % |"},
		js.String():   {`"throughput": [`, `"gb_per_s": 0.5`, `"efficiency": 0.5`, `"roofline": {`, `"kernel_seconds": [`},
		html.String(): {"<h2>Kernel throughput</h2>", `<td class="n">50 %</td>`, `<td class="n">0.5</td>`},
	} {
		for _, s := range want {
			if !strings.Contains(format, s) {
				t.Errorf("report of vector_add fp16 n=1000 timed 11, 12, 13 µs on chip: lacks %q:\n%s", s, format)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := ReadResults(path, MaxResultsBytes)
	if err != nil {
		t.Fatal(err)
	}
	var md2 bytes.Buffer
	if err := FromCases("t", back.Cases).Markdown(&md2); err != nil {
		t.Fatal(err)
	}
	if md2.String() != md.String() {
		t.Errorf("report rebuilt from its JSON differs:\n%s\nwant\n%s", md2.String(), md.String())
	}
	o = timedOutcome(t, nil)
	untimed := FromOutcome(&o)
	if untimed.Roofline != nil {
		t.Errorf("a case without kernel times: got roofline %+v, want none", untimed.Roofline)
	}
	for _, s := range FromCases("t", []Case{untimed}).Sections {
		if s.Key() == "throughput" {
			t.Error("a report without kernel times has a throughput section")
		}
	}
}
