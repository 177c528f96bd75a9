package golden

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// Verify checks the integrity of every case of s and returns one error per
// problem found, each naming the file at fault (nil when the store is
// sound):
//
//   - every case.json parses (strictly), names its own directory and op,
//     and its op, params (validated, defaults filled), distribution and
//     policy are valid;
//   - its inputs and outputs are exactly the op's contract, and every
//     listed file exists with the recorded sha256, dtype and shape;
//   - the inputs reproduce bit-exactly from the seed (harness.Prepare);
//   - nothing is stray: no file in a case that case.json does not list,
//     no file or hidden entry where an op or case directory belongs (a
//     README.md and the store marker at the top are allowed).
//
// Verify does not run any backend; Check does.
func Verify(s *Store) []error {
	var errs []error
	for _, p := range s.stray {
		errs = append(errs, fmt.Errorf("%s: stray entry (not a case directory)", s.path(p)))
	}
	for _, c := range s.cases {
		errs = append(errs, s.verifyCase(c)...)
	}
	return errs
}

func (s *Store) verifyCase(c *StoredCase) []error {
	if c.Err != nil {
		return []error{c.Err}
	}
	var errs []error
	cj := s.path(c.ID + "/" + CaseJSON)
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", cj, fmt.Sprintf(format, args...)))
	}
	cf := c.File
	op, name, _ := strings.Cut(c.ID, "/")
	if cf.Op != op || cf.Name != name {
		bad("names case %s/%s, but lives in %s", cf.Op, cf.Name, c.ID)
	}
	if _, err := verify.ParsePolicy(cf.Policy); err != nil {
		bad("policy: %v", err)
	}

	// Listed files: existence, hash, dtype, shape; then nothing stray.
	listed := map[string]bool{CaseJSON: true}
	stored := map[string]*tensor.Tensor{}
	for _, e := range slices.Concat(cf.Inputs, cf.Outputs) {
		p := s.path(c.ID + "/" + e.File)
		if listed[e.File] {
			errs = append(errs, fmt.Errorf("%s: listed twice in case.json", p))
			continue
		}
		listed[e.File] = true
		t, sum, err := s.readTensor(c, e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if sum != e.SHA256 {
			errs = append(errs, fmt.Errorf("%s: tensor %q: sha256 %s, case.json says %s (file modified or corrupted)", p, e.Name, sum, e.SHA256))
			continue
		}
		stored[e.File] = t
	}
	errs = append(errs, s.strayFiles(c, listed)...)

	// The contract and the seed.
	pc, err := harness.Prepare(cf.Harness())
	if err != nil {
		bad("%v", err)
		return errs
	}
	if !maps.Equal(pc.Params, cf.Params) {
		bad("params %v are not in validated form (want %v)", cf.Params, pc.Params)
	}
	inSpecs, err := pc.Op.Inputs(pc.Params, pc.Inputs)
	if err != nil {
		bad("%v", err)
		return errs
	}
	outSpecs, err := pc.Op.Outputs(pc.Params, pc.Inputs)
	if err != nil {
		bad("%v", err)
		return errs
	}
	errs = append(errs, s.checkEntries(c, "input", cf.Inputs, inSpecs, pc.Inputs, stored)...)
	errs = append(errs, s.checkEntries(c, "output", cf.Outputs, outSpecs, nil, stored)...)
	for _, e := range cf.Outputs {
		if _, ok := cf.Metrics[e.Name]; !ok {
			bad("no metrics for output %q", e.Name)
		}
	}
	for n := range cf.Metrics {
		if !slices.ContainsFunc(cf.Outputs, func(e FileEntry) bool { return e.Name == n }) {
			bad("metrics for unknown output %q", n)
		}
	}
	return errs
}

// checkEntries holds listed tensors to the op's contract and, for inputs,
// to the tensors regenerated from the seed.
func (s *Store) checkEntries(c *StoredCase, kind string, list []FileEntry, specs []ops.TensorSpec, regen map[string]*tensor.Tensor, stored map[string]*tensor.Tensor) []error {
	var errs []error
	cj := s.path(c.ID + "/" + CaseJSON)
	byName := map[string]FileEntry{}
	for _, e := range list {
		byName[e.Name] = e
	}
	for _, sp := range specs {
		e, ok := byName[sp.Name]
		if !ok {
			if !sp.Optional || (regen != nil && regen[sp.Name] != nil) {
				errs = append(errs, fmt.Errorf("%s: %s %q of the %s contract is not listed", cj, kind, sp.Name, c.File.Op))
			}
			continue
		}
		delete(byName, sp.Name)
		p := s.path(c.ID + "/" + e.File)
		if e.DType != sp.DType || !slices.Equal(e.Shape, sp.Shape) {
			errs = append(errs, fmt.Errorf("%s: %s %q is %s%v, the contract says %s%v", p, kind, e.Name, e.DType, e.Shape, sp.DType, sp.Shape))
			continue
		}
		t := stored[e.File]
		if regen == nil || t == nil {
			continue
		}
		want, ok := regen[sp.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: input %q is stored but the seed generates none", p, e.Name))
			continue
		}
		if eq, i := tensor.BitsEqual(t, want); !eq {
			errs = append(errs, fmt.Errorf("%s: input %q does not reproduce from seed %d (first difference at element %d)", p, e.Name, c.File.Seed, i))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		errs = append(errs, fmt.Errorf("%s: %s %q is not in the %s contract", s.path(c.ID+"/"+byName[n].File), kind, n, c.File.Op))
	}
	return errs
}

// strayFiles lists files and directories of a case that case.json does not
// account for.
func (s *Store) strayFiles(c *StoredCase, listed map[string]bool) []error {
	var errs []error
	dirs := map[string]bool{".": true}
	for f := range listed {
		for d := pathDir(f); d != "."; d = pathDir(d) {
			dirs[d] = true
		}
	}
	err := fs.WalkDir(s.fsys, c.ID, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.path(p), err))
			return nil
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, c.ID), "/")
		if rel == "" {
			rel = "."
		}
		if d.IsDir() {
			if !dirs[rel] {
				errs = append(errs, fmt.Errorf("%s: stray directory (not listed in case.json)", s.path(p)))
				return fs.SkipDir
			}
			return nil
		}
		if !listed[rel] {
			errs = append(errs, fmt.Errorf("%s: stray file (not listed in case.json)", s.path(p)))
		}
		return nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", s.path(c.ID), err))
	}
	return errs
}

func pathDir(p string) string {
	i := strings.LastIndex(p, "/")
	if i < 0 {
		return "."
	}
	return p[:i]
}
