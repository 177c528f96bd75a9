// Package ops defines the operator contracts: names, parameters and their
// validation, the inputs and outputs with their dtypes and shapes, seeded
// input generation, and the per-element error bounds every legal
// implementation must meet. Every operator registers itself here so that
// the CLI, the golden store and the suites can find it by name.
package ops

import (
	"fmt"
	"math/rand/v2"
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
}

// DimSpec documents one size used by input generation (e.g. "n" for
// vector_add, "m", "k", "n" for gemm).
type DimSpec struct {
	Name string
	Doc  string
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

var registry = map[string]Op{}

// Register adds op to the registry; it panics on a duplicate name, which
// is a programming error caught at init.
func Register(op Op) {
	if _, dup := registry[op.Name()]; dup {
		panic("ops: duplicate registration of " + op.Name())
	}
	registry[op.Name()] = op
}

// Lookup returns the registered op with that name.
func Lookup(name string) (Op, error) {
	op, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown op %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	return op, nil
}

// Names lists registered op names, sorted.
func Names() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CheckInputs holds in to op's input contract: every required input is
// present, no unknown input is, and each has exactly the contract's dtype
// and shape. A mismatch is an error naming the tensor; nothing is cast.
func CheckInputs(op Op, p Params, in map[string]*tensor.Tensor) error {
	specs, err := op.Inputs(p, in)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, s := range specs {
		known[s.Name] = true
		t, ok := in[s.Name]
		if !ok || t == nil {
			if s.Optional {
				continue
			}
			return fmt.Errorf("%s: input %q is missing", op.Name(), s.Name)
		}
		if t.DType != s.DType {
			return fmt.Errorf("%s: input %q: dtype %s, want %s", op.Name(), s.Name, t.DType, s.DType)
		}
		if !t.SameShape(s.Shape) {
			return fmt.Errorf("%s: input %q: shape %v, want %v", op.Name(), s.Name, t.Shape, s.Shape)
		}
	}
	for name := range in {
		if !known[name] {
			return fmt.Errorf("%s: unknown input %q", op.Name(), name)
		}
	}
	return nil
}
