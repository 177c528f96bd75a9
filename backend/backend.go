// Package backend defines how an implementation of the operators is put
// under test. The emulator is one backend; an external command (exec) is
// another. Suites, the golden checker and the CLI take a Backend, so the
// same checks run against any implementation.
package backend

import (
	"context"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Backend runs one operator on one input set.
//
// Run receives params already validated by the op and inputs already held
// to its contract. It must not modify the inputs. It returns every output
// of the op's contract by name; the cost is nil when the backend cannot
// model one. An error means the backend failed (not that the result is
// inaccurate: judging results is the verifier's job).
type Backend interface {
	Name() string
	Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error)
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
