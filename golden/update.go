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
	"github.com/npuverify/npuverify/tensor"
)

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
