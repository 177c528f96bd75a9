package golden

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// digestTree maps every entry under root to its mode and, for a regular
// file, the sha256 of its content: two equal digests mean nothing under
// root was written, removed or added.
func digestTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := info.Mode().String()
		if info.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestUpdateKeepsOthersUnlessPrune holds UpdateWith to issue 33 item 8: a
// case of the store that is not in the generated set (a user's own) is
// kept and listed unless Prune; DryRun prints what would happen, with or
// without Prune, and writes nothing, not even into a missing directory.
func TestUpdateKeepsOthersUnlessPrune(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	all := smallCases(0, "fp16_uniform_n15", "fp16_uniform_n16")
	set := all[:1]
	const user = "vector_add/fp16_uniform_n16"

	var out bytes.Buffer
	ch, err := UpdateWith(ctx, dir, newEmulator(), all, &out, UpdateOptions{DryRun: true})
	if err != nil || len(ch.Added) != 2 {
		t.Fatalf("dry run into a missing directory: %+v, %v\n%s", ch, err, out.String())
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Fatalf("dry run into a missing directory created %s", dir)
	}
	if s := out.String(); !strings.Contains(s, "would be added    "+user) || !strings.Contains(s, "dry run, nothing written") {
		t.Errorf("dry run output lacks the would-be additions or the dry-run note:\n%s", s)
	}
	if _, err := Update(ctx, dir, newEmulator(), all, io.Discard); err != nil {
		t.Fatal(err)
	}
	before := digestTree(t, dir)

	for _, tc := range []struct {
		name string
		opts UpdateOptions
		want Changes
		text string
	}{
		{"dry run", UpdateOptions{DryRun: true}, Changes{Kept: []string{user}, Unchanged: 1}, "kept     " + user},
		{"dry run with prune", UpdateOptions{DryRun: true, Prune: true}, Changes{Removed: []string{user}, Unchanged: 1}, "would be removed  " + user},
		{"update", UpdateOptions{}, Changes{Kept: []string{user}, Unchanged: 1}, "kept     " + user},
	} {
		out.Reset()
		ch, err := UpdateWith(ctx, dir, newEmulator(), set, &out, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(ch, tc.want) {
			t.Errorf("%s (%+v): changes %+v, want %+v\n%s", tc.name, tc.opts, ch, tc.want, out.String())
		}
		if !strings.Contains(out.String(), tc.text) {
			t.Errorf("%s (%+v): output lacks %q:\n%s", tc.name, tc.opts, tc.text, out.String())
		}
		if after := digestTree(t, dir); !maps.Equal(after, before) {
			t.Errorf("%s (%+v) changed the store:\nbefore %v\nafter  %v", tc.name, tc.opts, before, after)
		}
	}

	out.Reset()
	ch, err = UpdateWith(ctx, dir, newEmulator(), set, &out, UpdateOptions{Prune: true})
	if want := (Changes{Removed: []string{user}, Unchanged: 1}); err != nil || !reflect.DeepEqual(ch, want) {
		t.Fatalf("prune: %+v, %v, want %+v\n%s", ch, err, want, out.String())
	}
	if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(user))); err == nil {
		t.Errorf("prune left %s", user)
	}
}
