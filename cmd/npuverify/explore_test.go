package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// bigBug is the emulator with a planted bug: vector_add outputs of 300
// elements or more have their first element replaced by a wrong one.
type bigBug struct{ backend.Backend }

func (b bigBug) Name() string { return "bigbug" }

func (b bigBug) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	out, m, err := b.Backend.Run(ctx, op, p, in)
	if err == nil && op == "vector_add" && in["x"].Len() >= 300 {
		z := out["z"]
		v := 1.0
		if z.Float64(0) > 0 {
			v = -1
		}
		z.SetFloat64(0, v, tensor.Numerics{})
	}
	return out, m, err
}

// withExploreBackend plants wrap for the test's duration.
func withExploreBackend(t *testing.T, wrap func(backend.Backend) backend.Backend) {
	t.Helper()
	old := exploreBackend
	exploreBackend = wrap
	t.Cleanup(func() { exploreBackend = old })
}

// TestExploreUsage: bad flags are usage errors (exit 2).
func TestExploreUsage(t *testing.T) {
	wantCLI(t, exitUsage, []string{"unknown op"}, "explore", "--op", "nope")
	wantCLI(t, exitUsage, []string{"--budget"}, "explore", "--budget", "-1s")
	wantCLI(t, exitUsage, []string{"--shard"}, "explore", "--shard", "3/2")
	wantCLI(t, exitUsage, []string{"unexpected argument"}, "explore", "extra")
	notStore := t.TempDir()
	os.WriteFile(filepath.Join(notStore, "x"), []byte("x"), 0o644)
	wantCLI(t, exitUsage, []string{"--db"}, "explore", "--op", "vector_add", "--db", notStore, "--budget", "1s")
}

// TestExploreEmulatorFindsNothing: on the emulator a short search of
// vector_add finds nothing (exit 0) and writes no store.
func TestExploreEmulatorFindsNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "findings")
	js := filepath.Join(t.TempDir(), "e.json")
	o, _ := wantCLI(t, exitPass, []string{"0 findings"}, "explore", "--op", "vector_add", "--budget", "2s", "--seed", "4", "--out", out, "--json", js)
	if _, err := os.Stat(out); err == nil {
		t.Errorf("explore --op vector_add --seed 4 on the emulator wrote %s with no finding:\n%s", out, o)
	}
	var r exploreJSON
	b, err := os.ReadFile(js)
	if err != nil || json.Unmarshal(b, &r) != nil || r.Explore == nil || r.Explore.Cases == 0 || len(r.Cases) != 0 {
		t.Errorf("explore --json: %v; got %s, want a summary with cases run and no finding", err, b)
	}
	// A search that found nothing is a result to report, not an empty
	// check run (which merge refuses): report --merge renders it.
	rep := filepath.Join(t.TempDir(), "report")
	wantCLI(t, exitPass, []string{"0 cases"}, "report", "--merge", "--out", rep, "--format", "md", "--precision", "off", "--attention", "off", "--decoding", "off", "--layout", "off", js)
	md, err := os.ReadFile(filepath.Join(rep, "report.md"))
	if err != nil || !strings.Contains(string(md), "No case to tabulate") || strings.Contains(string(md), "| op |  |") {
		t.Errorf("report --merge %s (explore, no finding): %v; want a report saying there is no case to tabulate, no empty table:\n%s", js, err, md)
	}
}

// TestExploreFindsWritesReplays: a planted bug is found (exit 1), shrunk
// to n=300, written to --out with the store marker; check --golden
// replays it (the emulator passes it); a second
// explore replays it from the database first; report --merge lists it.
func TestExploreFindsWritesReplays(t *testing.T) {
	withExploreBackend(t, func(b backend.Backend) backend.Backend { return bigBug{b} })
	dir := t.TempDir()
	out := filepath.Join(dir, "findings")
	js := filepath.Join(dir, "shard1.json")
	o, e := wantCLI(t, exitFail, nil, "explore", "--op", "vector_add", "--budget", "60s", "--seed", "3", "--jobs", "2", "--out", out, "--json", js, "--shard", "1/2")
	if !strings.Contains(o, "FINDING vector_add/explore-") || !strings.Contains(o, "shrunk: vector_add n=300 dist=uniform") {
		t.Fatalf("explore --seed 3 --shard 1/2 on bigbug: stdout lacks the finding shrunk to n=300:\n%s\nstderr:\n%s", o, e)
	}
	if _, err := os.Stat(filepath.Join(out, golden.MarkerName)); err != nil {
		t.Fatalf("no store marker in %s: %v", out, err)
	}
	var r exploreJSON
	b, _ := os.ReadFile(js)
	if err := json.Unmarshal(b, &r); err != nil || len(r.Cases) != 1 || r.Cases[0].Verdict != "fail" || len(r.Explore.Findings) != 1 || r.Explore.Findings[0].Path == "" {
		t.Fatalf("explore --json: %v; want one failing case and one written finding:\n%s", err, b)
	}
	id := r.Cases[0].ID
	// check --golden replays it: the emulator passes it (the buggy
	// backend failing it is explore's TestWriteAndReplayFirst).
	wantCLI(t, exitPass, []string{id, "1 cases: 1 pass"}, "check", "--golden", out)
	// The database comes first: the finding is replayed, no new case needed.
	o, _ = wantCLI(t, exitFail, nil, "explore", "--op", "vector_add", "--budget", "60s", "--seed", "8", "--out", out)
	if !strings.Contains(o, "FINDING "+id+" (fail, replayed from the database)") || !strings.Contains(o, "explore: 0 cases, 1 findings, 1 replayed") {
		t.Errorf("explore with the database: want %s replayed before any case:\n%s", id, o)
	}
	// Shard 2 searches a stream of its own; report --merge renders the
	// findings of both shards.
	js2 := filepath.Join(dir, "shard2.json")
	wantCLI(t, exitFail, nil, "explore", "--op", "vector_add", "--budget", "60s", "--seed", "3", "--out", filepath.Join(dir, "findings2"), "--json", js2, "--shard", "2/2")
	var r2 exploreJSON
	b, _ = os.ReadFile(js2)
	if err := json.Unmarshal(b, &r2); err != nil || len(r2.Cases) != 1 || r2.Cases[0].ID == id {
		t.Fatalf("explore --seed 3 --shard 2/2 --json: %v; want one finding other than shard 1's %s:\n%s", err, id, b)
	}
	rep := filepath.Join(dir, "report")
	_, _, e = cli(t, "report", "--merge", "--out", rep, "--format", "md", "--precision", "off", "--attention", "off", "--decoding", "off", js, js2)
	md, err := os.ReadFile(filepath.Join(rep, "report.md"))
	for _, want := range []string{id, r2.Cases[0].ID} {
		if err != nil || !strings.Contains(string(md), want) {
			t.Errorf("report --merge %s %s: %v; the report lacks %s\nstderr:\n%s", js, js2, err, want, e)
		}
	}
}

// TestExploreBackendCannotStart: a backend that runs no case is exit 3,
// not a finding, and nothing is written.
func TestExploreBackendCannotStart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "findings")
	wantCLI(t, exitBackend, []string{"ran none of the"}, "explore", "--op", "vector_add", "--backend", "exec:"+filepath.Join(t.TempDir(), "no-such-kernel"), "--budget", "10s", "--out", out)
	if _, err := os.Stat(out); err == nil {
		t.Errorf("explore with a backend that cannot start wrote %s", out)
	}
}
