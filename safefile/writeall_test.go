package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 33 item 10: result files keep their mode and their links, and a
// set of them is replaced together or not at all.

// TestWriteKeepsTheMode: a 0600 file replaced stays 0600 (it became 0644).
func TestWriteKeepsTheMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil { // whatever the umask
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new\n"), 0o644); err != nil {
		t.Fatalf("WriteFile %s over a 0600 file: %v", p, err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.Mode().Perm(), os.FileMode(0o600); got != want {
		t.Errorf("WriteFile %s (perm 0644) over a 0600 file: got mode %v, want %v", p, got, want)
	}
}

// TestWriteRefusesAHardLinkedFile: a file with a second name is left as
// it is, with its link, and the error says why.
func TestWriteRefusesAHardLinkedFile(t *testing.T) {
	dir := t.TempDir()
	p, other := filepath.Join(dir, "r.json"), filepath.Join(dir, "other.json")
	if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p, other); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	err := WriteFile(p, []byte("new\n"), 0o644)
	if !errors.Is(err, ErrLinked) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "2 hard links") {
		t.Errorf("WriteFile %s (hard-linked to %s): got error %v, want one naming the path and its 2 hard links", p, other, err)
	}
	a, _ := os.Stat(p)
	b, _ := os.Stat(other)
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Errorf("WriteFile %s (hard-linked to %s): got the link broken, want it kept", p, other)
	}
	if got, _ := os.ReadFile(other); string(got) != "old\n" {
		t.Errorf("WriteFile %s (hard-linked to %s): got %q in the other name, want %q", p, other, got, "old\n")
	}
	if es := entries(t, dir); len(es) != 2 {
		t.Errorf("WriteFile %s refused: directory holds %v, want the two names only", p, es)
	}
}

// TestWriteAllIsAllOrNone: when one target fails to render, or may not be
// replaced, no target is replaced and no temporary file is left; when all
// can be, all are.
func TestWriteAllIsAllOrNone(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.xml")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	broken := errors.New("render failed")
	for _, tc := range []struct {
		name    string
		targets []Target
		want    string // in the error
	}{
		{"the second fails to render", []Target{{a, 0o644, text("new\n")}, {b, 0o644, func(io.Writer) error { return broken }}}, "render failed"},
		{"the first fails to render", []Target{{a, 0o644, func(io.Writer) error { return broken }}, {b, 0o644, text("new\n")}}, "render failed"},
		{"the second's directory is missing", []Target{{a, 0o644, text("new\n")}, {filepath.Join(dir, "no", "c"), 0o644, text("new\n")}}, filepath.Join(dir, "no", "c")},
	} {
		err := WriteAll(tc.targets)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WriteAll, %s: got error %v, want one containing %q", tc.name, err, tc.want)
		}
		for _, p := range []string{a, b} {
			if got, _ := os.ReadFile(p); string(got) != "old\n" {
				t.Errorf("WriteAll, %s: got %s = %q, want it left as %q", tc.name, p, got, "old\n")
			}
		}
		if es := entries(t, dir); len(es) != 2 {
			t.Errorf("WriteAll, %s: directory holds %v, want a.json and b.xml only", tc.name, es)
		}
	}
	if err := WriteAll([]Target{{a, 0o644, text("new a\n")}, {b, 0o644, text("new b\n")}}); err != nil {
		t.Fatalf("WriteAll of two writable targets: %v", err)
	}
	for p, want := range map[string]string{a: "new a\n", b: "new b\n"} {
		if got, _ := os.ReadFile(p); string(got) != want {
			t.Errorf("WriteAll of two writable targets: got %s = %q, want %q", p, got, want)
		}
	}
}

// TestCheckTarget: a missing directory, a file where the directory should
// be, a read-only directory (for a user that permissions bind) and a
// target that may not be replaced are each an error naming the path; a
// writable place is not, and the check leaves nothing behind.
func TestCheckTarget(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "missing", "r.json"), "no such file or directory"},
		{filepath.Join(file, "r.json"), "not a directory"},
		{filepath.Join(dir, "sub"), "is a directory"},
	} {
		if err := CheckTarget(tc.path); err == nil || !strings.Contains(err.Error(), tc.path) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckTarget(%s): got %v, want an error naming it and containing %q", tc.path, err, tc.want)
		}
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := CheckTarget(filepath.Join(ro, "r.json")); err == nil || !strings.Contains(err.Error(), "cannot write into its directory") {
			t.Errorf("CheckTarget in a read-only directory: got %v, want cannot write into its directory", err)
		}
	}
	ok := filepath.Join(dir, "sub", "r.json")
	if err := CheckTarget(ok); err != nil {
		t.Errorf("CheckTarget(%s): got %v, want nil", ok, err)
	}
	if es := entries(t, filepath.Join(dir, "sub")); len(es) != 0 {
		t.Errorf("CheckTarget(%s): left %v behind", ok, es)
	}
}

// TestPrepareAbortCommit: prepared files change no target until Commit;
// Abort leaves every target as it was and no temporary file; a target
// that may no longer be replaced at Commit (here made a symbolic link
// since) fails it, with nothing replaced and nothing left; a second
// Commit is an error.
func TestPrepareAbortCommit(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "cost.json")
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	targets := []Target{{a, 0o644, text("new a\n")}, {b, 0o644, text("new b\n")}}
	unchanged := func(when string) {
		t.Helper()
		for _, p := range []string{a, b} {
			if got, _ := os.ReadFile(p); string(got) != "old\n" {
				t.Errorf("%s: got %s = %q, want it left as %q", when, p, got, "old\n")
			}
		}
	}

	p, err := Prepare(targets)
	if err != nil {
		t.Fatal(err)
	}
	unchanged("prepared")
	if es := entries(t, dir); len(es) != 4 {
		t.Errorf("prepared: directory holds %v, want the two targets and two temporary files", es)
	}
	p.Abort()
	unchanged("aborted")
	if es := entries(t, dir); len(es) != 2 {
		t.Errorf("aborted: directory holds %v, want the two targets only", es)
	}
	if err := p.Commit(); err == nil {
		t.Error("Commit after Abort: no error")
	}

	p, err = Prepare(targets)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err == nil || !strings.Contains(err.Error(), b) {
		t.Errorf("Commit over a target made a symbolic link since Prepare: got %v, want an error naming %s", err, b)
	}
	if got, _ := os.ReadFile(a); string(got) != "old\n" {
		t.Errorf("failed Commit: got %s = %q, want it left as %q", a, got, "old\n")
	}
	if es := entries(t, dir); len(es) != 2 {
		t.Errorf("failed Commit: directory holds %v, want the two targets only", es)
	}
	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}

	p, err = Prepare(targets)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{a: "new a\n", b: "new b\n"} {
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("committed: got %s = %q, want %q", path, got, want)
		}
	}
	if err := p.Commit(); err == nil {
		t.Error("second Commit: no error")
	}
}
