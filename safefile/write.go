package safefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile writes data to path atomically with permissions perm; see
// Write.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Write renders into path atomically: render writes into a temporary file
// beside path, which is fsynced, given permissions perm, renamed over path,
// and the directory is fsynced, so a reader (or a crash) sees the old file
// or the whole new one, never a part. When render or any step fails, path
// is left as it was and the temporary file is removed.
//
// Only a regular file is ever replaced: when path exists and is anything
// else (a symlink, even to a regular file, a FIFO, a device, a directory,
// a socket) Write refuses before writing anything, so an output flag
// pointed at /dev/full or at a link cannot replace it. The check is made
// again just before the rename; a file swapped in between loses only its
// directory entry (rename never writes through a link or into a device).
// Every error names path.
func Write(path string, perm fs.FileMode, render func(io.Writer) error) (err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
	}()
	if err := replaceable(path); err != nil {
		return err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriter(f)
	if err := render(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := replaceable(path); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// replaceable reports, as an error, why path must not be replaced: it
// exists and is not a regular file. A missing path is replaceable.
func replaceable(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("refusing to replace it: it %s: %w", kind(st.Mode()), ErrNotRegular)
}

// SyncDir fsyncs directory dir, which makes the entries created, renamed
// or removed in it durable (a rename alone survives a crash only once its
// directory is synced).
func SyncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
