//go:build unix

package golden

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
)

// TestConcurrentUpdatersAndChecker runs two updates (one writing the old
// set, one the new) and a check on one store at the same time, 20 rounds.
// The lock serialises them: after every round the store is wholly one of
// the two sets and verifies clean, no update fails, and the check, which
// holds the shared lock for its whole run, sees every case whole (each
// passes bit-exactly against its own expected/).
func TestConcurrentUpdatersAndChecker(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	sets := [2][]ops.Case{crashCases(crashOld()), crashCases(crashNew())}
	var want [2]map[string]map[string][]byte
	for i, set := range sets {
		ref := filepath.Join(base, fmt.Sprintf("ref%d", i))
		if _, err := Update(ctx, ref, newEmulator(), set, io.Discard); err != nil {
			t.Fatal(err)
		}
		want[i] = trees(t, ref)
	}
	dir := filepath.Join(base, "store")
	if _, err := Update(ctx, dir, newEmulator(), sets[0], io.Discard); err != nil {
		t.Fatal(err)
	}
	const rounds = 20
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for i := range 2 {
			wg.Go(func() {
				set := sets[(round+i)%2]
				if _, err := Update(ctx, dir, newEmulator(), set, io.Discard); err != nil {
					errs <- fmt.Errorf("updater %d: %w", i, err)
				}
			})
		}
		wg.Go(func() {
			s, err := OpenDir(dir)
			if err != nil {
				errs <- fmt.Errorf("checker: %w", err)
				return
			}
			defer s.Close()
			res, err := Check(ctx, s, newEmulator(), CheckOptions{})
			if err != nil {
				errs <- fmt.Errorf("checker: %w", err)
				return
			}
			for _, r := range res {
				if r.Err != nil || !r.Pass() {
					errs <- fmt.Errorf("checker: %s: not whole: err %v, pass %v", r.ID, r.Err, r.Pass())
				}
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: %v", round, err)
		}
		got := trees(t, dir)
		if !equalTrees(got, want[0]) && !equalTrees(got, want[1]) {
			ids := slices.Sorted(func(yield func(string) bool) {
				for id := range got {
					if !yield(id) {
						return
					}
				}
			})
			t.Fatalf("round %d: the store is neither set: cases %v", round, ids)
		}
		if h := hidden(t, dir); len(h) > 0 {
			t.Errorf("round %d: leftovers %v", round, h)
		}
		s, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range Verify(s) {
			t.Errorf("round %d: verify: %v", round, err)
		}
		s.Close()
	}
	t.Logf("%d rounds of two updaters and a checker: every round serialised, store verified clean", rounds)
}

// TestLockWaitIsBounded: an update waits for a reader, and a reader for an
// update, at most lockWait, then fails with an input error that says the
// store is locked (never a raw file-system error).
func TestLockWaitIsBounded(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	cases := crashCases(crashOld())
	if _, err := Update(ctx, dir, newEmulator(), cases, io.Discard); err != nil {
		t.Fatal(err)
	}
	defer func(d time.Duration) { lockWait = d }(lockWait)
	lockWait = 200 * time.Millisecond

	r, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Update(ctx, dir, newEmulator(), cases, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the store is locked by another golden update or a reader") || !harness.IsInput(err) {
		t.Errorf("update while a reader holds the store: err = %v, want an input error saying the store is locked", err)
	}
	if d := time.Since(start); d > lockWait+5*time.Second {
		t.Errorf("update waited %s, want about %s", d, lockWait)
	}
	r.Close()

	w, err := lockStore(ctx, dir, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), "the store is locked by a golden update") {
		t.Errorf("open during an update: err = %v, want it to say the store is locked", err)
	}
	w.release()
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatalf("open after the update released the lock: %v", err)
	}
	s.Close()
}

// TestUpdateRefusesNonStore: a directory with other content and no marker
// is refused before anything is written; an empty one becomes a store.
func TestUpdateRefusesNonStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := filepath.Join(dir, "src", "app")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Update(ctx, dir, newEmulator(), crashCases(crashOld()), io.Discard)
	if err == nil || !harness.IsInput(err) || !strings.Contains(err.Error(), "is not an npuverify golden store") {
		t.Fatalf("err = %v, want an input error: not a store", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 || entries[0].Name() != "src" {
		t.Errorf("the refused directory changed: %v", entries)
	}
	empty := t.TempDir()
	if _, err := Update(ctx, empty, newEmulator(), crashCases(crashOld()), io.Discard); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(empty, MarkerName))
	if err != nil || string(b) != string(markerContent()) {
		t.Errorf("marker = %q, %v; want %q", b, err, markerContent())
	}
	if _, err := OpenDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no "+MarkerName+" marker") {
		t.Errorf("OpenDir of an empty directory: err = %v, want not a store", err)
	}
}

// TestMarkerMustBeARegularFile: a marker that is a FIFO (which would block
// a plain open), a symlink or a directory is refused at once, by readers
// and by Update, and nothing is written.
func TestMarkerMustBeARegularFile(t *testing.T) {
	for _, kind := range []string{"fifo", "symlink", "directory"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, MarkerName)
			var err error
			switch kind {
			case "fifo":
				err = syscall.Mkfifo(p, 0o644)
			case "symlink":
				target := filepath.Join(t.TempDir(), "marker")
				if err = os.WriteFile(target, markerContent(), 0o644); err == nil {
					err = os.Symlink(target, p)
				}
			case "directory":
				err = os.Mkdir(p, 0o755)
			}
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 2)
			go func() {
				_, err := OpenDir(dir)
				done <- err
			}()
			go func() {
				_, err := Update(context.Background(), dir, newEmulator(), crashCases(crashOld()), io.Discard)
				done <- err
			}()
			for range 2 {
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), MarkerName) {
						t.Errorf("marker is a %s: err = %v, want a refusal naming the marker", kind, err)
					}
				case <-time.After(time.Minute):
					t.Fatalf("marker is a %s: hangs", kind)
				}
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("marker is a %s: the directory now holds %d entries", kind, len(entries))
			}
		})
	}
}
