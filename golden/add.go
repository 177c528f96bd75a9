package golden

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
)

// Add records cases into the store in dir with backend b (the emulator, the
// store's recorder), as Update does, but without removing any case it is
// not given: npuverify explore adds the failures it found to a store that
// may already hold earlier ones (its example database), and a second
// explorer writing there must not lose the first one's cases. A case with
// the ID of an existing case replaces it; other cases are left alone.
//
// The guarantees are Update's: every case is generated and judged in
// memory first (a case the recorder itself fails is an error and nothing
// is written), dir must be a store or missing or empty (then it becomes
// one, marker first), the store's exclusive lock is held throughout, and
// each case directory is replaced atomically ("Crash guarantee" in
// update.go). What was added or changed is printed to w.
func Add(ctx context.Context, dir string, b backend.Backend, cases []ops.Case, w io.Writer) (Changes, error) {
	var ch Changes
	if err := mayUpdate(dir); err != nil {
		return ch, fmt.Errorf("golden add: %w", err)
	}
	gens := map[string]*generated{}
	for _, c := range cases {
		g, err := generate(ctx, b, c)
		if err != nil {
			return ch, fmt.Errorf("golden add: %w", err)
		}
		if _, dup := gens[g.id]; dup {
			return ch, fmt.Errorf("golden add: case %s is listed twice", g.id)
		}
		gens[g.id] = g
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ch, fmt.Errorf("golden add: %w", err)
	}
	l, err := lockStore(ctx, dir, true, true)
	if err != nil {
		return ch, fmt.Errorf("golden add: %w", err)
	}
	defer l.release()
	if err := recoverUpdates(dir); err != nil {
		return ch, err
	}
	olds := map[string]map[string][]byte{}
	for _, id := range slices.Sorted(maps.Keys(gens)) {
		caseDir := filepath.Join(dir, filepath.FromSlash(id))
		old, err := readTree(caseDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ch, fmt.Errorf("golden add: %w", err)
		}
		if old != nil && !isCase(old) {
			return ch, &harness.InputError{Err: fmt.Errorf("golden add: %s exists but is not a case (no %s that parses); refusing to replace it", caseDir, CaseJSON)}
		}
		olds[id] = old
	}
	for _, id := range slices.Sorted(maps.Keys(gens)) {
		if err := ctx.Err(); err != nil {
			return ch, err
		}
		g, old := gens[id], olds[id]
		switch {
		case old == nil:
			ch.Added = append(ch.Added, id)
			fmt.Fprintf(w, "added    %s (%s)\n", id, strings.Join(slices.Sorted(maps.Keys(g.files)), ", "))
		case sameTree(old, g.files):
			ch.Unchanged++
			continue
		default:
			ch.Changed = append(ch.Changed, id)
			fmt.Fprintf(w, "changed  %s\n", id)
			describeChange(w, old, g.files)
		}
		if err := writeCase(dir, id, g.files, old != nil); err != nil {
			return ch, fmt.Errorf("golden add: %s: %w", id, err)
		}
	}
	return ch, nil
}
