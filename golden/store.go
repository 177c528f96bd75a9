package golden

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/safefile"
)

// Store identity and locking
//
// A directory is a golden store only if it holds the marker file
// MarkerName, a small JSON object with the marker's format version. Update
// writes it when it creates a store (in a missing or empty directory) and
// refuses any other directory without it, so that pointing --dir at a
// source tree cannot delete anything; OpenDir refuses a directory without
// it too. Update removes only case directories it recognises (a case.json
// that parses, at <op>/<case>/case.json) and only op directories it has
// itself emptied.
//
// The marker is also the store's lock (flock): Update holds it exclusively
// from before it recovers an interrupted update until it has written the
// last case; OpenDir takes it shared and the Store holds it until Close,
// so a reader sees the store before or after an update, never during one,
// and two updates run one after the other. Waiting for the lock is bounded
// by lockWait and the context.

// MarkerName is the file that identifies a directory as a golden store.
const MarkerName = ".npuverify-store"

// MarkerFormat is the version of the marker's content this package writes
// and reads.
const MarkerFormat = 1

// markerKind is the marker's "kind": it says what the file is to a reader
// who finds it.
const markerKind = "npuverify golden store"

// markerMaxSize bounds what is read of a marker: the real one is under 64
// bytes, so anything near this is not one.
const markerMaxSize = 4096

// lockWait bounds how long Update or OpenDir waits for a lock another
// process holds. A reader holds the shared lock for its whole run (a
// check through a slow exec backend can take minutes); an update holds the
// exclusive one for about a second on the default set. Tests shorten it.
var lockWait = 5 * time.Minute

// lockPoll is the interval between attempts to take a busy lock.
const lockPoll = 20 * time.Millisecond

// markerFile is the content of MarkerName.
type markerFile struct {
	Format int    `json:"format"`
	Kind   string `json:"kind"`
}

func markerContent() []byte {
	b, _ := json.Marshal(markerFile{Format: MarkerFormat, Kind: markerKind}) // cannot fail
	return append(b, '\n')
}

// storeLock is a held lock on a store's marker.
type storeLock struct{ f *os.File }

func (l *storeLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the flock
	l.f = nil
	return err
}

// notStore is the error for a directory without the marker.
func notStore(dir, why string) error {
	return &harness.InputError{Err: fmt.Errorf("%s is not an npuverify golden store (no %s marker): %s", dir, MarkerName, why)}
}

// checkDir reports whether dir exists and is a directory; a missing dir is
// fs.ErrNotExist, anything but a directory an input error.
func checkDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return &harness.InputError{Err: fmt.Errorf("%s: not a directory", dir)}
	}
	return nil
}

// mayUpdate refuses, before anything is computed or written, a dir that
// Update must not touch: anything but a directory, or a directory that
// holds files but no marker. A missing or empty directory, or a store,
// may be updated (lockStore checks the marker's content under the lock).
func mayUpdate(dir string) error {
	err := checkDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(dir, MarkerName)); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return notStore(dir, refuseText(entries))
	}
	return nil
}

// refuseText says why a directory without a marker is not made a store.
func refuseText(entries []fs.DirEntry) string {
	names := make([]string, 0, 3)
	for _, e := range entries[:min(3, len(entries))] {
		names = append(names, e.Name())
	}
	more := ""
	if len(entries) > 3 {
		more = ", …"
	}
	return fmt.Sprintf("it holds other files (%s%s); refusing to write to it (give an empty or missing directory to create a store)", strings.Join(names, ", "), more)
}

// readMarker reads and checks the marker's content through its open
// descriptor. An empty marker reports empty (a store whose creation was
// interrupted, or is in progress).
func readMarker(dir string, f *os.File) (empty bool, err error) {
	b, err := io.ReadAll(io.LimitReader(f, markerMaxSize+1))
	if err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Join(dir, MarkerName), err)
	}
	if len(b) == 0 {
		return true, nil
	}
	bad := func(format string, args ...any) error {
		return &harness.InputError{Err: fmt.Errorf("%s: %s", filepath.Join(dir, MarkerName), fmt.Sprintf(format, args...))}
	}
	if len(b) > markerMaxSize {
		return false, bad("larger than %d bytes: not a store marker", markerMaxSize)
	}
	var m markerFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return false, bad("not a store marker: %v", err)
	}
	if m.Kind != markerKind {
		return false, bad("kind %q, want %q", m.Kind, markerKind)
	}
	if m.Format != MarkerFormat {
		return false, bad("format %d, this npuverify reads format %d", m.Format, MarkerFormat)
	}
	return false, nil
}

// lockStore takes dir's marker lock, shared or exclusive, waiting at most
// lockWait (and never past ctx), and checks the marker's content. The
// marker must exist; create says a missing one may be created because
// dir is empty (Update only).
func lockStore(ctx context.Context, dir string, exclusive, create bool) (*storeLock, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	var f *os.File
	for f == nil {
		var err error
		f, err = openMarker(dir, exclusive)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, MarkerName), err)
		}
		entries, rerr := os.ReadDir(dir)
		if rerr != nil {
			return nil, rerr
		}
		if !create {
			return nil, notStore(dir, "refusing to read it")
		}
		if len(entries) > 0 {
			return nil, notStore(dir, refuseText(entries))
		}
		if f, err = createMarker(dir); errors.Is(err, fs.ErrExist) {
			continue // another update created it first: open theirs
		} else if err != nil {
			return nil, err
		}
	}
	l := &storeLock{f: f}
	if err := flockWait(ctx, f, exclusive); err != nil {
		l.release()
		kind := "a golden update"
		if exclusive {
			kind = "another golden update or a reader (check, golden verify)"
		}
		return nil, &harness.InputError{Err: fmt.Errorf("%s: the store is locked by %s: %w", dir, kind, err)}
	}
	empty, err := readMarker(dir, f)
	if err == nil && empty {
		err = completeMarker(dir, f, create)
	}
	if err != nil {
		l.release()
		return nil, err
	}
	return l, nil
}

// completeMarker writes the content of an empty marker, which only an
// interrupted or concurrent creation leaves, and only when the store is
// still empty: anything else is not a store this package made.
func completeMarker(dir string, f *os.File, create bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if !create || slices.ContainsFunc(entries, func(e fs.DirEntry) bool { return e.Name() != MarkerName }) {
		return notStore(dir, "the marker is empty")
	}
	if _, err := f.WriteAt(markerContent(), 0); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, MarkerName), err)
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return safefile.SyncDir(dir)
}

// flockWait takes the lock, polling until it is free, lockWait has passed
// or ctx is done.
func flockWait(ctx context.Context, f *os.File, exclusive bool) error {
	deadline := time.Now().Add(lockWait)
	for {
		ok, err := tryLock(f, exclusive)
		if err != nil || ok {
			return err
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("gave up after waiting %s", lockWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}

// Close releases the store's shared lock (OpenDir). A Store must not be
// used after Close; closing the embedded store, or twice, does nothing.
func (s *Store) Close() error {
	l := s.lock
	s.lock = nil
	return l.release()
}
