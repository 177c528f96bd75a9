package safefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
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
// Only a regular file with no other hard link is ever replaced: when path
// exists and is anything else (a symlink, even to a regular file, a FIFO,
// a device, a directory, a socket) Write refuses before writing anything,
// so an output flag pointed at /dev/full or at a link cannot replace it;
// a file with more than one link is refused too (ErrLinked), because a
// rename would cut it off from its other names. A replaced file keeps its
// permissions (a 0600 file stays 0600): perm applies to a new file. The
// check is made again just before the rename; a file swapped in between
// loses only its directory entry (rename never writes through a link or
// into a device). Every error names path.
func Write(path string, perm fs.FileMode, render func(io.Writer) error) error {
	return WriteAll([]Target{{Path: path, Perm: perm, Render: render}})
}

// Target is one file of a set that WriteAll replaces together.
type Target struct {
	Path   string
	Perm   fs.FileMode // for a new file; an existing one keeps its own
	Render func(io.Writer) error
}

// WriteAll writes every target as Write does, all or none: each is
// rendered into its temporary file first, and only when every one is
// whole and fsynced are they renamed into place, so a render that fails,
// a full disk or a target that may not be replaced leaves every target as
// it was. (A rename failing between two others, which only a file system
// gone bad does, is reported naming what was replaced.) Every error
// names its path. It is Prepare followed by Commit.
func WriteAll(targets []Target) error {
	p, err := Prepare(targets)
	if err != nil {
		return err
	}
	return p.Commit()
}

// Pending is a set of targets rendered into fsynced temporary files beside
// their paths, not yet in place: Commit puts them all in place, Abort
// removes them. A caller can prepare its result files while it still
// computes something that decides whether they are wanted (run renders
// its outputs while it judges them: the fsync of tens of MiB is disk time
// the judgement's computing hides).
type Pending struct {
	targets []Target
	tmps    []string
}

// Prepare renders every target into its own new fsynced temporary file,
// all at once (each on a goroutine of its own, so that their fsyncs
// overlap), and returns them pending; on any error none is left, and the
// error is the first failing target's in the order given, naming its path.
// A target that may not be replaced (see Write) fails here, before it is
// rendered, and again at Commit if it became so since.
func Prepare(targets []Target) (*Pending, error) {
	tmps := make([]string, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { tmps[i], errs[i] = writeTemp(t) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			for _, t := range tmps {
				if t != "" {
					os.Remove(t)
				}
			}
			return nil, fmt.Errorf("%s: %w", targets[i].Path, err)
		}
	}
	return &Pending{targets: targets, tmps: tmps}, nil
}

// Abort removes the pending temporary files; the targets stay as they
// were. It does nothing after Commit.
func (p *Pending) Abort() {
	for _, t := range p.tmps {
		if t != "" {
			os.Remove(t)
		}
	}
	p.tmps = nil
}

// Commit renames every pending file into place, after checking again that
// each target may be replaced (none is renamed unless all may), and fsyncs
// their directories. On an error before the first rename every temporary
// file is removed and every target is as it was.
func (p *Pending) Commit() (err error) {
	targets, tmps := p.targets, p.tmps
	if tmps == nil && len(targets) > 0 {
		return errors.New("safefile: Commit of aborted or committed files")
	}
	p.tmps = nil
	defer func() {
		if err != nil {
			for _, t := range tmps {
				if t != "" {
					os.Remove(t)
				}
			}
		}
	}()
	for _, t := range targets {
		if _, err := replaceable(t.Path); err != nil {
			return fmt.Errorf("%s: %w", t.Path, err)
		}
	}
	dirs := map[string]bool{}
	for i, t := range targets {
		if err := os.Rename(tmps[i], t.Path); err != nil {
			done := make([]string, i)
			for j := range done {
				done[j] = targets[j].Path
			}
			tmps = tmps[i:]
			if i == 0 {
				return fmt.Errorf("%s: %w", t.Path, err)
			}
			return fmt.Errorf("%s: %w (already replaced: %s)", t.Path, err, strings.Join(done, ", "))
		}
		dirs[dirOf(t.Path)] = true
	}
	tmps = nil
	for d := range dirs {
		if err := SyncDir(d); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	return nil
}

// writeTemp renders t into a new fsynced temporary file beside t.Path,
// with t.Path's own permissions when it exists (t.Perm otherwise), and
// returns its name; on error nothing is left.
func writeTemp(t Target) (tmp string, err error) {
	old, err := replaceable(t.Path)
	if err != nil {
		return "", err
	}
	perm := t.Perm
	if old != nil {
		perm = old.Mode().Perm()
	}
	f, err := os.CreateTemp(dirOf(t.Path), "."+filepath.Base(t.Path)+".tmp*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	bw := bufio.NewWriter(f)
	if err := t.Render(bw); err != nil {
		return "", err
	}
	if err := bw.Flush(); err != nil {
		return "", err
	}
	if err := f.Chmod(perm); err != nil {
		return "", err
	}
	if err := f.Sync(); err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return f.Name(), nil
}

func dirOf(path string) string {
	dir, _ := filepath.Split(path)
	if dir == "" {
		return "."
	}
	return dir
}

// ErrLinked is wrapped by the errors about a file that has other hard
// links, which replacing it would break.
var ErrLinked = errors.New("has other hard links")

// replaceable reports, as an error, why path must not be replaced: it
// exists and is not a regular file, or has other hard links. A missing
// path is replaceable (info nil); an existing one's info is returned.
func replaceable(path string) (fs.FileInfo, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("refusing to replace it: it %s: %w", kind(st.Mode()), ErrNotRegular)
	}
	if n := links(st); n > 1 {
		return nil, fmt.Errorf("refusing to replace it: it has %d hard links, which a new file in its place would cut off (write to another name): %w", n, ErrLinked)
	}
	return st, nil
}

// links is the file's hard-link count (1 where the system does not say).
func links(st fs.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Nlink)
	}
	return 1
}

// CheckTarget reports, as an error naming path, why a later Write to path
// would fail for want of a place to write: its directory is missing, is
// not a directory or takes no new file (tried: a temporary file is
// created and removed), or path may not be replaced (see Write). A
// command calls it for each of its result files before doing any work,
// so that a mistyped directory is found at once, not after a long run.
func CheckTarget(path string) error {
	if _, err := replaceable(path); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	dir := dirOf(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: directory %w", path, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %s is not a directory", path, dir)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check*")
	if err != nil {
		return fmt.Errorf("%s: cannot write into its directory: %w", path, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
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
