// Package opdb is the operator database: one registered record (Info) per
// operator, holding everything the harness knows about it, in the spirit
// of PyTorch's OpInfo and op_db. The contract, the float64 reference and
// the bound (ops), the emulated kernel with its fault catalogue and valid
// variants (npu/kernels), the default golden cases and the fuzz seeds are
// all reachable from the one value an op registers, and every generic
// layer (the golden store, the mutation score, the emulator backend, the
// suites, the fuzz targets, the CLI) loops over the records instead of
// switching on op names. docs/adding-an-operator.md lists the files a new
// op writes; the conformance test in this package fails until each layer
// exists.
package opdb

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Info is one operator's record.
type Info struct {
	// Op is the contract: params, inputs and outputs, seeded input
	// generation, and Expect, the float64 reference (package reference)
	// with the per-element bound (package bound).
	Op ops.Op
	// Kernel is the emulated NPU kernel (package npu/kernels).
	Kernel kernels.KernelFunc
	// Faults is the op's fault catalogue: realistic kernel bugs the
	// default checks must catch (the mutation score). Every fault's name
	// starts with the op's name and a slash.
	Faults []kernels.FaultInfo
	// Variants are valid alternative kernels (another tiling, core count
	// or summation order) the default checks must accept: the false-alarm
	// half of the mutation score. Each variant's Op is this op.
	Variants []kernels.Variant
	// Samples lists the op's sample cases, as OpInfo's sample_inputs_func
	// does: the contract's dtypes or modes crossed with the sizes where a
	// kernel changes behaviour and the input distributions, each named
	// within its group and seeded. The suites run every sample on the
	// backend under test (suites.DescribeOps), grouped by its "mode:" or
	// "dtype:" label; a sample labelled LabelLong belongs to the long
	// sweep. The facts they draw on (dtypes, edge sizes, shapes) are the
	// ones the golden cases use, defined once in this package.
	Samples func() []ops.Case
	// GoldenCases lists the op's default golden cases, the embedded store
	// under golden/cases/<op>/. Names are the case directories.
	GoldenCases func() []ops.Case
	// MutationCases, when set, lists generated cases the mutation score
	// adds to the golden ones: sizes that reach a kernel loop the
	// checked-in set is too small to reach.
	MutationCases func(prof npu.Profile) ([]ops.Case, error)
	// FuzzTarget names the op's native Go fuzz target in package fuzz
	// (fuzz/<op>_test.go), which decodes with FuzzDecode and starts from
	// FuzzSeeds.
	FuzzTarget string
	// FuzzSeeds are the fuzz target's seed corpus.
	FuzzSeeds [][]byte
	// FuzzDecode turns fuzz bytes into one run of the op; ok is false for
	// inputs too short to decode.
	FuzzDecode func(data []byte) (in FuzzInput, ok bool)
}

// FuzzInput is one decoded fuzz input: validated params, inputs that hold
// to the contract, the numerics profile to run under and, optionally, a
// kernel variant (other tilings) to run the emulator with.
type FuzzInput struct {
	Params   ops.Params
	Inputs   map[string]*tensor.Tensor
	Numerics tensor.Numerics
	Variant  *kernels.Variant
}

// Name is the op's registry name.
func (in *Info) Name() string { return in.Op.Name() }

var registry = map[string]*Info{}

// Register adds an op's record. It panics on a nil contract, a contract
// not in the contract registry (ops.Register) or a duplicate name:
// programming errors caught at init. Missing layers are not checked here
// but by the conformance test, which names each one.
func Register(info *Info) *Info {
	if info == nil || info.Op == nil {
		panic("opdb: Register with a nil record or contract")
	}
	name := info.Op.Name()
	if op, err := ops.Lookup(name); err != nil || op != info.Op {
		panic("opdb: the contract of " + name + " is not the one ops.Register holds")
	}
	if _, dup := registry[name]; dup {
		panic("opdb: duplicate registration of " + name)
	}
	registry[name] = info
	return info
}

// Lookup returns the record of the op with that name.
func Lookup(name string) (*Info, error) {
	info, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown op %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	return info, nil
}

// Names lists the registered op names, sorted.
func Names() []string { return slices.Sorted(maps.Keys(registry)) }

// All returns every record, sorted by name.
func All() []*Info {
	out := make([]*Info, 0, len(registry))
	for _, n := range Names() {
		out = append(out, registry[n])
	}
	return out
}

// Faults returns every op's fault catalogue, ops in name order.
func Faults() []kernels.FaultInfo {
	var out []kernels.FaultInfo
	for _, info := range All() {
		out = append(out, info.Faults...)
	}
	return out
}

// Variants returns every op's valid variants, ops in name order.
func Variants() []kernels.Variant {
	var out []kernels.Variant
	for _, info := range All() {
		out = append(out, info.Variants...)
	}
	return out
}

// GoldenCases returns the default golden case set: every registered op's
// golden cases (Info.GoldenCases), sorted by op and name. Names are
// stable: they are the directory names under golden/cases/<op>/.
func GoldenCases() []ops.Case {
	var out []ops.Case
	for _, info := range All() {
		cs := info.GoldenCases()
		slices.SortFunc(cs, func(a, b ops.Case) int { return cmp.Compare(a.Name, b.Name) })
		out = append(out, cs...)
	}
	return out
}
