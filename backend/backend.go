// Package backend defines how an implementation of the operators is put
// under test: the Backend interface and the Measurement every backend
// reports in the same terms. The emulator (package backend/emulator) is
// one implementation; an external command is another, run once per case
// (Exec, in this package) or kept running and handed case after case
// (Worker). Suites, the golden checker and the CLI take a Backend, so the
// same checks run against any implementation, and this package links no
// implementation's internals: a kernel behind exec is judged by a core
// that knows nothing of the emulated device.
package backend

import (
	"context"
	"slices"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Backend runs one operator on one input set.
//
// Run receives params already validated by the op and inputs already held
// to its contract. It must not modify the inputs. It returns every output
// of the op's contract by name, with what it measured of the run (nil
// when it measured nothing). An error means the backend failed (not that
// the result is inaccurate: judging results is the verifier's job); the
// one error that may come with outputs is an *InputsModifiedError, whose
// outputs are judged as well.
type Backend interface {
	Name() string
	Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *Measurement, error)
}

// Measurement is what a backend observed of one run besides its outputs,
// in terms the harness understands whatever the implementation: wall-clock
// kernel times where the backend timed the kernel, a modelled cost where a
// cost model exists, and memory-safety findings where it can see them.
// Every part is optional.
type Measurement struct {
	// KernelSeconds are wall-clock times of the kernel, one per timed
	// repetition in the order measured (the exec protocol's
	// timing.json); nil when the backend timed nothing.
	KernelSeconds []float64
	// Model is the modelled cost, nil when the backend has no model.
	Model *Model
	// Findings are the memory-safety findings of the run, in output
	// order: each fails its check on its output.
	Findings []Finding
}

// Seconds returns the run's time: the model's when there is one, else
// the median of KernelSeconds (the mean of the middle two for an even
// count); ok is false when there is neither.
func (m *Measurement) Seconds() (s float64, ok bool) {
	switch {
	case m == nil:
		return 0, false
	case m.Model != nil:
		return m.Model.Seconds, true
	case len(m.KernelSeconds) > 0:
		return median(m.KernelSeconds), true
	}
	return 0, false
}

// Model is a modelled cost: figures a cost model derives from the kernel's
// instructions, not from a clock, so the same kernel on the same inputs
// always gives the same figures and budgets on them never flake.
type Model struct {
	Device      string  // the modelled device profile
	Cycles      int64   // the modelled kernel time in cycles
	Seconds     float64 // Cycles at the modelled clock
	GMBytesIn   int64   // bytes read from global memory
	GMBytesOut  int64   // bytes written to global memory
	VectorUtil  float64 // vector-unit busy fraction, in [0, 1]
	LoadBalance float64 // min/max core cycles, 1 when balanced
	// Detail is the model's own complete record (the emulator's
	// *npu.Cost), for the consumers that know it: `npuverify run` writes
	// it as cost.json and the report reads its per-unit figures. It must
	// marshal to JSON.
	Detail any
}

// GMBytes is the model's global-memory traffic, both ways.
func (m *Model) GMBytes() int64 { return m.GMBytesIn + m.GMBytesOut }

// Finding is one memory-safety finding of a run: something the
// implementation did that no output comparison can see, such as a write
// into a guard band around an output.
type Finding struct {
	// Output is the output the finding concerns.
	Output string
	// Check names the failed check, as verdicts name policies
	// (CheckGuardBand).
	Check string
	// Message says what happened, with the byte or element range.
	Message string
}

// CheckGuardBand is the check a write outside an output (into the guard
// band around it) fails.
const CheckGuardBand = "guard-band"

// CheckSanitizer is the check a synchronisation or initialisation bug
// fails that the emulator's sanitizer found in a kernel (a race between
// pipes, a read of local memory never written, overlapping GM writes of
// two cores, a deadlock); its findings concern the kernel, not one
// output, and carry Output "kernel".
const CheckSanitizer = "sanitizer"

// median of a non-empty list (mean of the middle two for an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Trimmer is implemented by a Backend that keeps memory between runs for
// the next one (the emulator's device memories). The harness calls Trim
// after a large case's run, before it computes the reference, so that the
// reference's memory is not added to what the backend keeps.
type Trimmer interface {
	Backend
	Trim()
}

// InputGuard is implemented by a Backend whose Run never changes the
// caller's input tensors, whatever its kernel does, and reports a kernel's
// writes into its inputs as an *InputsModifiedError returned with the
// outputs: the emulator makes the inputs copy-on-write in its GM
// (npu.CopyOnWrite), the exec backend hands the kernel files. The harness
// gives such a backend the inputs themselves, where it gives any other a
// copy of them, which for large inputs costs more than the kernel.
type InputGuard interface {
	Backend
	GuardsInputs() bool
}
