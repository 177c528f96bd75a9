package harness

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"runtime"
	"slices"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/tensor"
)

// Running the backend on a case: the inputs it is handed (the tensors
// themselves with their hashes for a backend that guards them, copies
// otherwise), its outputs held to the contract, and the inputs it did not
// give back unchanged.

// backendRun is what a backend returned for a case, held to the contract.
type backendRun struct {
	out     map[string]*tensor.Tensor
	meas    *backend.Measurement
	changed []inputChange // in input name order
}

// inputChange is one input a backend did not give back unchanged.
type inputChange struct {
	Input  string
	Reason string
}

// runBackend runs pc on b and holds the outputs to the op's contract. A
// backend error is a *BackendError, except an InputsModifiedError that
// comes with outputs: those are judged, and each input it names fails
// CheckInputsUnchanged, as does any input the harness itself finds
// changed (changedInputs).
func runBackend(ctx context.Context, b backend.Backend, pc *Prepared) (*backendRun, error) {
	c := pc.Case
	if pc.spoiled.Load() {
		return nil, &BackendError{fmt.Errorf("%s: an earlier run's backend changed the case's inputs; prepare it again", Subject(c))}
	}
	backendIn, sums := backendInputs(b, pc.Inputs)
	out, meas, err := b.Run(ctx, c.Op, pc.Params, backendIn)
	var modified *backend.InputsModifiedError
	if err != nil && !(errors.As(err, &modified) && out != nil) {
		return nil, &BackendError{fmt.Errorf("%s: backend %s: %w", Subject(c), b.Name(), err)}
	}
	if err := CheckOutputs(pc.Op, pc.Params, pc.Inputs, out); err != nil {
		return nil, &BackendError{fmt.Errorf("%s: backend %s: %w", Subject(c), b.Name(), err)}
	}
	// The backend's copies (or the hashes, for a backend that guards its
	// inputs) are compared now and dropped, so that a large case does not
	// hold copies through the reference.
	changed := changedInputs(pc, backendIn, sums)
	if modified != nil {
		for _, name := range slices.Sorted(maps.Keys(modified.Inputs)) {
			changed = append(changed, inputChange{name, fmt.Sprintf("input %q was modified by the backend: %s", name, modified.Inputs[name])})
		}
	}
	backendIn = nil
	collectIfLarge(b, pc.Inputs)
	return &backendRun{out: out, meas: meas, changed: changed}, nil
}

// inputSeed seeds the input hashes of backendInputs.
var inputSeed = maphash.MakeSeed()

// backendInputs returns the inputs b is handed: the tensors of in
// themselves (in a map of its own, so that concurrent runs never share
// one a backend could write), with the hash of each, when b guards its
// inputs (backend.InputGuard), else copies of them (and nil hashes).
func backendInputs(b backend.Backend, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, map[string]uint64) {
	if g, ok := b.(backend.InputGuard); ok && g.GuardsInputs() {
		sums := make(map[string]uint64, len(in))
		for name, t := range in {
			sums[name] = t.Hash(inputSeed)
		}
		return maps.Clone(in), sums
	}
	copies := make(map[string]*tensor.Tensor, len(in))
	for name, t := range in {
		copies[name] = t.Clone()
	}
	return copies, nil
}

// changedInputs lists, in name order, each input of pc the backend did not
// give back unchanged: by comparison with its copy (backendIn), or when
// the backend guards its inputs, by its hash (sums). A guarding backend
// that changed one has spoiled pc.
func changedInputs(pc *Prepared, backendIn map[string]*tensor.Tensor, sums map[string]uint64) []inputChange {
	var changed []inputChange
	for _, name := range slices.Sorted(maps.Keys(pc.Inputs)) {
		t := pc.Inputs[name]
		if sums != nil {
			if t.Hash(inputSeed) != sums[name] {
				pc.spoiled.Store(true)
				changed = append(changed, inputChange{name, fmt.Sprintf("input %q was modified by the backend, which claims to guard its inputs (its hash changed)", name)})
			}
			continue
		}
		if ok, i := tensor.BitsEqual(t, backendIn[name]); !ok {
			changed = append(changed, inputChange{name, fmt.Sprintf("input %q was modified by the backend (first difference at element %d)", name, i)})
		}
	}
	return changed
}

// largeCase is how many input elements make a case large enough for
// collectIfLarge.
const largeCase = 1 << 20

// collectIfLarge returns the backend's memory to the heap between its run
// and the reference when the case is large, so that the peak is the larger
// phase rather than their sum: a backend that keeps memory for its next
// run (backend.Trimmer) drops it, and the collector runs twice, since a
// sync.Pool keeps what it held at one collection until the next. What
// this saves is measured by BenchmarkRunPeakRSS (docs/performance.md,
// "Memory"). A collection costs about as much as a small case, which
// small cases, run by the thousand in the suites, are spared.
func collectIfLarge(b backend.Backend, in map[string]*tensor.Tensor) {
	total := 0
	for _, t := range in {
		total += t.Len()
	}
	if total < largeCase {
		return
	}
	if t, ok := b.(backend.Trimmer); ok {
		t.Trim()
	}
	runtime.GC()
	runtime.GC()
}
