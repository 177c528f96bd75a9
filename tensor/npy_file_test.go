package tensor

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/npuverify/npuverify/safefile"
)

// allocated returns the bytes f allocated on the heap.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// sparseNpy writes a .npy header claiming shape (n,) of fp64 and extends
// the file (sparse, so without disk space) to size bytes.
func sparseNpy(t *testing.T, n string, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sparse.npy")
	if err := os.WriteFile(p, npyBytes(1, npyDict("<f8", "("+n+",)"), nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReadNpyFileMemoryBoundedByCap: what a file or its header claims is
// checked against the file's size before the data is allocated. The old
// reader allocated (and read) by the header's claim: 512 MiB for each of
// these files before finding the data short or long.
func TestReadNpyFileMemoryBoundedByCap(t *testing.T) {
	const limit = 1 << 20
	h := int64(len(npyBytes(1, npyDict("<f8", "(67108864,)"), nil))) // the header's length
	for _, tc := range []struct {
		name string
		size int64
		want string
	}{
		{"3 GiB sparse file, header claims 512 MiB", 3 << 30, "file too large: 3221225472 bytes"},
		{"header claims 512 MiB, file holds 8 bytes less", h + 512<<20 - 8, "truncated data: have 536870904 bytes, want 536870912"},
		{"header claims 512 MiB over a tiny file", h + 72, "truncated data: have 72 bytes, want 536870912"},
		{"header claims 512 MiB, file holds 1 GiB", h + 1<<30, "trailing data: 536870912 bytes after the 536870912 data bytes"},
	} {
		p := sparseNpy(t, "67108864", tc.size)
		var err error
		got := allocated(func() { _, err = ReadNpyFile(p, Float64, ReadOptions{}) })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadNpyFile(%s): got error %v, want one containing %q", tc.name, err, tc.want)
		}
		if got > limit {
			t.Errorf("ReadNpyFile(%s): got %d bytes allocated, want at most %d (rejected before the data is allocated)", tc.name, got, limit)
		}
	}
}

// TestReadNpyFileNotRegular: a FIFO without a writer (os.Open blocked on
// it forever), a device and a link are rejected at once.
func TestReadNpyFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.npy")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "zero.npy")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", link, dir} {
		done := make(chan error, 1)
		go func() {
			_, err := ReadNpyFile(p, 0, ReadOptions{})
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), p) {
				t.Errorf("ReadNpyFile(%s): got %v, want a not-a-regular-file error naming it", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadNpyFile(%s): still blocked after 5s, want an error at once", p)
		}
	}
}

// TestReadNpyDeadline: reading past the deadline is an error.
func TestReadNpyDeadline(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.npy")
	x, err := New(Float32, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteNpyFile(p, x); err != nil {
		t.Fatal(err)
	}
	_, err = ReadNpyFile(p, Float32, ReadOptions{Deadline: time.Now().Add(-time.Second)})
	if err == nil || !strings.Contains(err.Error(), "deadline passed") {
		t.Errorf("ReadNpyFile(deadline a second ago): got %v, want a deadline error", err)
	}
	if _, err := ReadNpyFile(p, Float32, ReadOptions{Deadline: time.Now().Add(time.Minute)}); err != nil {
		t.Errorf("ReadNpyFile(deadline in a minute): got %v, want nil", err)
	}
}

// TestNpyFileDataBytes: the data bytes of a file ReadNpyFile reads, and
// ReadNpyFile's error for one it refuses (a truncated file, a bf16 file
// read without naming bf16), from the header alone.
func TestNpyFileDataBytes(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.npy")
	x := MustNew(Float16, 3, 5)
	if err := WriteNpyFile(p, x); err != nil {
		t.Fatal(err)
	}
	if n, err := NpyFileDataBytes(p, 0, ReadOptions{}); err != nil || n != 30 {
		t.Errorf("NpyFileDataBytes of a [3,5] fp16 file: got %d, %v, want 30, nil", n, err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, raw[:len(raw)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	_, want := ReadNpyFile(p, 0, ReadOptions{})
	if _, err := NpyFileDataBytes(p, 0, ReadOptions{}); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("NpyFileDataBytes of a truncated file: got %v, want ReadNpyFile's %v", err, want)
	}
	b := filepath.Join(dir, "b.npy")
	if err := WriteNpyFile(b, MustNew(BFloat16, 4)); err != nil {
		t.Fatal(err)
	}
	if _, err := NpyFileDataBytes(b, 0, ReadOptions{}); err == nil {
		t.Error("NpyFileDataBytes of a bf16 file read as any dtype: no error")
	}
	if n, err := NpyFileDataBytes(b, BFloat16, ReadOptions{}); err != nil || n != 8 {
		t.Errorf("NpyFileDataBytes of a [4] bf16 file read as bf16: got %d, %v, want 8, nil", n, err)
	}
}
