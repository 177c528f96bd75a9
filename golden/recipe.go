package golden

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// Recipes
//
// A case marked ops.Case.Recipe (the large sizes: 10^6 elements, K in
// the thousands, more output tiles than cores) is stored as case.json
// alone: "recipe": true, the op, params, dims, dist and seed, and for every
// input and expected output its name, dtype, shape and the sha256 of the
// .npy file it would be, with no "file". Nothing else is in its directory.
// This keeps the checked-in store at a few MiB while the default check
// still reaches the sizes where index widths, tile loops and split
// reductions change.
//
// The inputs are regenerated from the seed (ops.Gen.Rand: PCG from
// math/rand/v2 with a fixed stream constant, an algorithm the standard
// library specifies and pins by its own regression test, never math/rand's
// default source) and each must hash to its recorded sha256 before any
// backend sees it; a mismatch is an input error naming the input and the
// case, as for a stored input whose file was modified. Every backend then
// gets the regenerated tensors (the exec backend writes them as .npy like
// any others).
//
// The expected outputs are needed only by the policies that compare bits
// (exact, the emulator's regression guard, and ascend-dual's trusted
// outputs). Check obtains them from the outputs (recipeGolden): an output
// whose .npy encoding has the recorded sha256 is the recorded output; for
// any other, the emulator on the recording profile regenerates the
// expected output, which must have the recorded sha256. If it has not,
// the emulator itself has regressed: the recorded bits cannot be
// recovered, and the exact verdict fails saying so. Load and Verify
// regenerate every expected output the same way and hold it to its hash.

// policyNeedsBits reports whether p compares an output with the expected
// bits (Input.Golden).
func policyNeedsBits(p verify.Policy) bool {
	n := p.Name()
	return n == "exact" || strings.HasPrefix(n, "ascend-dual")
}

// npySHA256 is the sha256 of t's .npy encoding, the hash case.json records.
func npySHA256(t *tensor.Tensor) (string, error) {
	h := sha256.New()
	if err := tensor.WriteNpy(h, t); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// referenceBackend is the backend that records the store: the emulator on
// the recording profile, under the case's numerics when it overrides them.
func referenceBackend(c ops.Case) backend.Backend {
	e := backend.NewEmulator(npu.Ascend910B())
	if c.Numerics != nil {
		return e.WithNumerics(*c.Numerics)
	}
	return e
}

// regenerateOutputs runs the recording emulator on pc's inputs (copies).
// The context's cancellation is kept but not its values, so a fault plan
// carried by ctx never reaches the reference run.
func regenerateOutputs(ctx context.Context, pc *harness.Prepared) (map[string]*tensor.Tensor, error) {
	rctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	in := make(map[string]*tensor.Tensor, len(pc.Inputs))
	for k, t := range pc.Inputs {
		in[k] = t.Clone()
	}
	out, _, err := referenceBackend(pc.Case).Run(rctx, pc.Case.Op, pc.Params, in)
	if err != nil {
		return nil, fmt.Errorf("regenerating the expected outputs: %w", err)
	}
	return out, nil
}

// cjPath names a case's case.json in messages.
func (s *Store) cjPath(c *StoredCase) string { return s.path(c.ID + "/" + CaseJSON) }

// recipeInputs regenerates a recipe's inputs from its seed and holds each
// to the sha256 case.json records (holdInputs).
func (s *Store) recipeInputs(c *StoredCase) (*harness.Prepared, error) {
	pc, err := harness.Prepare(c.File.Harness())
	if err != nil {
		return nil, fmt.Errorf("%s: recipe: %w", s.cjPath(c), err)
	}
	if err := s.holdInputs(c, pc); err != nil {
		return nil, err
	}
	return pc, nil
}

// holdInputs holds a recipe's regenerated inputs to case.json: the same
// names, dtypes and shapes, and each .npy encoding with the recorded
// sha256. Errors name the case.json, the input, the case and the seed.
func (s *Store) holdInputs(c *StoredCase, pc *harness.Prepared) error {
	cj := s.cjPath(c)
	listed := map[string]bool{}
	for _, e := range c.File.Inputs {
		listed[e.Name] = true
		t, ok := pc.Inputs[e.Name]
		if !ok {
			return fmt.Errorf("%s: recipe input %q: the seed generates no such input (it generates %s)", cj, e.Name, strings.Join(slices.Sorted(maps.Keys(pc.Inputs)), ", "))
		}
		if t.DType != e.DType || !t.SameShape(e.Shape) {
			return fmt.Errorf("%s: recipe input %q: regenerated as %s%v, case.json says %s%v", cj, e.Name, t.DType, t.Shape, e.DType, e.Shape)
		}
		sum, err := npySHA256(t)
		if err != nil {
			return fmt.Errorf("%s: recipe input %q: %w", cj, e.Name, err)
		}
		if sum != e.SHA256 {
			return fmt.Errorf("%s: recipe input %q of case %s: regenerated from seed %d with sha256 %s, case.json says %s (case.json edited, or input generation changed)", cj, e.Name, c.ID, c.File.Seed, sum, e.SHA256)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(pc.Inputs)) {
		if !listed[n] {
			return fmt.Errorf("%s: recipe: the seed generates input %q, which case.json does not list", cj, n)
		}
	}
	return nil
}

// verifyRecipe is Verify's check of a recipe's hashes, given its
// regenerated inputs: the inputs (holdInputs), and the expected outputs
// the emulator regenerates from them. It is slower than hashing files:
// it runs the emulator.
func (s *Store) verifyRecipe(c *StoredCase, pc *harness.Prepared) []error {
	if err := s.holdInputs(c, pc); err != nil {
		return []error{err}
	}
	got, err := regenerateOutputs(context.Background(), pc)
	if err != nil {
		return []error{fmt.Errorf("%s: recipe: %w", s.cjPath(c), err)}
	}
	var errs []error
	for _, e := range c.File.Outputs {
		t, ok := got[e.Name]
		if !ok {
			continue // checkEntries reports an output outside the contract
		}
		if msg := s.outputMismatch(c, e, t); msg != "" {
			errs = append(errs, fmt.Errorf("%s: %s", s.cjPath(c), msg))
		}
	}
	return errs
}

// entryPath names a listed tensor in messages: its file, or for a recipe
// (no file) the case.json that lists it.
func (s *Store) entryPath(c *StoredCase, e FileEntry) string {
	if e.File == "" {
		return s.cjPath(c)
	}
	return s.path(c.ID + "/" + e.File)
}

// loadRecipe is Load for a recipe: regenerated inputs and, with outputs
// set, the expected outputs regenerated by the emulator and held to their
// recorded sha256.
func (s *Store) loadRecipe(ctx context.Context, c *StoredCase, outputs bool) (inputs, expected map[string]*tensor.Tensor, err error) {
	pc, err := s.recipeInputs(c)
	if err != nil {
		return nil, nil, err
	}
	if !outputs {
		return pc.Inputs, nil, nil
	}
	got, err := regenerateOutputs(ctx, pc)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: recipe: %w", s.cjPath(c), err)
	}
	expected = map[string]*tensor.Tensor{}
	for _, e := range c.File.Outputs {
		t, ok := got[e.Name]
		if !ok {
			return nil, nil, fmt.Errorf("%s: recipe output %q: the emulator produces no such output", s.cjPath(c), e.Name)
		}
		if msg := s.outputMismatch(c, e, t); msg != "" {
			return nil, nil, fmt.Errorf("%s: %s", s.cjPath(c), msg)
		}
		expected[e.Name] = t
	}
	return pc.Inputs, expected, nil
}

// outputMismatch says how a regenerated expected output t differs from its
// entry e, or returns "".
func (s *Store) outputMismatch(c *StoredCase, e FileEntry, t *tensor.Tensor) string {
	if t.DType != e.DType || !t.SameShape(e.Shape) {
		return fmt.Sprintf("recipe output %q of case %s: the emulator now computes %s%v, case.json records %s%v", e.Name, c.ID, t.DType, t.Shape, e.DType, e.Shape)
	}
	sum, err := npySHA256(t)
	if err != nil {
		return fmt.Sprintf("recipe output %q of case %s: %v", e.Name, c.ID, err)
	}
	if sum != e.SHA256 {
		return fmt.Sprintf("emulator regression: recipe output %q of case %s: the emulator (%s) now computes sha256 %s, case.json records %s; the recorded bits are not stored, so no element can be named (fix the emulator, or `golden update` if the change is intended)",
			e.Name, c.ID, npu.Ascend910B().Name, sum, e.SHA256)
	}
	return ""
}

// loadForCheck returns a case's inputs and, for a stored case, its
// expected outputs; a recipe's expected outputs are left to recipeGolden
// (nil here), since only the bit-comparing policies need them.
func (s *Store) loadForCheck(c *StoredCase) (inputs, expected map[string]*tensor.Tensor, err error) {
	if c.Err != nil {
		return nil, nil, c.Err
	}
	if c.File.Recipe {
		return s.loadRecipe(context.Background(), c, false)
	}
	return s.loadStored(c)
}

// checkRecorded holds the recorded outputs to the op's output contract:
// the expected tensors of a stored case, or the output entries (name,
// dtype, shape) of a recipe.
func checkRecorded(c *StoredCase, pc *harness.Prepared, expected map[string]*tensor.Tensor) error {
	if !c.File.Recipe {
		return harness.CheckOutputs(pc.Op, pc.Params, pc.Inputs, expected)
	}
	specs, err := pc.Op.Outputs(pc.Params, pc.Inputs)
	if err != nil {
		return err
	}
	byName := map[string]FileEntry{}
	for _, e := range c.File.Outputs {
		byName[e.Name] = e
	}
	for _, sp := range specs {
		e, ok := byName[sp.Name]
		switch {
		case !ok:
			return fmt.Errorf("%s: output %q is not listed", pc.Op.Name(), sp.Name)
		case e.DType != sp.DType || !slices.Equal(e.Shape, sp.Shape):
			return fmt.Errorf("%s: output %q is %s%v, the contract says %s%v", pc.Op.Name(), sp.Name, e.DType, e.Shape, sp.DType, sp.Shape)
		}
		delete(byName, sp.Name)
	}
	if len(byName) > 0 {
		return fmt.Errorf("%s: unknown output %q", pc.Op.Name(), slices.Sorted(maps.Keys(byName))[0])
	}
	return nil
}

// recipeGolden prepares the run of a recipe whose policies compare bits:
// it sets ho.GoldenFor, which takes each output whose .npy has the
// recorded sha256 as its own expected bits and has the emulator
// regenerate the others (once per run), and returns the function to call
// on the result, which puts the emulator-regression message on the
// bit-comparing verdicts of outputs whose regenerated bits do not match
// either. For a stored case, or policies that need no bits, it does
// nothing.
func (s *Store) recipeGolden(ctx context.Context, c *StoredCase, pc *harness.Prepared, ho *harness.Options) func(*harness.Result) {
	if !c.File.Recipe || !slices.ContainsFunc(ho.Policies, policyNeedsBits) {
		return func(*harness.Result) {}
	}
	regressed := map[string]string{}
	ho.Golden = nil
	ho.GoldenFor = func(out map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
		gold := map[string]*tensor.Tensor{}
		var ref map[string]*tensor.Tensor
		for _, e := range c.File.Outputs {
			t := out[e.Name]
			if t == nil {
				continue // the output contract check has run; cannot happen
			}
			if sum, err := npySHA256(t); err == nil && sum == e.SHA256 && t.DType == e.DType && t.SameShape(e.Shape) {
				gold[e.Name] = t
				continue
			}
			if ref == nil {
				var err error
				if ref, err = regenerateOutputs(ctx, pc); err != nil {
					return nil, fmt.Errorf("%s: recipe: %w", s.cjPath(c), err)
				}
			}
			r, ok := ref[e.Name]
			if !ok {
				return nil, fmt.Errorf("%s: recipe output %q: the emulator produces no such output", s.cjPath(c), e.Name)
			}
			if msg := s.outputMismatch(c, e, r); msg != "" {
				regressed[e.Name] = msg
				continue
			}
			gold[e.Name] = r
		}
		return gold, nil
	}
	return func(res *harness.Result) {
		if res == nil || res.Verify == nil {
			return
		}
		for i := range res.Verify.Outputs {
			o := &res.Verify.Outputs[i]
			msg, ok := regressed[o.Name]
			if !ok {
				continue
			}
			for j := range o.Verdicts {
				if v := &o.Verdicts[j]; !v.Pass && (v.Policy == "exact" || strings.HasPrefix(v.Policy, "ascend-dual")) {
					v.Reason, v.Failures = msg, nil
				}
			}
		}
	}
}

// recordsRecipes checks that b can record a recipe: only the emulator on
// the recording profile, without injected faults or a kernel variant, is
// the backend Check and Verify regenerate expected outputs with, so only
// its outputs can be recorded as hashes. (That a recipe then regenerates
// bit-identically is tested: golden/recipe_test.go.)
func recordsRecipes(b backend.Backend) error {
	e, ok := b.(*backend.Emulator)
	if !ok || !reflect.DeepEqual(e.Profile(), npu.Ascend910B()) || !e.Faults().Empty() || e.Variant().Options != nil {
		return fmt.Errorf("a recipe records only hashes, so it is recorded by the emulator that regenerates it (%s, no faults, default kernels); backend %s cannot record one", npu.Ascend910B().Name, b.Name())
	}
	return nil
}
