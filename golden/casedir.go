package golden

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/safefile"
)

// Crash guarantee of Update
//
// Update replaces cases one at a time. Each case directory is, at every
// instant, either wholly the old case or wholly the new one (or absent,
// when it is being added or removed); a crash (SIGKILL, power loss) can
// leave a mix of old and new cases, never a mix within one case, and
// rerunning Update completes the set. The protocol:
//
//  1. every case is generated and judged in memory first; if any case
//     fails, nothing is written;
//  2. a changed or new case is written to <op>/.tmp-<case> beside its
//     directory, every file and directory fsynced;
//  3. it replaces <op>/<case> atomically: renameat2(RENAME_EXCHANGE)
//     swaps the two directories in one step (Linux), and the old tree,
//     now at .tmp-<case>, is removed. Where exchange is unavailable,
//     <case> is renamed to .old-<case>, .tmp-<case> to <case>, and
//     .old-<case> is removed. A new case is renamed into place. The op
//     directory is fsynced after each rename;
//  4. a case that left the set is renamed to <op>/.del-<case>, then
//     removed.
//
// recoverUpdates (run by Update only, under the store's exclusive lock,
// before anything else; readers never modify the store) finishes an
// interrupted protocol: .tmp-* and .del-* are removed (the case directory
// beside them is complete, old or new, or was never there), and an
// .old-<case> whose <case> is missing is renamed back (the crash fell
// between the two renames of the fallback), otherwise removed. Names
// starting with "." are never cases and are not embedded.

// Temporary-name prefixes of the update protocol.
const (
	tmpPrefix = ".tmp-"
	oldPrefix = ".old-"
	delPrefix = ".del-"
)

// fileOpHook, when set (by tests), is called after every file-system step
// of Update that changes the store: the crash test kills a child process
// at each of these points.
var fileOpHook func(step string)

// useExchange selects the renameat2 exchange where available; tests turn
// it off to exercise the two-rename fallback.
var useExchange = true

func step(s string) {
	if fileOpHook != nil {
		fileOpHook(s)
	}
}

// directories two levels down that hold a case.json that parses. Nothing
// else is ever removed by Update.
func listCases(dir string) ([]string, error) {
	var ids []string
	tops, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("golden: %w", err)
	}
	for _, op := range tops {
		if !op.IsDir() || strings.HasPrefix(op.Name(), ".") {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(dir, op.Name()))
		if err != nil {
			return nil, fmt.Errorf("golden: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, op.Name(), e.Name(), CaseJSON))
			if err != nil {
				continue
			}
			if _, err := ParseCaseFile(b); err == nil {
				ids = append(ids, op.Name()+"/"+e.Name())
			}
		}
	}
	return ids, nil
}

// readTree reads every regular file under root into memory, keyed by
// slash path relative to root. A missing root gives fs.ErrNotExist.
func readTree(root string) (map[string][]byte, error) {
	if _, err := os.Stat(root); err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = b
		return nil
	})
	return out, err
}

// isCase reports whether a directory read by readTree is a case: it holds
// a case.json that parses.
func isCase(tree map[string][]byte) bool {
	b, ok := tree[CaseJSON]
	if !ok {
		return false
	}
	_, err := ParseCaseFile(b)
	return err == nil
}

func sameTree(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// writeCase writes files into <dir>/<id> by the protocol of "Crash
// guarantee": temp directory, fsync, atomic swap.
func writeCase(dir, id string, files map[string][]byte, exists bool) error {
	op, name, _ := strings.Cut(id, "/")
	opDir := filepath.Join(dir, op)
	if err := mkdirSynced(opDir); err != nil {
		return err
	}
	tmp := filepath.Join(opDir, tmpPrefix+name)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return err
	}
	step("mkdir " + tmp)
	dirs := map[string]bool{".": true}
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		d := filepath.Dir(filepath.FromSlash(rel))
		if !dirs[d] {
			if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
				return err
			}
			dirs[d] = true
			step("mkdir " + d)
		}
		if err := writeFileSynced(filepath.Join(tmp, filepath.FromSlash(rel)), files[rel]); err != nil {
			return err
		}
		step("write " + rel)
	}
	for _, d := range slices.Sorted(maps.Keys(dirs)) {
		if err := safefile.SyncDir(filepath.Join(tmp, d)); err != nil {
			return err
		}
	}
	step("sync " + tmp)
	caseDir := filepath.Join(opDir, name)
	if !exists {
		if err := os.Rename(tmp, caseDir); err != nil {
			return err
		}
		step("rename " + caseDir)
		return safefile.SyncDir(opDir)
	}
	swapped := false
	if useExchange {
		var err error
		if swapped, err = exchange(tmp, caseDir); err != nil {
			return err
		}
	}
	if swapped {
		step("exchange " + caseDir)
		if err := safefile.SyncDir(opDir); err != nil {
			return err
		}
		step("sync " + opDir)
		if err := os.RemoveAll(tmp); err != nil {
			return err
		}
		step("remove old " + tmp)
		return nil
	}
	// Fallback: two renames; Recover restores .old-<name> if the second
	// never happened.
	old := filepath.Join(opDir, oldPrefix+name)
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	if err := os.Rename(caseDir, old); err != nil {
		return err
	}
	step("rename old " + old)
	if err := os.Rename(tmp, caseDir); err != nil {
		return err
	}
	step("rename new " + caseDir)
	if err := safefile.SyncDir(opDir); err != nil {
		return err
	}
	step("sync " + opDir)
	if err := os.RemoveAll(old); err != nil {
		return err
	}
	step("remove old " + old)
	return nil
}

// removeCase removes <dir>/<id>: one atomic rename out of the store, then
// the deletion.
func removeCase(dir, id string) error {
	op, name, _ := strings.Cut(id, "/")
	opDir := filepath.Join(dir, op)
	del := filepath.Join(opDir, delPrefix+name)
	if err := os.RemoveAll(del); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(opDir, name), del); err != nil {
		return err
	}
	step("rename " + del)
	if err := safefile.SyncDir(opDir); err != nil {
		return err
	}
	if err := os.RemoveAll(del); err != nil {
		return err
	}
	step("remove " + del)
	return nil
}

// removeEmptyOpDirs removes the op directories this update emptied (ops
// emptied lists them) when they are left without any entry.
func removeEmptyOpDirs(dir string, emptied map[string]bool) error {
	for _, op := range slices.Sorted(maps.Keys(emptied)) {
		p := filepath.Join(dir, op)
		entries, err := os.ReadDir(p)
		if err != nil {
			return fmt.Errorf("golden: %w", err)
		}
		if len(entries) == 0 {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("golden: %w", err)
			}
			step("remove " + p)
		}
	}
	return safefile.SyncDir(dir)
}

// recoverUpdates completes or rolls back case updates interrupted in dir
// (see "Crash guarantee"). It is idempotent and cheap when there is nothing
// to do. A missing dir is not an error (nothing to recover). Only Update
// calls it, holding the store's exclusive lock.
func recoverUpdates(dir string) error {
	tops, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("golden: %w", err)
	}
	for _, op := range tops {
		if !op.IsDir() || strings.HasPrefix(op.Name(), ".") {
			continue
		}
		opDir := filepath.Join(dir, op.Name())
		entries, err := os.ReadDir(opDir)
		if err != nil {
			return fmt.Errorf("golden: %w", err)
		}
		changed := false
		for _, e := range entries {
			n := e.Name()
			p := filepath.Join(opDir, n)
			switch {
			case strings.HasPrefix(n, tmpPrefix), strings.HasPrefix(n, delPrefix):
				if err := os.RemoveAll(p); err != nil {
					return fmt.Errorf("golden: recover: %w", err)
				}
				changed = true
			case strings.HasPrefix(n, oldPrefix):
				caseDir := filepath.Join(opDir, strings.TrimPrefix(n, oldPrefix))
				if _, err := os.Stat(caseDir); errors.Is(err, fs.ErrNotExist) {
					err = os.Rename(p, caseDir)
					if err != nil {
						return fmt.Errorf("golden: recover: %w", err)
					}
				} else if err := os.RemoveAll(p); err != nil {
					return fmt.Errorf("golden: recover: %w", err)
				}
				changed = true
			}
		}
		if changed {
			if err := safefile.SyncDir(opDir); err != nil {
				return err
			}
		}
	}
	return nil
}

func mkdirSynced(p string) error {
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return err
	}
	step("mkdir " + p)
	return safefile.SyncDir(filepath.Dir(p))
}

func writeFileSynced(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
