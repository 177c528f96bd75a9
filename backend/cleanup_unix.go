//go:build unix

package backend

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"

	"github.com/npuverify/npuverify/safefile"
)

// removeTree removes the case directory dir whatever the command did to
// it: os.RemoveAll first; when that fails (a directory left without read,
// write or search permission, or a tree deeper than PATH_MAX lets a path
// name), a walk that holds one directory descriptor at a time, gives each
// directory u+rwx before reading it, descends and climbs through
// openat(2) relative to that descriptor (no path is ever longer than one
// name, so depth is unlimited), and checks on every climb that ".." is the
// directory it came down from (a tree moved under it is not followed out
// of dir). What still cannot be removed is an error naming its path: a
// leftover must fail the run, never pass silently.
func removeTree(dir string) error {
	if os.RemoveAll(dir) == nil {
		return nil
	}
	if err := removeWalk(dir); err != nil {
		return fmt.Errorf("case directory %s could not be removed: %w", safefile.Quote(dir), err)
	}
	return nil
}

// frame is a directory on the walk's path down: its name in its parent
// and its identity, to check the climb back through "..".
type frame struct {
	name     string
	dev, ino uint64
}

// fileID identifies a file: its device and inode numbers.
type fileID struct{ dev, ino uint64 }

func removeWalk(dir string) error {
	// The top directory itself may have lost its permissions.
	if err := os.Chmod(dir, 0o700); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	cur, err := openDir(unix.AT_FDCWD, dir)
	if err != nil {
		return err
	}
	st, err := fstat(cur)
	if err != nil {
		unix.Close(cur)
		return err
	}
	stack := []frame{{name: dir, dev: st.dev, ino: st.ino}}
	where := func(name string) string {
		p := dir
		for _, f := range stack[1:] {
			p = path.Join(p, f.name)
		}
		return safefile.Quote(path.Join(p, name))
	}
	// What could not be removed: the first few errors, and the
	// directories not to go down into again (they hold such an entry).
	var errs []error
	stuck := map[fileID]bool{}
	fail := func(err error) {
		if len(errs) < 4 {
			errs = append(errs, err)
		}
	}
	for {
		if err := unix.Fchmod(cur, 0o700); err != nil {
			fail(fmt.Errorf("chmod %s: %w", where(""), err))
		}
		child, err := clearDir(cur, stuck, func(name string, err error) { fail(fmt.Errorf("%s: %w", where(name), err)) })
		if err != nil {
			fail(fmt.Errorf("reading %s: %w", where(""), err))
		}
		if child != "" { // a non-empty directory: go down into it
			next, err := openDir(cur, child)
			if err != nil {
				fail(fmt.Errorf("%s: %w", where(child), err))
				if cst, serr := fstatat(cur, child); serr == nil {
					stuck[cst] = true
				} else {
					break
				}
				continue
			}
			st, err := fstat(next)
			if err != nil {
				unix.Close(next)
				fail(fmt.Errorf("%s: %w", where(child), err))
				break
			}
			unix.Close(cur)
			stack = append(stack, frame{name: child, dev: st.dev, ino: st.ino})
			cur = next
			continue
		}
		// cur holds nothing it can lose any more: climb and remove it.
		if len(stack) == 1 {
			break
		}
		top := stack[len(stack)-1]
		parent, err := unix.Openat(cur, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			fail(fmt.Errorf("open %s/..: %w", where(""), err))
			break
		}
		unix.Close(cur)
		cur = parent
		stack = stack[:len(stack)-1]
		up := stack[len(stack)-1]
		if pst, err := fstat(parent); err != nil || pst.dev != up.dev || pst.ino != up.ino {
			fail(fmt.Errorf("%s: the tree was moved while being removed; not followed", where(top.name)))
			break
		}
		if err := unix.Unlinkat(parent, top.name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
			if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
				fail(fmt.Errorf("rmdir %s: %w", where(top.name), err)) // else: what it holds has been reported
			}
			stuck[fileID{top.dev, top.ino}] = true
		}
	}
	unix.Close(cur)
	if len(errs) == 0 {
		if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("rmdir %s: %w", safefile.Quote(dir), err)
		}
		return nil
	}
	return errors.Join(errs...)
}

// clearDir removes every entry of the directory open as fd that is not a
// non-empty directory, and returns the name of the first non-empty
// directory it meets that is not stuck ("" when there is none left). An
// entry that cannot be removed is reported through fail and left.
func clearDir(fd int, stuck map[fileID]bool, fail func(name string, err error)) (name string, err error) {
	// A fresh descriptor reads the directory from its start; fd itself is
	// kept for the *at calls.
	dup, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(dup), ".")
	defer f.Close()
	for {
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			if !e.IsDir() {
				if err := unix.Unlinkat(fd, e.Name(), 0); err != nil && !errors.Is(err, unix.ENOENT) {
					fail(e.Name(), err)
				}
				continue
			}
			if st, err := fstatat(fd, e.Name()); err == nil && stuck[st] {
				continue
			}
			err := unix.Unlinkat(fd, e.Name(), unix.AT_REMOVEDIR)
			switch {
			case err == nil, errors.Is(err, unix.ENOENT):
			case errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
				return e.Name(), nil
			default:
				fail(e.Name(), err)
				if st, err := fstatat(fd, e.Name()); err == nil {
					stuck[st] = true
				}
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
	}
}

// openDir opens the directory name relative to dirfd without following a
// symbolic link, giving it u+rwx first when it has lost them.
func openDir(dirfd int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	fd, err := unix.Openat(dirfd, name, flags, 0)
	if errors.Is(err, unix.EACCES) {
		if err := unix.Fchmodat(dirfd, name, 0o700, 0); err != nil {
			return -1, fmt.Errorf("chmod: %w", err)
		}
		fd, err = unix.Openat(dirfd, name, flags, 0)
	}
	if err != nil {
		return -1, fmt.Errorf("open: %w", err)
	}
	return fd, nil
}

func fstatat(dirfd int, name string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileID{}, err
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, nil
}

func fstat(fd int) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileID{}, err
	}
	return fileID{uint64(st.Dev), uint64(st.Ino)}, nil
}
