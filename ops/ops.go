// Package ops defines the operator contracts: names, parameters and their
// validation, the inputs and outputs with their dtypes and shapes, seeded
// input generation, and the per-element error bounds every legal
// implementation must meet. An op's contract is one exported value here
// (VectorAdd, GEMM), registered by name (Register, Lookup), so that the
// core (harness, golden, the backends) judges any op without linking the
// rest of its record (package opdb: the emulated kernel, its faults and
// samples).
package ops

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// Params are an operator's parameters as strings, the form they take on
// the CLI and in case.json. Op.Validate fills defaults and checks values.
type Params map[string]string

// Clone returns a copy of p.
func (p Params) Clone() Params {
	c := make(Params, len(p))
	for k, v := range p {
		c[k] = v
	}
	return c
}

// String renders p as sorted k=v pairs, e.g. "dtype=fp16 mode=x".
func (p Params) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + p[k]
	}
	return strings.Join(parts, " ")
}

// ParamSpec documents one parameter.
type ParamSpec struct {
	Name    string
	Default string   // "" when the parameter has no default
	Values  []string // the allowed values; nil for free-form (numbers)
	Doc     string
	// Examples are legal values of a free-form parameter worth testing
	// (zero, one, negative, extreme, inexact in binary...), for generators
	// that cannot enumerate Values (npuverify explore). Nil when Values is
	// set.
	Examples []string
}

// DimSpec documents one size used by input generation (e.g. "n" for
// vector_add, "m", "k", "n" for gemm), with the constraints Generate holds
// it to, so that a generator (npuverify explore) draws legal sizes from
// the contract instead of knowing each op. Relations the fields cannot say
// (e.g. paged nb ≥ S·MB) remain Generate's errors.
type DimSpec struct {
	Name string
	Doc  string
	// Min is the smallest legal value (0: any non-negative value).
	Min int
	// Multiple, when above 1, is a number the value must be a multiple of
	// (gemm24's and sparse24_prune's k: 4).
	Multiple int
	// MultipleOf names another dim the value must be a multiple of
	// (decode_attention's hq of h); "" for none.
	MultipleOf string
	// Optional says Generate works without the dim: it has a default, or
	// only some params use it (the paged cache's bs and nb).
	Optional bool
}

// TensorSpec is one input or output of the contract.
type TensorSpec struct {
	Name     string
	DType    tensor.DType
	Shape    []int
	Optional bool
}

// Gen says how to generate an input set: sizes, a distribution name and
// the seed. Equal Gen values always generate bit-identical inputs.
type Gen struct {
	Dims map[string]int
	Dist string
	Seed uint64
}

// Rand returns the generator's seeded source. PCG is specified by the
// standard library, so sequences do not change across Go versions.
func (g Gen) Rand() *rand.Rand {
	return rand.New(rand.NewPCG(g.Seed, 0x6e707576657269)) // "npuveri"
}

// Op is one operator contract. Implementations must be safe for
// concurrent use; they hold no state.
type Op interface {
	// Name is the operator's registry name, e.g. "vector_add".
	Name() string
	// Doc is a one-line description.
	Doc() string
	// ParamSpecs lists the parameters.
	ParamSpecs() []ParamSpec
	// DimSpecs lists the sizes input generation takes.
	DimSpecs() []DimSpec
	// Dists lists the input distributions Generate accepts.
	Dists() []string
	// Validate checks p and returns a copy with defaults filled in.
	// Unknown parameters and bad values are errors naming the parameter.
	Validate(p Params) (Params, error)
	// Generate makes a seeded input set for validated params.
	Generate(p Params, g Gen) (map[string]*tensor.Tensor, error)
	// Inputs returns the input contract for validated params and the given
	// inputs (shapes may depend on the inputs' sizes); CheckInputs uses it.
	Inputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error)
	// Outputs returns the output contract for validated params and inputs
	// that passed CheckInputs.
	Outputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error)
	// Expect computes the float64 reference and the per-element set of
	// acceptable results of every output under the numerics profile num.
	Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error)
}

// ContractError is an input set that breaks an op's input contract. It
// names the tensor at fault, so a caller that knows where each input came
// from (a file, a case directory) can say so.
type ContractError struct {
	Op     string
	Params Params
	Tensor string         // the input at fault
	Want   *TensorSpec    // the contract's entry; nil for an input the op does not have
	Got    *tensor.Tensor // the input given; nil when it is missing
	Inputs []string       // the op's input names, in contract order
}

func (e *ContractError) Error() string {
	switch {
	case e.Got == nil:
		return fmt.Sprintf("%s: input %q is missing", e.Op, e.Tensor)
	case e.Want == nil:
		return fmt.Sprintf("%s: unknown input %q", e.Op, e.Tensor)
	case e.Got.DType != e.Want.DType:
		return fmt.Sprintf("%s: input %q: dtype %s, want %s", e.Op, e.Tensor, e.Got.DType, e.Want.DType)
	}
	return fmt.Sprintf("%s: input %q: shape %v, want %v", e.Op, e.Tensor, e.Got.Shape, e.Want.Shape)
}

// CheckInputs holds in to op's input contract: every required input is
// present, no unknown input is, and each has exactly the contract's dtype
// and shape. A mismatch is a *ContractError naming the tensor; nothing is
// cast. Unknown inputs are reported in name order.
func CheckInputs(op Op, p Params, in map[string]*tensor.Tensor) error {
	specs, err := op.Inputs(p, in)
	if err != nil {
		return err
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	fail := func(name string, want *TensorSpec, got *tensor.Tensor) error {
		return &ContractError{Op: op.Name(), Params: p, Tensor: name, Want: want, Got: got, Inputs: names}
	}
	for i, s := range specs {
		t, ok := in[s.Name]
		if !ok || t == nil {
			if s.Optional {
				continue
			}
			return fail(s.Name, &specs[i], nil)
		}
		if t.DType != s.DType || !t.SameShape(s.Shape) {
			return fail(s.Name, &specs[i], t)
		}
	}
	// An unexpected name is reported in sorted order (the first of them),
	// so the error does not depend on map order; the common case, none,
	// allocates nothing (kernels and the harness check every launch).
	var extra []string
	for name := range in {
		if !slices.Contains(names, name) {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return fail(extra[0], nil, in[extra[0]])
	}
	return nil
}
