package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/perf"
	"github.com/npuverify/npuverify/tensor"
)

// timedBackend is the emulator with chosen kernel times in place of its
// cost model: a stand-in for a kernel that reports its own times, whose
// outputs are right, so that only the performance verdicts can fail.
type timedBackend struct {
	inner backend.Backend
	times func(op string, p ops.Params, in map[string]*tensor.Tensor) []float64
}

func (b *timedBackend) Name() string { return "timed-emulator" }

func (b *timedBackend) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	out, _, err := b.inner.Run(ctx, op, p, in)
	if err != nil {
		return nil, nil, err
	}
	return out, &backend.Measurement{KernelSeconds: b.times(op, p, in)}, nil
}

// spread is n samples around t, within ±2 % (a timer's noise), distinct.
func spread(t float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = t * (1 + 0.04*(float64((i*7)%n)/float64(n)-0.5))
	}
	return v
}

// perfCases are small golden cases of every op: the budgets must judge
// each op's roofline, not one op's.
const perfCases = `^(vector_add/fp16_cancel_n257|gemm/bf16_fp32acc_large_16x16x16|gemm24/.*|kv_update/.*|decode_attention/.*|sparse_compress/.*|sparse24_prune/.*)$`

// runTimed checks perfCases on the emulator with kernel times from times,
// then applies the budget.
func runTimed(t *testing.T, b *perfBudget, times func(op string, p ops.Params, in map[string]*tensor.Tensor) []float64) []harness.Outcome {
	t.Helper()
	store := golden.Embedded().WithRecorder(emulator.Recorder())
	be := &timedBackend{inner: emulator.New(npu.Ascend910B()), times: times}
	res, err := golden.Check(context.Background(), store, be, golden.CheckOptions{Run: perfCases, Jobs: 2, Exact: golden.ExactNever, NoBudgets: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) < 7 {
		t.Fatalf("%d cases match %s, want one of each op at least", len(res), perfCases)
	}
	if err := b.judge(res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCheckEfficiencyChosenTimes: every case's kernel reports times at a
// chosen share of its own roofline (on a device without latency, so that
// every case is throughput-bound); at 0.5 each is INEFFICIENT under
// --min-efficiency 0.6, at 0.8 each passes.
func TestCheckEfficiencyChosenTimes(t *testing.T) {
	peaks := perf.PeaksOf(npu.Ascend910B())
	peaks.LatencyNS = 0
	for _, tc := range []struct {
		eff  float64
		want string
	}{{0.5, harness.VerdictInefficient}, {0.8, harness.VerdictPass}} {
		at := func(op string, p ops.Params, in map[string]*tensor.Tensor) []float64 {
			w, err := perf.WorkOf(op, p, in)
			if err != nil {
				t.Fatalf("%s %v: %v", op, p, err)
			}
			return []float64{perf.RooflineOf(w, peaks).Seconds / tc.eff}
		}
		b := &perfBudget{minEff: 0.6, peaks: peaks}
		for _, r := range runTimed(t, b, at) {
			if r.Result != nil && r.Result.Measurement.KernelSeconds[0] == 0 {
				continue // an empty case: no work, no roofline to miss
			}
			if v := r.Verdict(); v != tc.want {
				t.Errorf("%s: %s seed %d: times at efficiency %g, --min-efficiency 0.6: got %s (%s), want %s",
					r.ID, r.Ran().Params, r.Ran().Seed, tc.eff, v, r.Failure(), tc.want)
			}
		}
	}
}

// TestCheckSlowdownChosenTimes: a baseline run's times against the same
// times, 30 % slower with 10 samples (SLOWER), 30 % slower with 2 samples
// (insufficient, passes), and 5 % slower under a 10 % allowance (passes).
func TestCheckSlowdownChosenTimes(t *testing.T) {
	const us = 1e-6
	base := &perf.Baseline{Path: "base.json", Times: map[string][]float64{}}
	for _, r := range runTimed(t, &perfBudget{}, func(string, ops.Params, map[string]*tensor.Tensor) []float64 { return spread(10*us, 10) }) {
		base.Times[r.ID] = r.Result.Measurement.KernelSeconds
	}
	delete(base.Times, "vector_add/fp16_cancel_n257") // one case has no baseline
	for _, tc := range []struct {
		name   string
		times  []float64
		want   string
		detail string
	}{
		{"same times", spread(10*us, 10), harness.VerdictPass, "no slowdown"},
		{"30 % slower, 10 samples", spread(13*us, 10), harness.VerdictSlower, "slower: median"},
		{"30 % slower, 2 samples", spread(13*us, 2), harness.VerdictPass, "insufficient samples"},
		{"5 % slower, max 10 %", spread(10.5*us, 10), harness.VerdictPass, "within the allowed +10 %"},
	} {
		b := &perfBudget{base: base, maxSlowdown: 0.1}
		for _, r := range runTimed(t, b, func(string, ops.Params, map[string]*tensor.Tensor) []float64 { return tc.times }) {
			k := r.Checks[len(r.Checks)-1]
			want, detail := tc.want, tc.detail
			if r.ID == "vector_add/fp16_cancel_n257" {
				want, detail = harness.VerdictPass, "no baseline: the case is not in base.json"
			}
			if v := r.Verdict(); v != want || k.Name != harness.CheckSlowdown || !strings.Contains(k.Detail, detail) {
				t.Errorf("%s: %s seed %d: %s: got %s, check %s: %s; want %s with %q", r.ID, r.Ran().Params, r.Ran().Seed, tc.name, v, k.Name, k.Detail, want, detail)
			}
		}
	}
}

func TestParseShare(t *testing.T) {
	for _, tc := range []struct {
		s     string
		whole bool
		want  float64
		err   bool
	}{
		{"10%", false, 0.1, false}, {"0.1", false, 0.1, false}, {" 2.5 % ", false, 0.025, false}, {"0", false, 0, false},
		{"150%", false, 1.5, false}, {"1", true, 1, false}, {"60%", true, 0.6, false}, {"1.5", true, 1.5, false},
		{"10", false, 0, true}, {"1", false, 0, true}, {"-5%", false, 0, true}, {"ten", false, 0, true},
		{"NaN", false, 0, true}, {"Inf%", false, 0, true}, {"%", false, 0, true}, {"", false, 0, true},
	} {
		got, err := parseShare(tc.s, tc.whole)
		if (err != nil) != tc.err || (!tc.err && got != tc.want) {
			t.Errorf("parseShare(%q, %v): got %v, %v; want %v, error %v", tc.s, tc.whole, got, err, tc.want, tc.err)
		}
	}
}

// timedKernel writes an exec kernel that answers the golden case
// vector_add/fp16_cancel_n257 with its stored expected output and reports
// the kernel times ns.
func timedKernel(t *testing.T, dir string, ns []float64) string {
	t.Helper()
	want, err := filepath.Abs("../../golden/cases/vector_add/fp16_cancel_n257/expected/z.npy")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string][]float64{"kernel_ns": ns})
	f, err := os.CreateTemp(dir, "kernel*.sh")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "#!/bin/sh\ncp '%s' \"$1/out/z.npy\"\nprintf '%%s' '%s' > \"$1/out/timing.json\"\n", want, js)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.Name(), 0o755); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// timedWorker is timedKernel as a worker (docs/exec-backend.md): one
// process answering case after case.
func timedWorker(t *testing.T, dir string, ns []float64) string {
	t.Helper()
	want, err := filepath.Abs("../../golden/cases/vector_add/fp16_cancel_n257/expected/z.npy")
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string][]float64{"kernel_ns": ns})
	f, err := os.CreateTemp(dir, "worker*.sh")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `#!/bin/sh
while IFS= read -r line; do
	dir=${line#*'"case_dir":"'}
	dir=${dir%%%%'"'*}
	cp '%s' "$dir/out/z.npy"
	printf '%%s' '%s' > "$dir/out/timing.json"
	printf '{"case_dir":"%%s","ok":true}\n' "$dir"
done
`, want, js)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.Name(), 0o755); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

func nsSpread(ns float64, n int) []float64 {
	v := spread(ns, n)
	for i := range v {
		v[i] = float64(int64(v[i]))
	}
	return v
}

// TestCheckPerfCLI runs check through exec with kernels that report
// chosen times: a baseline run's --json serves as --baseline; SLOWER shows
// in the table, JSON, JUnit and the exit code; too few samples and a small
// slowdown pass; --min-efficiency judges against a --device file's roofline.
func TestCheckPerfCLI(t *testing.T) {
	dir := t.TempDir()
	one := []string{"check", "--run", "^vector_add/fp16_cancel_n257$", "--jobs", "1"}
	args := func(kernel string, more ...string) []string {
		return append(append(append([]string{}, one...), "--backend", "exec:"+kernel), more...)
	}
	base := filepath.Join(dir, "base.json")
	wantCLI(t, 0, []string{"1 pass"}, args(timedKernel(t, dir, nsSpread(10000, 10)), "--json", base)...)
	b, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Throughput []map[string]any `json:"throughput"`
		Cases      []struct {
			KernelSeconds []float64      `json:"kernel_seconds"`
			Roofline      *perf.Roofline `json:"roofline"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	// n = 257 fp16: x, y, z of 514 bytes each.
	if len(rep.Cases) != 1 || len(rep.Cases[0].KernelSeconds) != 10 || rep.Cases[0].Roofline == nil || rep.Cases[0].Roofline.Work.Bytes != 3*514 || len(rep.Throughput) != 1 {
		t.Fatalf("vector_add/fp16_cancel_n257 through exec: --json lacks the kernel samples, roofline (bytes 1542) or throughput row:\n%s", b)
	}

	slow := timedKernel(t, dir, nsSpread(13000, 10))
	junit, js := filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.json")
	o, _ := wantCLI(t, 1, nil, args(slow, "--baseline", base, "--junit", junit, "--json", js)...)
	for _, s := range []string{"SLOWER", "1 slower", "slowdown: SLOWER: slower: median 9.98 µs → 12.97 µs (+30.0 %, more than the allowed +10 %)"} {
		if !strings.Contains(o, s) {
			t.Errorf("30 %% slower with 10 samples: stdout lacks %q:\n%s", s, o)
		}
	}
	for file, s := range map[string]string{junit: `type="slower"`, js: `"verdict": "slower"`} {
		if b, _ := os.ReadFile(file); !strings.Contains(string(b), s) {
			t.Errorf("30 %% slower with 10 samples: %s lacks %s:\n%s", file, s, b)
		}
	}
	o, _ = wantCLI(t, 0, nil, args(timedKernel(t, dir, nsSpread(13000, 2)), "--baseline", base)...)
	if !strings.Contains(o, "insufficient samples: 10 baseline and 2 current") {
		t.Errorf("30 %% slower with 2 samples: stdout lacks the insufficient-samples note:\n%s", o)
	}
	wantCLI(t, 0, []string{"no slowdown", "within the allowed +10 %"}, args(timedKernel(t, dir, nsSpread(10500, 10)), "--baseline", base)...)
	// The same through worker: against the exec run's baseline.
	worker := func(ns []float64, more ...string) []string {
		return append(append(append([]string{}, one...), "--backend", "worker:"+timedWorker(t, dir, ns)), more...)
	}
	if o, _ = wantCLI(t, 1, nil, worker(nsSpread(13000, 10), "--baseline", base)...); !strings.Contains(o, "slowdown: SLOWER: slower: median 9.98 µs → 12.97 µs") {
		t.Errorf("30 %% slower with 10 samples under worker: stdout lacks SLOWER's detail:\n%s", o)
	}
	wantCLI(t, 0, []string{"no slowdown"}, worker(nsSpread(10000, 10), "--baseline", base)...)
	if o, _ = wantCLI(t, 1, nil, args(timedKernel(t, dir, nsSpread(10500, 10)), "--baseline", base, "--max-slowdown", "1%")...); !strings.Contains(o, "(+5.0 %, more than the allowed +1 %)") {
		t.Errorf("5 %% slower under --max-slowdown 1%%: stdout lacks SLOWER's detail:\n%s", o)
	}

	// A device whose roofline for the case is 1542 B at 1 GB/s = 1.542 µs.
	dev := filepath.Join(dir, "dev.json")
	if err := os.WriteFile(dev, []byte(`{"name": "slowchip", "gm_gbps": 1, "cube_fp16_tflops": 1, "cube_fp32_tflops": 1, "cube_int8_tops": 1, "vector_gbps": 1000, "latency_ns": 0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// 3084 ns: efficiency 0.5; 1928 ns: 0.8.
	o, _ = wantCLI(t, 1, nil, args(timedKernel(t, dir, []float64{3084, 3084, 3084}), "--device", dev, "--min-efficiency", "0.6")...)
	if !strings.Contains(o, "INEFFICIENT") || !strings.Contains(o, "efficiency 0.5 below the minimum 0.6") {
		t.Errorf("efficiency 0.5 under --min-efficiency 0.6: stdout lacks INEFFICIENT and the figures:\n%s", o)
	}
	wantCLI(t, 0, []string{"efficiency 0.8, at least the minimum 0.6"}, args(timedKernel(t, dir, []float64{1928, 1928, 1928}), "--device", dev, "--min-efficiency", "60%")...)
	// The built-in device's latency (555.6 ns) is above this case's
	// roofline (1542 B at 1.6 TB/s ≈ 1 ns): not judged.
	wantCLI(t, 0, []string{"latency-bound, not judged"}, args(timedKernel(t, dir, []float64{3084, 3084, 3084}), "--min-efficiency", "0.6")...)
}

// TestCheckPerfUsageErrors: bad budget flags and files are exit 2 naming
// the flag and the field, before any case runs.
func TestCheckPerfUsageErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `"name": "c", "gm_gbps": 1, "cube_fp16_tflops": 1, "cube_fp32_tflops": 1, "cube_int8_tops": 1, "vector_gbps": 1, "latency_ns": 0`
	base := write("base.json", `{"cases": [{"id": "vector_add/fp16_cancel_n257", "kernel_seconds": [1e-6]}]}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--device", write("neg.json", "{"+strings.Replace(good, `"gm_gbps": 1`, `"gm_gbps": -1`, 1)+"}")}, "gm_gbps: must be a positive finite number, got -1"},
		{[]string{"--device", write("unknown.json", `{"hbm_gbps": 1, `+good+"}")}, `unknown field "hbm_gbps"`},
		{[]string{"--device", write("missing.json", "{"+strings.Replace(good, `, "latency_ns": 0`, "", 1)+"}")}, "latency_ns: missing"},
		{[]string{"--device", filepath.Join(dir, "none.json")}, "none.json"},
		{[]string{"--max-slowdown", "10%"}, "--max-slowdown 10%: needs --baseline"},
		{[]string{"--baseline", base, "--max-slowdown", "ten"}, "--max-slowdown ten: not a percentage"},
		{[]string{"--baseline", base, "--max-slowdown", "10"}, "write 10% for a percentage"},
		{[]string{"--min-efficiency", "1.5"}, "--min-efficiency 1.5: want a share of the roofline in (0, 1]"},
		{[]string{"--min-efficiency", "0"}, "--min-efficiency 0: want a share"},
		{[]string{"--baseline", write("bad.json", `{"cases": [{"id": "a/b", "kernel_seconds": [-1]}]}`)}, "kernel_seconds[0] = -1"},
		{[]string{"--baseline", write("notreport.json", `{"x": 1}`)}, `no "cases"`},
	} {
		wantCLI(t, 2, []string{"npuverify: check: ", tc.want}, append([]string{"check", "--run", "^vector_add/fp16_cancel_n257$"}, tc.args...)...)
	}
}
