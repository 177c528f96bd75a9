package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/golden"
)

// TestReportMergeEqualsUnsharded runs the embedded store unsharded
// (`report`) and as three `check --shard I/3 --json` runs merged by
// `report --merge`, through the CLI, and requires the same Markdown, JSON
// and HTML byte for byte (nothing in them depends on time).
func TestReportMergeEqualsUnsharded(t *testing.T) {
	t.Parallel() // overlaps TestCheckJobsRunsCasesConcurrently, which mostly waits
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	wantCLI(t, 0, nil, "report", "--out", full, "--precision", "off")
	var shards []string
	seen := map[string]int{}
	for _, s := range []string{"1/3", "2/3", "3/3"} {
		f := filepath.Join(dir, "shard"+s[:1]+".json")
		wantCLI(t, 0, nil, "check", "--shard", s, "--json", f)
		shards = append(shards, f)
		var r struct {
			Cases []struct {
				ID string `json:"id"`
			} `json:"cases"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Cases {
			seen[c.ID]++
		}
	}
	merged := filepath.Join(dir, "merged")
	// Shards in any order give the same report.
	n := len(golden.Embedded().Cases())
	wantCLI(t, 0, []string{fmt.Sprintf("%d cases: %d pass", n, n), "merged 3 file(s): shards 1/3, 2/3, 3/3 of run ", fmt.Sprintf(", %d of %d cases\n", n, n)}, append([]string{"report", "--out", merged, "--precision", "off", "--merge"}, shards[2], shards[0], shards[1])...)
	// One shard of the three is not the run (issue 33, item 6).
	wantCLI(t, 2, []string{"npuverify: report: --merge: ", "missing shard(s) 1/3, 3/3", "incomplete run"}, "report", "--out", filepath.Join(dir, "part"), "--precision", "off", "--merge", shards[1])
	for _, f := range []string{"report.md", "report.json", "report.html"} {
		a, err := os.ReadFile(filepath.Join(full, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(merged, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: merged report (%d bytes) differs from the unsharded one (%d bytes) at byte %d", f, len(b), len(a), firstDiff(a, b))
		}
		// The sections the report command computes itself are in both.
		for _, s := range []string{"attention_quality", "incremental_decoding", "timelines"} {
			if f == "report.json" && !bytes.Contains(b, []byte(`"`+s+`": {`)) {
				t.Errorf("%s: merged report lacks section %q", f, s)
			}
		}
	}
	var full1 struct {
		Cases []struct {
			ID string `json:"id"`
		} `json:"cases"`
	}
	b, _ := os.ReadFile(filepath.Join(full, "report.json"))
	if err := json.Unmarshal(b, &full1); err != nil {
		t.Fatal(err)
	}
	for _, c := range full1.Cases {
		if seen[c.ID] != 1 {
			t.Errorf("case %s is in %d shards, want 1", c.ID, seen[c.ID])
		}
	}
	if len(seen) != len(full1.Cases) {
		t.Errorf("shards hold %d cases, the unsharded run %d", len(seen), len(full1.Cases))
	}

	// Overlapping shards, other runs, no files, not a report: input errors.
	wantCLI(t, 2, []string{"npuverify: report: --merge: ", "shards overlap"}, "report", "--out", merged, "--precision", "off", "--merge", shards[0], shards[0])
	other := filepath.Join(dir, "other.json")
	b, _ = os.ReadFile(shards[1])
	os.WriteFile(other, bytes.Replace(b, []byte(`"profile": "ascend910b"`), []byte(`"profile": "other"`), 1), 0o644)
	wantCLI(t, 2, []string{"npuverify: report: --merge: ", "meta profile"}, "report", "--out", merged, "--precision", "off", "--merge", shards[0], other)
	wantCLI(t, 2, []string{"npuverify: report: --merge: no result files"}, "report", "--out", merged, "--merge")
	wantCLI(t, 2, []string{`npuverify: report: --decoding "maybe": want on or off`}, "report", "--out", merged, "--decoding", "maybe", "--merge", shards[0])
	wantCLI(t, 2, []string{`npuverify: report: --attention "1": want on or off`}, "report", "--out", merged, "--attention", "1", "--merge", shards[0])
	wantCLI(t, 2, []string{"npuverify: report: unexpected argument", "--merge"}, "report", "--out", merged, shards[0])
	notReport := filepath.Join(dir, "x.json")
	os.WriteFile(notReport, []byte(`{"a": 1}`), 0o644)
	wantCLI(t, 2, []string{"npuverify: report: --merge: ", "x.json", "not a npuverify JSON report"}, "report", "--out", merged, "--merge", notReport)
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestProgress drives the terminal progress line with a fake clock.
func TestProgress(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(100, 0)
	p := &progress{w: &b, what: "npuverify report", total: 4, start: now, now: func() time.Time { return now }}
	now = now.Add(2 * time.Second)
	p.Write([]byte("PASS          a/x (1ms)\nFAIL          a/y (1ms)\nPA"))
	got := b.String()
	for _, s := range []string{"\r\x1b[Knpuverify report: 1/4 cases, 0.5 cases/s, ETA 6s", "\r\x1b[KFAIL          a/y (1ms)\n", "2/4 cases, 1.0 cases/s, ETA 2s"} {
		if !strings.Contains(got, s) {
			t.Errorf("progress output lacks %q:\n%q", s, got)
		}
	}
	if strings.Contains(got, "a/x") {
		t.Errorf("progress repeats a passing case: %q", got)
	}
	p.Write([]byte("SS b\n"))
	if !strings.Contains(b.String(), "3/4 cases") {
		t.Errorf("a line split over writes is not counted once: %q", b.String())
	}
	if newProgress(&b, "x", 1) != nil {
		t.Error("progress on a buffer, which is no terminal")
	}
}
