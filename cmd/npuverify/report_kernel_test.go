package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/internal/ckernel"
)

// TestReportOnKernelOps: `report --backend exec:K --op vector_add` is a
// report about that kernel alone: every vector_add case of the embedded
// store and no other op's, run on K; the emulator's studies left out and
// the report saying so; each failing case (the C kernel with its 16-bit
// index fault fails the cases past 65536 elements) listed with its
// failing check, in the report and on stderr. An unknown --op is
// a usage error naming the valid ops.
func TestReportOnKernelOps(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the C kernel and runs every vector_add golden case through it")
	}
	bin := ckernel.Build(t)
	t.Setenv(ckernel.FaultEnv, "index16")
	out := t.TempDir()
	const failing = "vector_add/fp16_uniform_n65537"
	args := []string{"report", "--backend", "exec:" + bin, "--op", "vector_add", "--out", out, "--format", "md,json"}
	_, stderr := wantCLI(t, 1, []string{"npuverify: report: " + failing + `: output "z"`}, args...)
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "npuverify: report: vector_add/") || !strings.Contains(l, `: output "z" (`) || !strings.Contains(l, "out of bound") {
			t.Errorf("npuverify %s (fault index16): stderr line %q: want a vector_add case's failing check (output \"z\", out of bound)", strings.Join(args, " "), l)
		}
	}
	var js struct {
		Meta  map[string]string `json:"meta"`
		Cases []struct {
			ID string `json:"id"`
		} `json:"cases"`
	}
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &js); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	want := 0
	for _, c := range golden.Embedded().Cases() {
		if strings.HasPrefix(c.ID, "vector_add/") {
			want++
		}
	}
	got := 0
	for _, c := range js.Cases {
		if !strings.HasPrefix(c.ID, "vector_add/") {
			t.Errorf("report --op vector_add: case %s of another op in report.json", c.ID)
			continue
		}
		got++
	}
	if got != want {
		t.Errorf("report --op vector_add: %d vector_add cases in report.json, want every one of the store's %d", got, want)
	}
	if js.Meta["backend"] != "exec:"+bin || js.Meta["ops"] != "vector_add" || !strings.Contains(js.Meta["studies"], "not run") {
		t.Errorf("report --op vector_add --backend exec:K: meta %q: want backend exec:K, ops vector_add, studies not run", js.Meta)
	}

	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"## GEMM precision modes", "## Attention quality", "## Incremental decoding", "## Timelines"} {
		if strings.Contains(string(md), absent) {
			t.Errorf("report --backend exec:K: report.md has a study section (%q), want none", absent)
		}
	}
	var line string
	for _, l := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(l, "- ["+failing+"]") {
			line = l
		}
	}
	for _, sub := range []string{`output "z"`, "out of bound"} {
		if !strings.Contains(line, sub) {
			t.Errorf("report.md, failing case %s (fault index16): line %q, want it to contain %q", failing, line, sub)
		}
	}

	wantCLI(t, 2, []string{"--op", "valid:", "vector_add"}, "report", "--op", "vector_ad", "--out", t.TempDir())
}
