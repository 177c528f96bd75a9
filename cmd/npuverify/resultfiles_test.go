package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 33 item 10 (and the run half of item 8): what the catalogue's form
// cannot say, file modes and hard links, and an input kept from its run.

// TestResultFilesKeepModeAndLinks: check's --json over a 0600 file left it
// 0644, and over a hard-linked one cut the link. Now the mode is kept,
// and a hard-linked target is refused before the first case, the file and
// its other name left as they were.
func TestResultFilesKeepModeAndLinks(t *testing.T) {
	dir := t.TempDir()
	js, ju := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	for _, p := range []string{js, ju} {
		if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"check", "--run", "^vector_add/fp16_uniform_n17$", "--json", js, "--junit", ju}
	code, _, e := cli(t, args...)
	subject := "npuverify " + strings.Join(args, " ")
	if code != 0 {
		t.Fatalf("%s: got exit %d, want 0\nstderr:\n%s", subject, code, e)
	}
	for _, p := range []string{js, ju} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: got %s with mode %v (%v), want it kept at 0600", subject, p, st.Mode().Perm(), err)
		}
		if b, _ := os.ReadFile(p); bytes.Equal(b, []byte("old\n")) {
			t.Errorf("%s: got %s not replaced", subject, p)
		}
	}

	other := filepath.Join(dir, "kept.json")
	if err := os.Link(js, other); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	before, _ := os.ReadFile(js)
	code, o, e := cli(t, args...)
	subject += " (--json hard-linked to " + other + ")"
	if want := "npuverify: check: --json: " + js + ": refusing to replace it: it has 2 hard links"; code != exitUsage || !strings.Contains(e, want) {
		t.Errorf("%s: got exit %d, stderr\n%s\nwant exit %d and %q", subject, code, e, exitUsage, want)
	}
	if strings.Contains(o, "CASE") {
		t.Errorf("%s: got the table printed:\n%s\nwant the refusal before the first case", subject, o)
	}
	a, _ := os.Stat(js)
	b, _ := os.Stat(other)
	after, _ := os.ReadFile(other)
	if a == nil || b == nil || !os.SameFile(a, b) || !bytes.Equal(after, before) {
		t.Errorf("%s: got the link cut or the file changed, want both names on the old content", subject)
	}
}

// TestRunKeepsItsInput: run --in x=z.npy --out . replaced its own input
// z.npy with its output. Now it is a usage error before the kernel runs,
// and the input is as it was.
func TestRunKeepsItsInput(t *testing.T) {
	dir := t.TempDir()
	x, y, _, _ := writeInputs(t, dir, "fp16", 17)
	z := filepath.Join(dir, "z.npy")
	if err := os.Rename(x, z); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(z)
	args := []string{"run", "vector_add", "--param", "dtype=fp16", "--in", "x=" + z, "--in", "y=" + y, "--out", dir}
	code, _, e := cli(t, args...)
	subject := "npuverify " + strings.Join(args, " ")
	want := "npuverify: run: --out " + dir + ": would replace " + z + ", the --in x file"
	if code != exitUsage || !strings.Contains(e, want) {
		t.Errorf("%s: got exit %d, stderr\n%s\nwant exit %d and %q", subject, code, e, exitUsage, want)
	}
	if after, _ := os.ReadFile(z); !bytes.Equal(after, before) {
		t.Errorf("%s: got the input %s changed, want it kept", subject, z)
	}
	if _, err := os.Stat(filepath.Join(dir, "cost.json")); err == nil {
		t.Errorf("%s: got cost.json written, want nothing written", subject)
	}
}
