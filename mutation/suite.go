// Package mutation measures the bug-catching power of the default
// verification suite (the mutation score, DESIGN §1): it runs the suite
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
	"fmt"

	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
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

// GoldenCases returns every case of store s, in ID order, with its inputs
// and recorded outputs loaded.
func GoldenCases(s *golden.Store) ([]*SuiteCase, error) {
	var out []*SuiteCase
	for _, gc := range s.Cases() {
		if gc.Err != nil {
			return nil, fmt.Errorf("golden case %s: %w", gc.ID, gc.Err)
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
// set, generated from their seeds: the ones a realistic fault needs that
// the checked-in set leaves out to stay small. (The golden gemm set
// already reaches every gemm fault: shapes off the fractal, a C term, a
// long K, int8 scales per row and column.)
//
// The golden vector_add set stops at one UB tile per core (golden
// VectorAddSizes: a full pass at the largest tile is megabytes per case),
// so a bug in a core's tile loop (a skipped last tile, a stale
// double-buffer tile) never shows there. The UT suite's multi-core pass
// size +1 does: the largest tile on every core plus one element, so the
// first core takes one 32-byte block more than fits one tile and loops
// over two tiles (one case per dtype, uniform values; 0.4–1.6 M
// elements, the smallest that reach the second tile).
func GeneratedCases(prof npu.Profile) ([]*SuiteCase, error) {
	var out []*SuiteCase
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
		tile, cores, err := maxTile(prof, d)
		if err != nil {
			return nil, err
		}
		n := tile*cores + 1
		name := fmt.Sprintf("%s_%s_n%d", d, ops.DistUniform, n)
		c := ops.Case{
			Name: name, Op: "vector_add", Params: ops.Params{"dtype": d.String()},
			Dims: map[string]int{"n": n}, Dist: ops.DistUniform, Seed: golden.CaseSeed("vector_add", name),
			Labels: []string{"UT", "op:vector_add", "dtype:" + d.String(), "size:multi-tile"},
		}
		pc, err := harness.Prepare(c)
		if err != nil {
			return nil, fmt.Errorf("generated case %s: %w", name, err)
		}
		out = append(out, &SuiteCase{ID: "ut:vector_add/" + name, Prepared: pc, Policy: verify.DefaultPolicy()})
	}
	return out, nil
}

// maxTile returns the largest vector_add tile of dtype d on prof in
// elements and the number of cores a large input is spread over.
func maxTile(prof npu.Profile, d tensor.DType) (tile, cores int, err error) {
	big, err := kernels.NewVectorAddTiling(prof, tensor.MaxElements, d)
	if err != nil {
		return 0, 0, err
	}
	return big.MaxTileElems, big.BlockDim, nil
}

// DefaultSuite is the suite the mutation score is measured on: every case
// of the embedded golden store, then GeneratedCases.
func DefaultSuite(prof npu.Profile) ([]*SuiteCase, error) {
	cs, err := GoldenCases(golden.Embedded())
	if err != nil {
		return nil, err
	}
	gen, err := GeneratedCases(prof)
	if err != nil {
		return nil, err
	}
	return append(cs, gen...), nil
}

// DefaultVariants are the valid kernel variants the suite must accept:
//
//   - another summation order: gemm accumulates K in descending order
//     (panels and slices) in slices of 32, so every output sums its
//     products in another order than the default's (and its bits may
//     differ); vector_add, which has no reduction, runs on another core
//     count with unaligned tiles (every tile copied with DataCopyPad, shares
//     of uneven size);
//   - another tiling and core count: gemm in 16×16 output blocks on 5 AI
//     cores, vector_add on one core looping over many tiles of the
//     largest size.
func DefaultVariants() []kernels.Variant {
	return []kernels.Variant{
		{
			Name:      "summation-order",
			VectorAdd: kernels.VectorAddOptions{BlockDim: 7, TileElems: 49},
			GEMM:      kernels.GEMMOptions{BaseK: 32, ReverseK: true},
		},
		{
			Name:      "tiling-cores",
			VectorAdd: kernels.VectorAddOptions{BlockDim: 1},
			GEMM:      kernels.GEMMOptions{BaseM: 16, BaseN: 16, BlockDim: 5},
		},
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
