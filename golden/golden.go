// Package golden is the golden case store (docs/golden.md): a directory tree
//
//	cases/<op>/<case>/case.json              the case and what was recorded for it
//	cases/<op>/<case>/<name>.npy             its inputs
//	cases/<op>/<case>/expected/<name>.npy    the emulator's (bit-exact) outputs
//
// checked into the source tree and embedded in every binary (Embedded), so
// the CLI checks it from anywhere. A store can also be opened from any
// directory of that shape that holds the store marker (OpenDir; see
// "Store identity and locking" in store.go), or Open on an fs.FS.
//
// The default case set lives in Go code (DefaultCases); Update regenerates
// a directory from it atomically per case, Verify checks a store's
// integrity (hashes, dtypes, shapes, inputs reproducible from their seeds,
// nothing stray), and Check runs a backend over a store: the emulator is
// held to the stored bits (its regression guard) and to the performance
// budgets, any other backend to the case's accuracy policy.
//
// Files are numpy-readable: fp16 as '<f2', bf16 as '<u2' bit patterns (the
// dtype is named by case.json, never guessed from the file).
package golden

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/safefile"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// The marker is named explicitly: a directory pattern skips dot files.
//
//go:embed cases cases/.npuverify-store
var embedded embed.FS

// FormatVersion is the case.json schema version this package writes and
// reads.
const FormatVersion = 1

// CaseJSON is the name of every case's description file.
const CaseJSON = "case.json"

// ExpectedDir is the subdirectory of a case that holds its outputs.
const ExpectedDir = "expected"

// readmeName is the one non-directory entry allowed at the top of a store.
const readmeName = "README.md"

// CaseFile is the content of case.json.
type CaseFile struct {
	Format int `json:"format"`
	// Case is the reproducible case, its fields inline in case.json: name,
	// op, params (validated, defaults filled in), dims, dist, seed, labels,
	// policy (always written; it judges any backend, and the emulator is
	// additionally held to the expected bits) and numerics (when the case
	// overrides the device's profile).
	ops.Case
	Inputs  []FileEntry `json:"inputs"`
	Outputs []FileEntry `json:"outputs"`
	// Metrics are the accuracy metrics of the recorded outputs, per output.
	Metrics map[string]Metrics `json:"metrics"`
	// Budgets are the performance figures recorded with the outputs; nil
	// when the recording backend models no cost.
	Budgets *Budgets `json:"budgets,omitempty"`
}

// FileEntry describes one stored tensor.
type FileEntry struct {
	Name   string       `json:"name"`
	File   string       `json:"file,omitempty"` // relative to the case directory, slash-separated; "" in a recipe
	DType  tensor.DType `json:"dtype"`
	Shape  []int        `json:"shape"`
	SHA256 string       `json:"sha256"` // of the whole .npy file
}

// Metrics are the recorded accuracy metrics of one output (a summary of
// verify.Metrics, rounded to 6 significant digits so that diffs stay
// readable).
type Metrics struct {
	N                 int            `json:"n"`
	MaxAbs            verify.Float   `json:"max_abs"`
	MaxRel            verify.Float   `json:"max_rel"`
	MERE              verify.Float   `json:"mere"`
	MARE              verify.Float   `json:"mare"`
	RMSE              verify.Float   `json:"rmse"`
	Cosine            verify.Float   `json:"cosine"`
	Tightness         verify.Float   `json:"tightness"`
	UlpHist           map[string]int `json:"ulp_hist,omitempty"`
	NonFiniteMismatch int            `json:"nonfinite_mismatch"`
	Ambiguous         int            `json:"ambiguous"`
}

// Budgets are the performance budgets of a case, recorded from the
// deterministic cost model at update time. Check requires cycles ≤ Cycles
// and GM bytes (in + out) == GMBytes; VectorUtil and LoadBalance are
// recorded for reports and diffs.
type Budgets struct {
	Cycles      int64        `json:"cycles"`
	VectorUtil  verify.Float `json:"vector_util"`
	LoadBalance verify.Float `json:"load_balance"`
	GMBytes     int64        `json:"gm_bytes"`
}

// round6 rounds x to 6 significant digits.
func round6(x float64) verify.Float {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return verify.Float(x)
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 6, 64), 64)
	return verify.Float(v)
}

// summarize turns verify metrics into the recorded summary.
func summarize(m verify.Metrics) Metrics {
	var hist map[string]int
	for k, v := range m.UlpHist {
		if v != 0 {
			if hist == nil {
				hist = map[string]int{}
			}
			hist[k] = v
		}
	}
	return Metrics{
		N: m.N, MaxAbs: round6(m.MaxAbs), MaxRel: round6(m.MaxRel), MERE: round6(m.MERE),
		MARE: round6(m.MARE), RMSE: round6(m.RMSE), Cosine: round6(m.Cosine),
		Tightness: round6(m.Tightness), UlpHist: hist,
		NonFiniteMismatch: m.NonFiniteMismatch, Ambiguous: m.Ambiguous,
	}
}

// ParseCaseFile decodes case.json strictly: unknown fields, trailing data,
// a missing name, op or dist, an unknown format version, a negative dim
// and malformed entries are errors.
func ParseCaseFile(b []byte) (*CaseFile, error) {
	var cf CaseFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON object")
	}
	if cf.Format != FormatVersion {
		return nil, fmt.Errorf("format %d, want %d", cf.Format, FormatVersion)
	}
	for _, f := range []struct{ name, v string }{{"name", cf.Name}, {"op", cf.Op}, {"dist", cf.Dist}} {
		if f.v == "" {
			return nil, fmt.Errorf("field %q is missing or empty", f.name)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cf.Dims)) {
		if cf.Dims[k] < 0 {
			return nil, fmt.Errorf("dims: %q = %d is negative", k, cf.Dims[k])
		}
	}
	for _, list := range [][]FileEntry{cf.Inputs, cf.Outputs} {
		for _, e := range list {
			if e.Name == "" || !e.DType.Valid() || len(e.SHA256) != 64 {
				return nil, fmt.Errorf("tensor entry %q: name, dtype and a 64-digit sha256 are required", e.Name)
			}
			switch {
			case cf.Recipe && e.File != "":
				return nil, fmt.Errorf("tensor entry %q: a recipe stores no files, but it names %q", e.Name, e.File)
			case cf.Recipe:
			case e.File == "":
				return nil, fmt.Errorf("tensor entry %q: file is required (only a recipe has none)", e.Name)
			case !fs.ValidPath(e.File) || e.File == CaseJSON || !strings.HasSuffix(e.File, ".npy"):
				return nil, fmt.Errorf("tensor entry %q: invalid file %q", e.Name, e.File)
			}
			if _, err := tensor.NumElements(e.Shape); err != nil {
				return nil, fmt.Errorf("tensor entry %q: %w", e.Name, err)
			}
		}
	}
	if err := checkDims(&cf); err != nil {
		return nil, err
	}
	return &cf, nil
}

// MaxRecipeBytes caps the tensors a recipe may declare, inputs and
// expected outputs together, in bytes of data: a recipe is a few hundred
// bytes of case.json that every check and verify regenerates in memory
// (each --jobs slot at once), so without a cap a forged one could ask for
// gigabytes before any hash is compared. The cap is the element cap of a
// single tensor (tensor.MaxElements) taken as bytes for the whole case:
// the recipes exist to reach sizes where index widths and tile loops
// change (10^6 elements, K in the thousands), far below it.
const MaxRecipeBytes = tensor.MaxElements

// checkDims holds case.json's dims to the op and to the tensors it lists,
// before anything is generated from them: every dim is one the op's
// contract takes (ops.Op.DimSpecs; an unknown op is left to the checks
// that name it), and none exceeds both the largest extent and the largest
// element count of the listed tensors (every dim of every op sizes some
// input along one axis, so a dim beyond both would generate tensors other
// than the listed ones, however large). A recipe's listed tensors must
// also fit MaxRecipeBytes. Errors name the dim or the total.
func checkDims(cf *CaseFile) error {
	if op, err := ops.Lookup(cf.Op); err == nil {
		known := map[string]bool{}
		var names []string
		for _, d := range op.DimSpecs() {
			known[d.Name] = true
			names = append(names, d.Name)
		}
		for _, k := range slices.Sorted(maps.Keys(cf.Dims)) {
			if !known[k] {
				return fmt.Errorf("dims: unknown dim %q for op %s (it takes %s)", k, cf.Op, strings.Join(names, ", "))
			}
		}
	}
	var extent, elems, bytes int64
	for _, list := range [][]FileEntry{cf.Inputs, cf.Outputs} {
		for _, e := range list {
			n, _ := tensor.NumElements(e.Shape) // checked by the caller
			elems = max(elems, int64(n))
			for _, d := range e.Shape {
				extent = max(extent, int64(d))
			}
			bytes += int64(n) * int64(e.DType.Size())
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cf.Dims)) {
		if v := int64(cf.Dims[k]); v > max(extent, elems) {
			return fmt.Errorf("dims: %q = %d exceeds every listed tensor (the largest has %d elements, the longest axis %d): the dims do not generate these tensors", k, v, elems, extent)
		}
	}
	if cf.Recipe && bytes > MaxRecipeBytes {
		return fmt.Errorf("recipe: its tensors total %d bytes, more than the %d a recipe may regenerate (MaxRecipeBytes)", bytes, MaxRecipeBytes)
	}
	return nil
}

// Marshal renders case.json deterministically (indented, trailing newline).
func (cf *CaseFile) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Harness returns a copy of the reproducible case case.json describes.
func (cf *CaseFile) Harness() ops.Case {
	c := cf.Case
	c.Params, c.Dims, c.Labels = c.Params.Clone(), cloneDims(c.Dims), slices.Clone(c.Labels)
	return c
}

func cloneDims(d map[string]int) map[string]int {
	out := make(map[string]int, len(d))
	for k, v := range d {
		out[k] = v
	}
	return out
}

// StoredCase is one case directory of a store as it was read: its ID and
// its parsed case.json, or why that could not be read. (The reproducible
// case itself is ops.Case, CaseFile.Harness.)
type StoredCase struct {
	// ID is "<op>/<name>", the case's path in the store.
	ID string
	// File is the parsed case.json; nil when Err is set.
	File *CaseFile
	// Err is why case.json could not be read or parsed.
	Err error
}

// Store is an opened golden case store.
type Store struct {
	fsys   fs.FS
	where  string // how errors name the store root: a directory, "embedded golden/cases", ...
	onDisk bool   // where is a native directory path
	cases  []*StoredCase
	stray  []string   // entries that are neither a case nor allowed (slash paths)
	lock   *storeLock // the shared lock OpenDir holds until Close
	// recorder regenerates recipes' expected outputs (WithRecorder).
	recorder Recorder
}

// Embedded returns the store compiled into the binary (golden/cases of the
// source tree at build time).
func Embedded() *Store {
	sub, err := fs.Sub(embedded, "cases")
	if err != nil {
		panic(err) // "cases" is a valid path: cannot happen
	}
	s, err := open(sub, "embedded golden/cases", false)
	if err != nil {
		panic(fmt.Sprintf("golden: embedded store: %v", err))
	}
	return s
}

// Open opens the store rooted at fsys (the directory holding the <op>
// directories). Case descriptions are parsed eagerly; a case.json that
// does not parse is kept as a Case with Err set (Verify reports it, Check
// fails that case), so one bad file does not hide the others.
func Open(fsys fs.FS) (*Store, error) { return open(fsys, "golden store", false) }

// OpenDir opens the store in directory dir, which must hold the store
// marker (MarkerName; a directory without it is an input error naming
// it). It takes the store's shared lock, waiting (bounded) for an update
// in progress to finish, and holds it until Close, so the store does not
// change while it is read. OpenDir never modifies anything: leftovers of
// an interrupted update are not cases (they are reported as stray by
// Verify) and are cleaned up by the next Update.
func OpenDir(dir string) (*Store, error) {
	l, err := lockStore(context.Background(), dir, false, false)
	if err != nil {
		return nil, err
	}
	s, err := open(os.DirFS(dir), dir, true)
	if err != nil {
		l.release()
		return nil, err
	}
	s.lock = l
	return s, nil
}

func open(fsys fs.FS, where string, onDisk bool) (*Store, error) {
	s := &Store{fsys: fsys, where: where, onDisk: onDisk}
	top, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	for _, op := range top {
		if !op.IsDir() {
			if op.Name() != readmeName && op.Name() != MarkerName {
				s.stray = append(s.stray, op.Name())
			}
			continue
		}
		if strings.HasPrefix(op.Name(), ".") {
			s.stray = append(s.stray, op.Name())
			continue
		}
		entries, err := fs.ReadDir(fsys, op.Name())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.path(op.Name()), err)
		}
		for _, e := range entries {
			id := op.Name() + "/" + e.Name()
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				s.stray = append(s.stray, id)
				continue
			}
			c := &StoredCase{ID: id}
			b, err := safefile.ReadFS(fsys, id+"/"+CaseJSON, 1<<20) // case.json is a few KiB; no link, FIFO or device
			if err == nil {
				c.File, err = ParseCaseFile(b)
			}
			if err == nil && (c.File.Op != op.Name() || c.File.Name != e.Name()) {
				// An op that does not exist is the more telling error,
				// left to the checks that name it.
				if _, lerr := ops.Lookup(c.File.Op); lerr == nil {
					err = fmt.Errorf("names case %s/%s, but lives in %s", c.File.Op, c.File.Name, id)
				}
			}
			if err != nil {
				c.Err = fmt.Errorf("%s: %w", s.path(id+"/"+CaseJSON), err)
				c.File = nil
			}
			s.cases = append(s.cases, c)
		}
	}
	slices.SortFunc(s.cases, func(a, b *StoredCase) int { return strings.Compare(a.ID, b.ID) })
	return s, nil
}

// path names a file of the store in messages: a native path for stores on
// disk, "embedded golden/cases/<p>" otherwise.
func (s *Store) path(p string) string {
	if s.onDisk {
		return filepath.Join(s.where, filepath.FromSlash(p))
	}
	return s.where + "/" + p
}

// Where describes the store root: its directory, or "embedded golden/cases".
func (s *Store) Where() string { return s.where }

// Cases returns the store's cases sorted by ID. The slice is the caller's;
// the cases are shared and must not be modified.
func (s *Store) Cases() []*StoredCase { return slices.Clone(s.cases) }

// Lookup returns the case with the given ID ("<op>/<name>").
func (s *Store) Lookup(id string) (*StoredCase, bool) {
	i, ok := slices.BinarySearchFunc(s.cases, id, func(c *StoredCase, id string) int { return strings.Compare(c.ID, id) })
	if !ok {
		return nil, false
	}
	return s.cases[i], true
}

// Load reads a case's stored inputs and expected outputs. Each file is read
// as the dtype case.json names and must have the listed shape; an input
// must also have the sha256 recorded in case.json (a corrupted input must
// not reach a backend). Expected outputs are compared to what the backend
// computes (bit-exactly for the emulator), so a changed one shows as a
// failed case; Verify checks their hashes. Errors name the file and tensor.
//
// For a recipe (see recipe.go) the inputs are regenerated from the seed
// and held to their recorded sha256 the same way, and the expected outputs
// are regenerated by the emulator on the recording profile and must match
// theirs too (a mismatch is an error naming the output: the recorded bits
// cannot be recovered).
func (s *Store) Load(c *StoredCase) (inputs, expected map[string]*tensor.Tensor, err error) {
	if c.Err != nil {
		return nil, nil, c.Err
	}
	if c.File.Recipe {
		return s.loadRecipe(context.Background(), c, true)
	}
	return s.loadStored(c)
}

// loadStored is Load for a case whose tensors are files.
func (s *Store) loadStored(c *StoredCase) (inputs, expected map[string]*tensor.Tensor, err error) {
	inputs = map[string]*tensor.Tensor{}
	expected = map[string]*tensor.Tensor{}
	for _, set := range []struct {
		list []FileEntry
		into map[string]*tensor.Tensor
		hash bool
	}{{c.File.Inputs, inputs, true}, {c.File.Outputs, expected, false}} {
		for _, e := range set.list {
			t, sum, err := s.readTensor(c, e)
			if err != nil {
				return nil, nil, err
			}
			if set.hash && sum != e.SHA256 {
				return nil, nil, fmt.Errorf("%s: tensor %q: sha256 %s, case.json says %s (file modified or corrupted)", s.path(c.ID+"/"+e.File), e.Name, sum, e.SHA256)
			}
			set.into[e.Name] = t
		}
	}
	return inputs, expected, nil
}

// readTensor reads one listed .npy file and returns it with the sha256 of
// its bytes.
func (s *Store) readTensor(c *StoredCase, e FileEntry) (*tensor.Tensor, string, error) {
	p := c.ID + "/" + e.File
	// No link, FIFO or device, and no more bytes than case.json's dtype and
	// shape allow: a file linked to /dev/zero or a sparse 3 GiB file is
	// refused before it is read (it was read whole, to hash it).
	b, err := safefile.ReadFS(s.fsys, p, maxNpyBytes(e))
	if err != nil {
		return nil, "", fmt.Errorf("%s: tensor %q: %w", s.path(p), e.Name, err)
	}
	sum := sha256.Sum256(b)
	t, err := tensor.ReadNpy(bytes.NewReader(b), e.DType, tensor.ReadOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("%s: tensor %q: %w", s.path(p), e.Name, err)
	}
	if !t.SameShape(e.Shape) {
		return nil, "", fmt.Errorf("%s: tensor %q: shape %v, case.json says %v", s.path(p), e.Name, t.Shape, e.Shape)
	}
	return t, hex.EncodeToString(sum[:]), nil
}

// maxNpyBytes is the largest .npy file that can hold e: its data (at
// most tensor.MaxElements elements, however large the shape claims) after
// a header of at most 64 KiB (numpy's headers are a few hundred bytes;
// the reader's own cap on header length) and the 12-byte prefix.
func maxNpyBytes(e FileEntry) int64 {
	n := int64(1)
	for _, d := range e.Shape {
		if d < 0 || (d > 0 && n > tensor.MaxElements/int64(d)) {
			n = tensor.MaxElements
			break
		}
		n *= int64(d)
	}
	size := max(int64(e.DType.Size()), 1)
	return 12 + 64<<10 + min(n, tensor.MaxElements)*size
}

// validName reports whether s can name an op or case directory.
func validName(s string) bool {
	return s != "" && !strings.HasPrefix(s, ".") && !strings.ContainsAny(s, `/\`) && path.Clean(s) == s && s != ".."
}
