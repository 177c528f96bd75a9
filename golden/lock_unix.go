//go:build unix

package golden

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openMarker opens dir's marker without following a symlink and without
// blocking on a FIFO, and holds it to be a small regular file. An updater
// opens it for writing (it may complete an empty marker).
func openMarker(dir string, write bool) (*os.File, error) {
	flags := unix.O_RDONLY
	if write {
		flags = unix.O_RDWR
	}
	p := filepath.Join(dir, MarkerName)
	f, err := os.OpenFile(p, flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("is a symbolic link, not a store marker")
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > markerMaxSize {
		f.Close()
		return nil, fmt.Errorf("not a store marker (a regular file of at most %d bytes): mode %s, %d bytes", markerMaxSize, st.Mode(), st.Size())
	}
	return f, nil
}

// createMarker creates an empty marker in dir (fs.ErrExist when another
// process did first); lockStore then writes its content under the lock.
func createMarker(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, MarkerName), os.O_RDWR|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
}

// tryLock takes an flock on f without blocking; false means another open
// file description holds a conflicting lock.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		}
		return false, fmt.Errorf("flock %s: %w", f.Name(), err)
	}
}
