package golden

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/npuverify/npuverify/safefile"
	"github.com/npuverify/npuverify/tensor"
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

// Changes summarises what Update did.
type Changes struct {
	Added, Removed, Changed []string // case IDs, sorted
	// Kept are the cases of the store that were not in the generated set
	// and were left alone (UpdateOptions.Prune unset).
	Kept      []string
	Unchanged int
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Removed)+len(c.Changed) == 0 }

// String is the one-line summary Update prints last.
func (c Changes) String() string {
	s := fmt.Sprintf("%d added, %d removed, %d changed, %d unchanged", len(c.Added), len(c.Removed), len(c.Changed), c.Unchanged)
	if len(c.Kept) > 0 {
		s += fmt.Sprintf(", %d kept", len(c.Kept))
	}
	return s
}

// generated is one case rendered in memory.
type generated struct {
	id    string
	file  *CaseFile
	files map[string][]byte // slash path relative to the case dir → content (case.json included)
}

// Generate runs c on b and renders its case directory in memory: the
// inputs, the outputs as expected/, and case.json with the metrics and
// budgets of this run; for a recipe (c.Recipe), case.json alone, with the
// sha256 of every tensor (recipe.go). A result that does not pass the case's policy is an
// error: a golden must never record a wrong answer.
func generate(ctx context.Context, b backend.Backend, c ops.Case) (*generated, error) {
	if !validName(c.Op) || !validName(c.Name) {
		return nil, fmt.Errorf("case %q of op %q: names must be non-empty, not start with '.', and contain no '/'", c.Name, c.Op)
	}
	id := c.Op + "/" + c.Name
	if c.Recipe {
		if err := recordsRecipes(b); err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
	}
	pc, err := harness.Prepare(c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	res, err := harness.RunPrepared(ctx, b, pc, harness.Options{})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	if !res.Pass() {
		return nil, fmt.Errorf("%s: backend %s fails the case's own policy; not recording it:\n%s", id, b.Name(), res.Verify.Failure())
	}
	cf := &CaseFile{Format: FormatVersion, Case: c, Metrics: map[string]Metrics{}}
	cf.Params, cf.Dims, cf.Labels = pc.Params, cloneDims(c.Dims), slices.Clone(c.Labels)
	if cf.Policy == "" {
		cf.Policy = "bound"
	}
	files := map[string][]byte{}
	inSpecs, err := pc.Op.Inputs(pc.Params, pc.Inputs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	for _, s := range inSpecs {
		t, ok := pc.Inputs[s.Name]
		if !ok {
			continue // an optional input the case does not use
		}
		e, data, err := encode(s.Name, s.Name+".npy", t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		cf.Inputs, files = appendEntry(cf.Inputs, files, e, data, c.Recipe)
	}
	outSpecs, err := pc.Op.Outputs(pc.Params, pc.Inputs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	for _, s := range outSpecs {
		e, data, err := encode(s.Name, ExpectedDir+"/"+s.Name+".npy", res.Outputs[s.Name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", id, err)
		}
		cf.Outputs, files = appendEntry(cf.Outputs, files, e, data, c.Recipe)
	}
	for _, o := range res.Verify.Outputs {
		cf.Metrics[o.Name] = summarize(o.Metrics)
	}
	if m := res.Measurement; m != nil && m.Model != nil {
		cf.Budgets = &Budgets{
			Cycles: m.Model.Cycles, VectorUtil: round6(m.Model.VectorUtil),
			LoadBalance: round6(m.Model.LoadBalance), GMBytes: m.Model.GMBytes(),
		}
	}
	js, err := cf.Marshal()
	if err != nil {
		return nil, fmt.Errorf("%s: case.json: %w", id, err)
	}
	files[CaseJSON] = js
	return &generated{id: id, file: cf, files: files}, nil
}

// appendEntry lists a tensor in case.json and adds its file to the case
// directory, or, in a recipe, lists it with its sha256 and no file.
func appendEntry(list []FileEntry, files map[string][]byte, e FileEntry, data []byte, recipe bool) ([]FileEntry, map[string][]byte) {
	if recipe {
		e.File = ""
	} else {
		files[e.File] = data
	}
	return append(list, e), files
}

func encode(name, file string, t *tensor.Tensor) (FileEntry, []byte, error) {
	var buf bytes.Buffer
	if err := tensor.WriteNpy(&buf, t); err != nil {
		return FileEntry{}, nil, fmt.Errorf("%s: %w", file, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return FileEntry{Name: name, File: file, DType: t.DType, Shape: slices.Clone(t.Shape), SHA256: hex.EncodeToString(sum[:])}, buf.Bytes(), nil
}

// Update regenerates the store in dir from cases using backend b (the
// emulator, for the checked-in set): every case is run and judged, then
// written atomically (see "Crash guarantee" above) if any of its files
// changed; case directories not in cases are removed. What changed is
// printed to w: added and removed cases, and for changed ones each file
// with its old → new sha256 and the deltas of metrics and budgets.
//
// dir must be a store (it holds MarkerName), or missing or empty: then it
// becomes one. Any other directory is refused (an input error) before
// anything is written. Update holds the store's exclusive lock throughout
// (see "Store identity and locking") and removes only directories it
// recognises as cases.
//
// Update is UpdateWith with Prune: the package's own -update flag keeps
// the checked-in set exactly the default cases.
func Update(ctx context.Context, dir string, b backend.Backend, cases []ops.Case, w io.Writer) (Changes, error) {
	return UpdateWith(ctx, dir, b, cases, w, UpdateOptions{Prune: true})
}

// UpdateOptions choose what UpdateWith may do to cases it was not given
// and whether it writes at all: a store under --dir may hold a user's own
// cases (recorded by explore or by hand), which an update of the default
// set has no business deleting unless asked.
type UpdateOptions struct {
	// Prune removes the cases in dir that are not in cases. Without it
	// they are kept and listed as kept.
	Prune bool
	// DryRun generates and judges every case and prints what would be
	// added, changed and removed, but writes nothing: no marker, no lock
	// file, no recovery of an interrupted update. It takes the store's
	// shared lock while it reads, when dir is already a store.
	DryRun bool
}

// UpdateWith is Update with the choices of opts; Changes.Kept lists the
// cases it left alone because they are not in cases (without Prune).
func UpdateWith(ctx context.Context, dir string, b backend.Backend, cases []ops.Case, w io.Writer, opts UpdateOptions) (Changes, error) {
	ch, err := record(ctx, dir, b, cases, w, "golden update", opts, true)
	if err == nil {
		if opts.DryRun {
			fmt.Fprintf(w, "golden %s (dry run, nothing written): %s\n", dir, ch)
		} else {
			fmt.Fprintf(w, "golden %s: %s\n", dir, ch)
		}
	}
	return ch, err
}

// record is the body of Update and Add: generate and judge every case in
// memory, lock the store, read every existing target (refusing one that is
// not a case) before writing anything, then replace each changed case
// atomically. With opts.Prune it removes the case directories not in
// cases; otherwise, when listKept, it lists them as kept (Add, whose
// stores are meant to accumulate, lists nothing). With opts.DryRun it
// stops before the first write and prints what it would do. what prefixes
// every error.
func record(ctx context.Context, dir string, b backend.Backend, cases []ops.Case, w io.Writer, what string, opts UpdateOptions, listKept bool) (Changes, error) {
	var ch Changes
	if err := mayUpdate(dir); err != nil {
		return ch, fmt.Errorf("%s: %w", what, err)
	}
	gens := map[string]*generated{}
	for _, c := range cases {
		g, err := generate(ctx, b, c)
		if err != nil {
			return ch, fmt.Errorf("%s: %w", what, err)
		}
		if _, dup := gens[g.id]; dup {
			return ch, fmt.Errorf("%s: case %s is listed twice", what, g.id)
		}
		gens[g.id] = g
	}
	isStore := true
	if opts.DryRun {
		// Read-only: a missing directory, or one without the marker
		// (mayUpdate let only an empty one through), holds no case.
		if _, err := os.Lstat(filepath.Join(dir, MarkerName)); err != nil {
			isStore = false
		} else {
			l, err := lockStore(ctx, dir, false, false)
			if err != nil {
				return ch, fmt.Errorf("%s: %w", what, err)
			}
			defer l.release()
		}
	} else {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return ch, fmt.Errorf("%s: %w", what, err)
		}
		l, err := lockStore(ctx, dir, true, true)
		if err != nil {
			return ch, fmt.Errorf("%s: %w", what, err)
		}
		defer l.release()
		if err := recoverUpdates(dir); err != nil {
			return ch, err
		}
	}
	var existing []string
	if isStore && (opts.Prune || listKept) {
		var err error
		if existing, err = listCases(dir); err != nil {
			return ch, err
		}
	}
	// Every existing target is read (and must be a case) before anything
	// is written: a refused update changes nothing.
	olds := map[string]map[string][]byte{}
	for _, id := range slices.Sorted(maps.Keys(gens)) {
		if !isStore {
			continue
		}
		caseDir := filepath.Join(dir, filepath.FromSlash(id))
		old, err := readTree(caseDir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return ch, fmt.Errorf("%s: %w", what, err)
		}
		if old != nil && !isCase(old) {
			return ch, &harness.InputError{Err: fmt.Errorf("%s: %s exists but is not a case (no %s that parses); refusing to replace it", what, caseDir, CaseJSON)}
		}
		olds[id] = old
	}
	would := ""
	if opts.DryRun {
		would = "would be "
	}
	for _, id := range slices.Sorted(maps.Keys(gens)) {
		if err := ctx.Err(); err != nil {
			return ch, err
		}
		g, old := gens[id], olds[id]
		switch {
		case old == nil:
			ch.Added = append(ch.Added, id)
			fmt.Fprintf(w, "%sadded    %s (%s)\n", would, id, strings.Join(slices.Sorted(maps.Keys(g.files)), ", "))
		case sameTree(old, g.files):
			ch.Unchanged++
			continue
		default:
			ch.Changed = append(ch.Changed, id)
			fmt.Fprintf(w, "%schanged  %s\n", would, id)
			describeChange(w, old, g.files)
		}
		if opts.DryRun {
			continue
		}
		if err := writeCase(dir, id, g.files, old != nil); err != nil {
			return ch, fmt.Errorf("%s: %s: %w", what, id, err)
		}
	}
	emptied := map[string]bool{}
	for _, id := range existing {
		if _, keep := gens[id]; keep {
			continue
		}
		if !opts.Prune {
			ch.Kept = append(ch.Kept, id)
			fmt.Fprintf(w, "kept     %s (not in the generated set; --prune removes it)\n", id)
			continue
		}
		ch.Removed = append(ch.Removed, id)
		fmt.Fprintf(w, "%sremoved  %s\n", would, id)
		if opts.DryRun {
			continue
		}
		emptied[opOf(id)] = true
		if err := removeCase(dir, id); err != nil {
			return ch, fmt.Errorf("%s: %s: %w", what, id, err)
		}
	}
	if opts.DryRun {
		return ch, nil
	}
	if err := removeEmptyOpDirs(dir, emptied); err != nil {
		return ch, err
	}
	return ch, nil
}

// listCases returns the IDs of the cases under dir, sorted: the non-hidden
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
