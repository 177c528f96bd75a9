package safefile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"
)

// within runs f and fails the test if it does not return within 5 s (the
// old os.Open blocked forever on a FIFO without a writer).
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still blocked after 5s, want an error at once", what)
	}
}

func wantErr(t *testing.T, what string, err error, is error, contains ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: got no error, want one wrapping %v", what, is)
	}
	if is != nil && !errors.Is(err, is) {
		t.Errorf("%s: got %v, want an error wrapping %v", what, err, is)
	}
	for _, c := range contains {
		if !strings.Contains(err.Error(), c) {
			t.Errorf("%s: got %q, want it to contain %q", what, err, c)
		}
	}
}

func TestReadFileRejectsWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target.json")
	if err := os.WriteFile(target, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want string
	}{
		{link, "a symbolic link (not followed)"},
		{fifo, "a FIFO"},
		{"/dev/zero", "a character device"},
		{dir, "a directory"},
	} {
		within(t, tc.path, func() {
			_, err := ReadFile(tc.path, 1<<20)
			wantErr(t, "ReadFile("+tc.path+")", err, ErrNotRegular, tc.path+": is "+tc.want+", not a regular file")
		})
		within(t, tc.path, func() {
			f, _, err := Open(tc.path, -1)
			if f != nil {
				f.Close()
			}
			wantErr(t, "Open("+tc.path+")", err, ErrNotRegular, tc.want)
		})
	}
	if b, err := ReadFile(target, 2); err != nil || string(b) != "{}" {
		t.Errorf("ReadFile(%s, 2): got %q, %v, want %q, nil", target, b, err, "{}")
	}
}

func TestReadFileCapsSize(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 1001), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p, 1000)
	wantErr(t, "ReadFile(1001 bytes, cap 1000)", err, ErrTooLarge, p, "1001 bytes, more than the limit of 1000")
	if b, err := ReadFile(p, 1001); err != nil || len(b) != 1001 {
		t.Errorf("ReadFile(1001 bytes, cap 1001): got %d bytes, %v, want 1001, nil", len(b), err)
	}
	// A sparse file far larger than the cap is rejected by its size, without
	// reading (a read would take seconds and the memory).
	sparse := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(sparse)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(3 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = ReadFile(sparse, 1<<20)
	wantErr(t, "ReadFile(sparse 3 GiB)", err, ErrTooLarge, "3221225472 bytes")
}

// TestReadAllGrowingFile: a file that grows past the cap while it is read
// (its size at open was under the cap) is an error, not a truncation.
func TestReadAllGrowingFile(t *testing.T) {
	r := bytes.NewReader(bytes.Repeat([]byte("y"), 5000))
	_, err := readAll(r, "grown", 10, 4096)
	wantErr(t, "readAll(5000 bytes, size 10 at open, cap 4096)", err, ErrTooLarge, "grown", "grew past the limit of 4096")
	b, err := readAll(bytes.NewReader(bytes.Repeat([]byte("y"), 4096)), "exact", 10, 4096)
	if err != nil || len(b) != 4096 {
		t.Errorf("readAll(4096 bytes, cap 4096): got %d bytes, %v, want 4096, nil", len(b), err)
	}
}

func TestReadFS(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "case.json"), []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")); err != nil {
		t.Fatal(err)
	}
	fsys := os.DirFS(dir)
	if b, err := ReadFS(fsys, "case.json", 100); err != nil || string(b) != `{"a":1}` {
		t.Errorf("ReadFS(DirFS, case.json): got %q, %v", b, err)
	}
	for _, name := range []string{"fifo.json", "zero.json"} {
		within(t, name, func() {
			_, err := ReadFS(fsys, name, 100)
			wantErr(t, "ReadFS(DirFS, "+name+")", err, ErrNotRegular, filepath.Join(dir, name))
		})
	}
	_, err := ReadFS(fsys, "case.json", 3)
	wantErr(t, "ReadFS(DirFS, case.json, cap 3)", err, ErrTooLarge)
	_, err = ReadFS(fsys, "../x", 3)
	wantErr(t, "ReadFS(DirFS, ../x)", err, fs.ErrInvalid)

	m := fstest.MapFS{"a/case.json": {Data: []byte("12345")}}
	if b, err := ReadFS(m, "a/case.json", 5); err != nil || string(b) != "12345" {
		t.Errorf("ReadFS(MapFS): got %q, %v", b, err)
	}
	_, err = ReadFS(m, "a/case.json", 4)
	wantErr(t, "ReadFS(MapFS, cap 4)", err, ErrTooLarge)
	_, err = ReadFS(m, "a", 4)
	wantErr(t, "ReadFS(MapFS, a directory)", err, ErrNotRegular, "a directory")
}

func TestQuoteAndEscapeLine(t *testing.T) {
	for _, tc := range []struct{ in, quote, line string }{
		{"plain/path.npy", "plain/path.npy", "plain/path.npy"},
		{"tab\there", `"tab\there"`, "tab\there"},
		{"evil\nnpuverify: run: all outputs verified", `"evil\nnpuverify: run: all outputs verified"`, `evil\nnpuverify: run: all outputs verified`},
		{"progress 10%\rnpuverify: run: all outputs verified", `"progress 10%\rnpuverify: run: all outputs verified"`, `progress 10%\rnpuverify: run: all outputs verified`},
		{"\x1b[2K\x1b[1Gok", `"\x1b[2K\x1b[1Gok"`, `\x1b[2K\x1b[1Gok`},
		{"c1 \u009b2K", `"c1 \u009b2K"`, `c1 \u009b2K`},
		{"bad \x9b byte", `"bad \x9b byte"`, `bad \x9b byte`},
		{"bidi \u202e", `"bidi \u202e"`, `bidi \u202e`},
		{"ünïcode ok", "ünïcode ok", "ünïcode ok"},
	} {
		if got := Quote(tc.in); got != tc.quote {
			t.Errorf("Quote(%q): got %s, want %s", tc.in, got, tc.quote)
		}
		if got := EscapeLine(tc.in); got != tc.line {
			t.Errorf("EscapeLine(%q): got %s, want %s", tc.in, got, tc.line)
		}
	}
}
