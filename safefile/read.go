// Package safefile reads and writes files without following links, blocking on FIFOs, or replacing what is not a regular file.
//
// Every file the harness reads may have been put there by someone else: a
// kernel writing its outputs, a user pointing --profile or --in at
// /dev/zero, a golden store whose case.json is a FIFO or a symbolic link.
// os.Open follows the link, blocks forever on a FIFO without a writer, and
// os.ReadFile reads a device until memory runs out. Open and ReadFile here
// refuse all of that before reading a byte: the final path component is
// opened with O_NOFOLLOW|O_NONBLOCK (a FIFO opens at once and is then
// rejected), and the checks are made with fstat on the open descriptor,
// so a file swapped for another between a Stat and the Open is still
// judged by what was actually opened.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"
)

// ErrNotRegular is wrapped by the errors about a path that is a symbolic
// link, a directory, a FIFO, a device or a socket.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the errors about a file larger than the
// caller's cap (at open, or because it grew while being read).
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading if it is a regular file of at most maxBytes
// bytes (maxBytes < 0: no size cap), and returns the file and its fstat
// information. The final path component is not followed if it is a
// symbolic link, and opening never blocks (a FIFO without a writer is
// rejected at once). Errors are *fs.PathError naming the path (escaped by
// Quote) and wrap ErrNotRegular or ErrTooLarge where they apply.
func Open(path string, maxBytes int64) (*os.File, os.FileInfo, error) {
	// Lstat first, so that a device is rejected without being opened at
	// all (opening some devices has effects); the fstat below is what
	// decides, since the path may change in between.
	if fi, err := os.Lstat(path); err == nil {
		if err := check(fi, maxBytes); err != nil {
			return nil, nil, pathErr("open", path, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, syscall.ELOOP) {
			err = fmt.Errorf("is a symbolic link (not followed), %w", ErrNotRegular)
		}
		return nil, nil, pathErr("open", path, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(fi, maxBytes)
	}
	if err != nil {
		f.Close()
		return nil, nil, pathErr("open", path, err)
	}
	return f, fi, nil
}

// check holds fi to a regular file of at most maxBytes bytes.
func check(fi os.FileInfo, maxBytes int64) error {
	m := fi.Mode()
	if !m.IsRegular() {
		return fmt.Errorf("%s, %w", kind(m), ErrNotRegular)
	}
	if maxBytes >= 0 && fi.Size() > maxBytes {
		return fmt.Errorf("%w: %d bytes, more than the limit of %d", ErrTooLarge, fi.Size(), maxBytes)
	}
	return nil
}

// kind names what a non-regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "is a symbolic link (not followed)"
	case m.IsDir():
		return "is a directory"
	case m&fs.ModeNamedPipe != 0:
		return "is a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "is a character device"
	case m&fs.ModeDevice != 0:
		return "is a block device"
	case m&fs.ModeSocket != 0:
		return "is a socket"
	}
	return "has mode " + m.String()
}

// ReadFile reads the whole of path, which must be a regular file (see
// Open) of at most maxBytes bytes (maxBytes ≥ 0). A file that grows past
// maxBytes while it is read is an error wrapping ErrTooLarge, never a
// silent truncation.
func ReadFile(path string, maxBytes int64) ([]byte, error) {
	f, fi, err := Open(path, maxBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, fi.Size(), maxBytes)
}

// readAll reads r to its end, at most maxBytes bytes; size is the expected
// length (a hint for the first allocation).
func readAll(r io.Reader, path string, size, maxBytes int64) ([]byte, error) {
	if maxBytes < 0 {
		return nil, pathErr("read", path, fmt.Errorf("negative size cap %d", maxBytes))
	}
	buf := make([]byte, 0, min(max(size, 0), maxBytes)+1)
	for {
		if int64(len(buf)) == int64(cap(buf)) {
			grow := min(int64(cap(buf)), maxBytes+1-int64(len(buf)), 1<<26)
			buf = append(buf, make([]byte, max(grow, 512))...)[:len(buf)]
		}
		room := int64(cap(buf) - len(buf))
		if left := maxBytes + 1 - int64(len(buf)); left < room {
			room = left
		}
		n, err := r.Read(buf[len(buf) : len(buf)+int(room)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > maxBytes {
			return nil, pathErr("read", path, fmt.Errorf("%w: grew past the limit of %d bytes while being read", ErrTooLarge, maxBytes))
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, pathErr("read", path, err)
		}
	}
}

// ReadFS reads name from fsys with the guarantees of ReadFile: for a
// directory opened with os.DirFS the file is read with ReadFile itself
// (os.DirFS would follow a link and block on a FIFO); for any other file
// system (embed.FS, fstest.MapFS, ...) the file must stat as a regular file
// of at most maxBytes bytes and is read with the same cap.
func ReadFS(fsys fs.FS, name string, maxBytes int64) ([]byte, error) {
	if root, ok := dirFSRoot(fsys); ok {
		if !fs.ValidPath(name) {
			return nil, pathErr("open", name, fs.ErrInvalid)
		}
		return ReadFile(filepath.Join(root, filepath.FromSlash(name)), maxBytes)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil {
		err = check(fi, maxBytes)
	}
	if err != nil {
		return nil, pathErr("open", name, err)
	}
	return readAll(f, name, fi.Size(), maxBytes)
}

// dirFSType is the type os.DirFS returns (unexported; a string holding the
// root directory).
var dirFSType = reflect.TypeOf(os.DirFS("."))

// dirFSRoot returns the directory of an os.DirFS file system.
func dirFSRoot(fsys fs.FS) (string, bool) {
	v := reflect.ValueOf(fsys)
	if !v.IsValid() || v.Type() != dirFSType || v.Kind() != reflect.String {
		return "", false
	}
	return v.String(), true
}

// pathErr wraps err with the operation and the escaped path.
func pathErr(op, path string, err error) error {
	return &fs.PathError{Op: op, Path: Quote(path), Err: err}
}

// Quote renders a path (or any name from outside) for a message: as it is
// when every character is printable, otherwise Go-quoted, so that a newline,
// a carriage return, an escape sequence or any other control character in
// a file name cannot start a line of its own or rewrite the terminal.
func Quote(s string) string {
	if printable(s) {
		return s
	}
	return strconv.Quote(s)
}

// printable reports whether s is valid UTF-8 made of printable characters
// (spaces included, no control or format characters).
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return false
		}
	}
	return true
}

// EscapeLine escapes every control character of one line of text (C0
// including \r and ESC, DEL, C1, Unicode format characters such as
// bidirectional overrides, invalid UTF-8) as a Go escape (\r, \x1b,
// \u009b, ...), keeping tabs and everything printable as it is. Quoted
// output of another program passes through it, so that it cannot forge a
// line of the harness.
func EscapeLine(s string) string {
	if printable(strings.ReplaceAll(s, "\t", " ")) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\t':
			b.WriteByte('\t')
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // '\r', '\x1b', '\u009b'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}
