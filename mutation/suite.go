// Package mutation measures the bug-catching power of the default
// verification suite (the mutation score, docs/cli.md#mutate): it runs the suite
// against the emulator with each fault of the kernels' catalogue switched
// on (kernels.FaultCatalogue) and reports, per fault, the first case and
// check that caught it, or SURVIVED. It also runs the suite against the
// correct emulator and valid kernel variants (another tiling, core count
// or summation order, kernels.Variant), where every failure is a false
// alarm.
//
// Two columns are scored. The bound checks are what any backend, a real
// kernel included, is judged by: the case's accuracy policy (bound by
// default), inputs unchanged, guard bands around the outputs, and the
// backend finishing at all. The exact column adds the bit-exact
// comparison with the golden store's recorded outputs, the emulator's own
// regression guard; on its own it would catch any emulator fault that
// changes a bit, which says nothing about real kernels, so the bound
// column is the score that matters.
package mutation

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// SuiteCase is one case of the mutation suite, prepared once and run
// against every faulty or variant backend (inputs are read-only: the
// harness hands backends copies).
type SuiteCase struct {
	// ID is "<op>/<name>" for golden cases and "ut:<op>/<name>" for
	// generated ones.
	ID string
	// Prepared holds the validated params and the inputs.
	Prepared *harness.Prepared
	// Policy is the case's accuracy policy.
	Policy verify.Policy
	// Golden holds the recorded output bits; nil for generated cases
	// (they have no exact check).
	Golden map[string]*tensor.Tensor
	// Trusted, for a generated case whose policy compares with a trusted
	// second implementation (ascend-dual), holds the correct emulator's
	// outputs on the case's inputs: what the golden store records for a
	// stored case. It is never used for the exact check.
	Trusted map[string]*tensor.Tensor
}

// trusted is what the case's policy compares with: the golden outputs, or
// the correct emulator's for a generated case.
func (c *SuiteCase) trusted() map[string]*tensor.Tensor {
	if c.Golden != nil {
		return c.Golden
	}
	return c.Trusted
}

// Source of a case.
const (
	SourceGolden    = "golden"
	SourceGenerated = "ut"
)

// Source reports where the case comes from.
func (c *SuiteCase) Source() string {
	if c.Golden == nil {
		return SourceGenerated
	}
	return SourceGolden
}

// GoldenCases returns every case of store s but its recipes, in ID order,
// with its inputs and recorded outputs loaded. Recipes (the large cases,
// golden/recipe.go) are left out: every fault runs every case of the suite,
// so their cost would multiply by the size of the catalogue; the large
// sizes a fault needs come from GeneratedCases.
func GoldenCases(s *golden.Store) ([]*SuiteCase, error) {
	var out []*SuiteCase
	for _, gc := range s.Cases() {
		if gc.Err != nil {
			return nil, fmt.Errorf("golden case %s: %w", gc.ID, gc.Err)
		}
		if gc.File.Recipe {
			continue
		}
		pol, err := verify.ParsePolicy(orDefault(gc.File.Policy, "bound"))
		if err != nil {
			return nil, fmt.Errorf("golden case %s: policy: %w", gc.ID, err)
		}
		in, expected, err := s.Load(gc)
		if err != nil {
			return nil, err
		}
		pc, err := harness.PrepareInputs(gc.File.Harness(), in)
		if err != nil {
			return nil, fmt.Errorf("golden case %s: %w", gc.ID, err)
		}
		out = append(out, &SuiteCase{ID: gc.ID, Prepared: pc, Policy: pol, Golden: expected})
	}
	return out, nil
}

// GeneratedCases returns the UT-style cases the suite adds to the golden
// set, generated from their seeds: every op's opdb.Info.MutationCases,
// the sizes a realistic fault needs that the checked-in set leaves out to
// stay small (vector_add's multi-tile sizes, for instance).
func GeneratedCases(prof npu.Profile) ([]*SuiteCase, error) {
	var out []*SuiteCase
	for _, info := range opdb.All() {
		if info.MutationCases == nil {
			continue
		}
		cs, err := info.MutationCases(prof)
		if err != nil {
			return nil, fmt.Errorf("%s: generated cases: %w", info.Name(), err)
		}
		for _, c := range cs {
			pc, err := harness.Prepare(c)
			if err != nil {
				return nil, fmt.Errorf("generated case %s/%s: %w", c.Op, c.Name, err)
			}
			sc := &SuiteCase{ID: "ut:" + c.Op + "/" + c.Name, Prepared: pc, Policy: verify.DefaultPolicy()}
			if c.Policy != "" {
				if sc.Policy, err = verify.ParsePolicy(c.Policy); err != nil {
					return nil, fmt.Errorf("generated case %s: policy: %w", sc.ID, err)
				}
			}
			if sc.Policy.Name() == dualPolicy {
				if sc.Trusted, err = trustedOutputs(prof, pc); err != nil {
					return nil, fmt.Errorf("generated case %s: %w", sc.ID, err)
				}
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

// DefaultSuite is the suite the mutation score is measured on: every case
// of the embedded golden store, then GeneratedCases.
func DefaultSuite(prof npu.Profile) ([]*SuiteCase, error) {
	cs, err := GoldenCases(golden.Embedded().WithRecorder(emulator.Recorder()))
	if err != nil {
		return nil, err
	}
	gen, err := GeneratedCases(prof)
	if err != nil {
		return nil, err
	}
	return append(cs, gen...), nil
}

// dualPolicy is the name of the policy that needs trusted outputs.
const dualPolicy = "ascend-dual"

// trustedOutputs runs the correct emulator on pc: the trusted second
// implementation ascend-dual compares a kernel's error statistics with.
func trustedOutputs(prof npu.Profile, pc *harness.Prepared) (map[string]*tensor.Tensor, error) {
	res, err := harness.RunPrepared(context.Background(), emulator.New(prof), pc, harness.Options{Policies: []verify.Policy{verify.DefaultPolicy()}})
	if err != nil {
		return nil, fmt.Errorf("trusted outputs (correct emulator): %w", err)
	}
	if !res.Pass() {
		return nil, fmt.Errorf("trusted outputs: the correct emulator fails the bound: %s", res.Verify.Failure())
	}
	return res.Outputs, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
