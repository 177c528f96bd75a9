package safefile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// entries lists dir's entry names, to show that no temporary file is left.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestWriteCreatesAndReplacesRegularFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	for _, content := range []string{"first\n", "second, longer\n"} {
		if err := WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatalf("WriteFile %s: %v", p, err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != content || st.Mode().Perm() != 0o644 {
			t.Errorf("WriteFile %s: content %q mode %v, want %q mode %v", p, got, st.Mode().Perm(), content, os.FileMode(0o644))
		}
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Errorf("WriteFile %s: directory holds %v, want only out.json (no temporary left)", p, es)
	}
}

// TestWriteRefusesWhatIsNotARegularFile: a symlink (to a regular file), a
// FIFO and a directory stay exactly as they were, nothing is written
// through them, and the error names the path.
func TestWriteRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	before := entries(t, dir)
	for _, tc := range []struct{ path, kind string }{{link, "symbolic link"}, {fifo, "FIFO"}, {sub, "directory"}} {
		st0, err := os.Lstat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		err = WriteFile(tc.path, []byte("new\n"), 0o644)
		if err == nil || !errors.Is(err, ErrNotRegular) || !strings.HasPrefix(err.Error(), tc.path+": ") || !strings.Contains(err.Error(), tc.kind) {
			t.Errorf("WriteFile %s (a %s): error %v, want one starting with the path, naming a %s, wrapping ErrNotRegular", tc.path, tc.kind, err, tc.kind)
		}
		st1, err := os.Lstat(tc.path)
		if err != nil || st1.Mode() != st0.Mode() || !os.SameFile(st0, st1) {
			t.Errorf("WriteFile %s (a %s): entry changed: mode %v → %v (err %v)", tc.path, tc.kind, st0.Mode(), st1.Mode(), err)
		}
	}
	if got, _ := os.ReadFile(target); string(got) != "keep\n" {
		t.Errorf("WriteFile %s: the link's target now holds %q, want %q", link, got, "keep\n")
	}
	if after := entries(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("WriteFile refusals: directory %v became %v, want unchanged", before, after)
	}
}

// TestDeviceIsNotReplaceable checks the refusal on a real character device
// without calling Write on it (a broken check must not get to replace
// /dev/null when the tests run as root).
func TestDeviceIsNotReplaceable(t *testing.T) {
	st, err := os.Lstat(os.DevNull)
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Skipf("%s is not a character device here (%v)", os.DevNull, err)
	}
	if _, err := replaceable(os.DevNull); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
		t.Errorf("replaceable(%s) = %v, want a refusal naming a character device", os.DevNull, err)
	}
}

// TestFailedWriteKeepsTheOldFile: a render that fails part-way leaves the
// old content in place and no temporary file behind.
func TestFailedWriteKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.md")
	if err := os.WriteFile(p, []byte("old report\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("render failed")
	err := Write(p, 0o644, func(w io.Writer) error {
		if _, err := io.WriteString(w, strings.Repeat("partial ", 1<<14)); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), p+": ") {
		t.Errorf("Write %s with a failing render: error %v, want %v prefixed by the path", p, err, boom)
	}
	if got, _ := os.ReadFile(p); string(got) != "old report\n" {
		t.Errorf("Write %s failed, but the file now holds %d bytes starting %.20q, want %q", p, len(got), got, "old report\n")
	}
	if es := entries(t, dir); len(es) != 1 {
		t.Errorf("Write %s failed: directory holds %v, want only report.md", p, es)
	}
}

func TestWriteIntoMissingDirectoryNamesThePath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "no", "such", "out.xml")
	if err := WriteFile(p, []byte("x"), 0o644); err == nil || !strings.HasPrefix(err.Error(), p+": ") {
		t.Errorf("WriteFile %s: error %v, want one starting with the path", p, err)
	}
}
