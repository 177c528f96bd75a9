package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/tensor"
)

// jsonCaseIDs returns the case IDs of a check --json file, in file order.
func jsonCaseIDs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Summary struct {
			Rows []struct {
				Case string `json:"case"`
			} `json:"rows"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var ids []string
	for _, r := range rep.Summary.Rows {
		ids = append(ids, r.Case)
	}
	return ids
}

// tableIDs returns the case column of check's table on stdout.
func tableIDs(stdout string) []string {
	var ids []string
	lines := strings.Split(stdout, "\n")
	for _, l := range lines[1:] {
		if l == "" {
			break
		}
		ids = append(ids, strings.Fields(l)[0])
	}
	return ids
}

// TestCheckJobsRunsCasesConcurrently: 20 cases whose kernel sleeps past a
// 1 s timeout take 20 s one at a time; with --jobs 4 they take about
// 20/4 × 1 s = 5 s. The bound of 12 s leaves more than 2× margin for a
// loaded machine and still fails a run that is not concurrent (≥ 20 s);
// the lower bound of 4.5 s shows that every case did wait for its timeout.
// The table keeps case order whatever order the cases finish in.
func TestCheckJobsRunsCasesConcurrently(t *testing.T) {
	t.Parallel() // it mostly waits for kernels to time out: the other parallel tests run meanwhile
	var ids []string
	for _, c := range golden.Embedded().Cases() {
		if strings.HasPrefix(c.ID, "vector_add/") && len(ids) < 20 {
			ids = append(ids, c.ID)
		}
	}
	if len(ids) != 20 {
		t.Fatalf("the embedded store has %d vector_add cases, want at least 20", len(ids))
	}
	store := copyCases(t, ids...)
	dir := t.TempDir()
	kernel := filepath.Join(dir, "kernel.sh")
	if err := os.WriteFile(kernel, sh("exec sleep 30"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	o, _ := wantCLI(t, 3, []string{"timed out after 1s"}, "check", "--golden", store, "--backend", "exec:"+kernel, "--timeout", "1s", "--jobs", "4")
	took := time.Since(start)
	t.Logf("20 cases timing out at 1 s with --jobs 4: %s", took.Round(time.Millisecond))
	if took >= 12*time.Second || took < 4500*time.Millisecond {
		t.Errorf("check --jobs 4 over 20 cases timing out at 1s: took %s, want about 5s (4.5s ≤ took < 12s)", took)
	}
	if got := tableIDs(o); !slices.Equal(got, ids) {
		t.Errorf("table rows %v, want case order %v", got, ids)
	}
}

// TestCheckEmulatorTimeout: an emulator case stopped by --timeout is a
// backend error whose message says so after the case's op and params.
func TestCheckEmulatorTimeout(t *testing.T) {
	const id = "gemm/fp32_longk_16x512x16"
	wantCLI(t, 3, []string{"npuverify: check: " + id + ": gemm ", "backend emulator", "context deadline exceeded (timed out after 1ns)"},
		"check", "--run", "^"+id+"$", "--timeout", "1ns")
}

// TestCheckJobsStableOutput: the emulator's whole check output is the same
// one case at a time and two at a time.
func TestCheckJobsStableOutput(t *testing.T) {
	o1, _ := wantCLI(t, 0, nil, "check", "--jobs", "1")
	o4, _ := wantCLI(t, 0, nil, "check", "--jobs", "4")
	if o1 != o4 {
		t.Errorf("check --jobs 1 and --jobs 4 print different output:\n--jobs 1:\n%s\n--jobs 4:\n%s", o1, o4)
	}
	wantCLI(t, 2, []string{"npuverify: check: --jobs -1: want at least 1 (or 0: the number of CPUs)"}, "check", "--jobs", "-1")
	wantCLI(t, 2, []string{"npuverify: check: --repeat 0: want at least 1"}, "check", "--repeat", "0")
}

// TestCheckRun: --run selects cases by "<op>/<name>"; a pattern that
// selects none, or does not compile, is a usage error.
func TestCheckRun(t *testing.T) {
	o, _ := wantCLI(t, 0, nil, "check", "--run", `^gemm/fp32_.*16x512x16$|^vector_add/fp16_uniform_n17$`)
	want := []string{"gemm/fp32_longk_16x512x16", "vector_add/fp16_uniform_n17"}
	if got := tableIDs(o); !slices.Equal(got, want) {
		t.Errorf("check --run: cases %v, want %v", got, want)
	}
	wantCLI(t, 2, []string{"npuverify: check: no cases selected: --run ^nothing matches none of the"}, "check", "--run", "^nothing")
	wantCLI(t, 2, []string{`npuverify: check: --run "(": error parsing regexp`}, "check", "--run", "(")
}

// TestCheckRepeatFindsNondeterminism: a kernel that returns one valid
// result on its first run and another valid result (the same gemm summed
// in another order, inside the bound) on its second passes a plain check,
// and is NONDETERMINISTIC under --repeat 2: in the table, in the list of
// differing outputs, in the summary, in --json and --junit, and exit 1.
// The same kernel returning the same bits each time passes --repeat 2.
func TestCheckRepeatFindsNondeterminism(t *testing.T) {
	const id = "gemm/fp32_longk_16x512x16"
	store := copyCases(t, id)
	s := mustOpen(t, store)
	c, ok := s.Lookup(id)
	if !ok {
		t.Fatalf("%s: not in the copied store", id)
	}
	var variant *emulator.Emulator
	for _, v := range opdb.Variants() {
		if v.Op == "gemm" && v.Name == "summation-order" {
			variant = emulator.New(npu.Ascend910B(), emulator.WithVariant(v))
		}
	}
	if variant == nil {
		t.Fatal("gemm has no summation-order variant")
	}
	res, err := harness.Run(context.Background(), variant, c.File.Harness(), harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, expected, err := s.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if len(expected) != 1 {
		t.Fatalf("%s: %d outputs, want 1", id, len(expected))
	}
	var out string
	for name := range expected {
		out = name
	}
	if eq, _ := tensor.BitsEqual(expected[out], res.Outputs[out]); eq {
		t.Fatalf("%s: the summation-order variant gives the same bits as the default kernel; the test needs two different valid results", id)
	}
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
	if err := tensor.WriteNpyFile(a, expected[out]); err != nil {
		t.Fatal(err)
	}
	if err := tensor.WriteNpyFile(b, res.Outputs[out]); err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(dir, "count")
	// Run 1 returns a, every later run b.
	flaky := filepath.Join(dir, "flaky.sh")
	script := "n=$(cat " + count + " 2>/dev/null || echo 0)\necho $((n+1)) > " + count + "\n" +
		"if [ \"$n\" -eq 0 ]; then cp " + a + " \"$1/out/" + out + ".npy\"; else cp " + b + " \"$1/out/" + out + ".npy\"; fi"
	if err := os.WriteFile(flaky, sh(script), 0o755); err != nil {
		t.Fatal(err)
	}
	steady := filepath.Join(dir, "steady.sh")
	if err := os.WriteFile(steady, sh("cp "+a+" \"$1/out/"+out+".npy\""), 0o755); err != nil {
		t.Fatal(err)
	}

	o, _ := wantCLI(t, 0, nil, "check", "--golden", store, "--backend", "exec:"+flaky)
	if strings.Contains(o, "NONDETERMINISTIC") || strings.Contains(o, "nondeterministic") {
		t.Errorf("a single run reports nondeterminism:\n%s", o)
	}
	os.Remove(count)
	jsonOut, junitOut := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	o, _ = wantCLI(t, 1, nil, "check", "--golden", store, "--backend", "exec:"+flaky, "--repeat", "2", "--json", jsonOut, "--junit", junitOut)
	for _, want := range []string{
		id + "  NONDETERMINISTIC",
		"Nondeterministic (outputs that differ between the 2 runs of a case):",
		id + `: output "` + out + `": run 2 differs bitwise from run 1 in `,
		"1 cases: 0 pass, 0 fail, 0 input error, 0 backend error, 1 nondeterministic in 2 runs each",
	} {
		if !strings.Contains(o, want) {
			t.Errorf("check --repeat 2 with a kernel whose second result differs: stdout lacks %q:\n%s", want, o)
		}
	}
	if strings.Contains(o, "Failures:") {
		t.Errorf("nondeterminism is reported as an accuracy failure:\n%s", o)
	}
	if n, err := os.ReadFile(count); err != nil || strings.TrimSpace(string(n)) != "2" {
		t.Errorf("the kernel ran %q times (%v), want 2", n, err)
	}
	var rep struct {
		Summary struct {
			Rows []struct{ Verdict string } `json:"rows"`
		} `json:"summary"`
		Determinism struct {
			Repeat           int `json:"repeat"`
			Nondeterministic []struct {
				Case    string   `json:"case"`
				Verdict string   `json:"verdict"`
				Outputs []string `json:"outputs"`
			} `json:"nondeterministic"`
		} `json:"determinism"`
	}
	jb, err := os.ReadFile(jsonOut)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(jb, &rep); err != nil {
		t.Fatal(err)
	}
	d := rep.Determinism
	if d.Repeat != 2 || len(d.Nondeterministic) != 1 || d.Nondeterministic[0].Case != id || d.Nondeterministic[0].Verdict != harness.VerdictNondeterministic ||
		len(d.Nondeterministic[0].Outputs) != 1 || len(rep.Summary.Rows) != 1 || rep.Summary.Rows[0].Verdict != harness.VerdictNondeterministic {
		t.Errorf("--json: summary rows %+v, determinism %+v; want case %s nondeterministic in 2 runs", rep.Summary.Rows, d, id)
	}
	if xb, err := os.ReadFile(junitOut); err != nil || !strings.Contains(string(xb), `type="nondeterministic"`) {
		t.Errorf("--junit: %v\n%s\nwant a failure of type nondeterministic", err, xb)
	}

	o, _ = wantCLI(t, 0, nil, "check", "--golden", store, "--backend", "exec:"+steady, "--repeat", "3")
	if !strings.Contains(o, "1 cases: 1 pass, 0 fail, 0 input error, 0 backend error, 0 nondeterministic in 3 runs each") {
		t.Errorf("check --repeat 3 with a deterministic kernel:\n%s", o)
	}
}

// TestCheckBazelSharding: three Bazel-style shards (TEST_SHARD_INDEX 0, 1,
// 2 of TEST_TOTAL_SHARDS 3) and three --shard runs (1/3, 2/3, 3/3) each
// cover every case of the unsharded run exactly once, Bazel's index i
// running what --shard i+1/3 runs; each Bazel shard touches its status
// file. An explicit --shard wins over the environment (and then the status
// file is not touched: the run does not follow Bazel's split), and a
// malformed environment is a usage error naming the variable. The runs
// select vector_add's cases (--op): the split does not depend on the op,
// and seven runs of the whole store were a quarter of the package's time.
func TestCheckBazelSharding(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []string{envTotalShards, envShardIndex, envShardStatus} {
		t.Setenv(v, "")
	}
	all := filepath.Join(dir, "all.json")
	wantCLI(t, 0, nil, "check", "--op", "vector_add", "--json", all)
	want := jsonCaseIDs(t, all)
	if len(want) < 3 {
		t.Fatalf("the unsharded run has %d cases", len(want))
	}
	const n = 3
	bazel, flag := map[string]int{}, map[string]int{}
	for i := range n {
		status := filepath.Join(dir, "status-"+strconv.Itoa(i))
		t.Setenv(envTotalShards, strconv.Itoa(n))
		t.Setenv(envShardIndex, strconv.Itoa(i))
		t.Setenv(envShardStatus, status)
		bj := filepath.Join(dir, "bazel-"+strconv.Itoa(i)+".json")
		wantCLI(t, 0, nil, "check", "--op", "vector_add", "--json", bj)
		if fi, err := os.Stat(status); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("Bazel shard %d: status file %s: %v, want it touched", i, status, err)
		}
		for _, v := range []string{envTotalShards, envShardIndex, envShardStatus} {
			t.Setenv(v, "")
		}
		fj := filepath.Join(dir, "flag-"+strconv.Itoa(i+1)+".json")
		wantCLI(t, 0, nil, "check", "--op", "vector_add", "--shard", strconv.Itoa(i+1)+"/"+strconv.Itoa(n), "--json", fj)
		bids, fids := jsonCaseIDs(t, bj), jsonCaseIDs(t, fj)
		if !slices.Equal(bids, fids) {
			t.Errorf("TEST_SHARD_INDEX=%d ran %v, --shard %d/%d ran %v", i, bids, i+1, n, fids)
		}
		if len(bids) == 0 {
			t.Errorf("Bazel shard %d ran no case", i)
		}
		for _, id := range bids {
			bazel[id]++
		}
		for _, id := range fids {
			flag[id]++
		}
	}
	for name, seen := range map[string]map[string]int{"Bazel": bazel, "--shard": flag} {
		for _, id := range want {
			if seen[id] != 1 {
				t.Errorf("%s shards ran %s %d times, want once", name, id, seen[id])
			}
		}
		if len(seen) != len(want) {
			t.Errorf("%s shards ran %d distinct cases, the unsharded run %d", name, len(seen), len(want))
		}
	}

	// --shard wins; the status file is then not touched.
	status := filepath.Join(dir, "status-explicit")
	t.Setenv(envTotalShards, "3")
	t.Setenv(envShardIndex, "0")
	t.Setenv(envShardStatus, status)
	ej := filepath.Join(dir, "explicit.json")
	wantCLI(t, 0, nil, "check", "--op", "vector_add", "--shard", "2/3", "--json", ej)
	if got, want := jsonCaseIDs(t, ej), jsonCaseIDs(t, filepath.Join(dir, "flag-2.json")); !slices.Equal(got, want) {
		t.Errorf("--shard 2/3 under TEST_SHARD_INDEX=0 ran %v, want shard 2's %v", got, want)
	}
	if _, err := os.Stat(status); err == nil {
		t.Errorf("--shard given: the Bazel status file %s was touched", status)
	}
	t.Setenv(envShardIndex, "3")
	wantCLI(t, 2, []string{`npuverify: check: Bazel sharding: TEST_SHARD_INDEX="3": want a 0-based shard index below TEST_TOTAL_SHARDS=3`}, "check")
	t.Setenv(envShardIndex, "0")
	t.Setenv(envTotalShards, "three")
	wantCLI(t, 2, []string{`npuverify: check: Bazel sharding: TEST_TOTAL_SHARDS="three": want a positive shard count`}, "check")
	// A status file that is not a regular file is refused, not replaced.
	t.Setenv(envTotalShards, "3")
	fifo := filepath.Join(dir, "status-dir")
	if err := os.Mkdir(fifo, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envShardStatus, fifo)
	wantCLI(t, 2, []string{"npuverify: check: TEST_SHARD_STATUS_FILE: ", fifo}, "check")
}
