//go:build !unix

package golden

import (
	"fmt"
	"os"
	"path/filepath"
)

// openMarker opens dir's marker and holds it to be a small regular file.
func openMarker(dir string, write bool) (*os.File, error) {
	flags := os.O_RDONLY
	if write {
		flags = os.O_RDWR
	}
	f, err := os.OpenFile(filepath.Join(dir, MarkerName), flags, 0)
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
		return nil, fmt.Errorf("not a store marker (a regular file of at most %d bytes)", markerMaxSize)
	}
	return f, nil
}

// createMarker creates an empty marker in dir.
func createMarker(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, MarkerName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
}

// tryLock does not lock where flock is unavailable: concurrent updates of
// one store are not serialised there.
func tryLock(*os.File, bool) (bool, error) { return true, nil }
