package ops

import "github.com/npuverify/npuverify/tensor"

// OutputInvariants is implemented by ops whose outputs are updated copies
// of inputs (in-place outputs, such as a KV cache) or whose outputs are
// tied to each other bit for bit. A per-element bound cannot say "these
// bits and no others": |g − r| ≤ 0 accepts −0 for +0 and any NaN for a
// NaN. The harness calls CheckOutputs after every run, as it checks that
// the inputs came back unchanged, and fails one check per violation.
type OutputInvariants interface {
	// CheckOutputs returns the violated invariants of the outputs out of
	// a run on the inputs in (validated params p, numerics num); nil when
	// every invariant holds. out holds to the output contract.
	CheckOutputs(p Params, in, out map[string]*tensor.Tensor, num tensor.Numerics) []Violation
}

// Violation is one broken output invariant.
type Violation struct {
	Output string // the output at fault
	Check  string // the invariant's name, e.g. "unwritten-unchanged"
	Reason string // one line naming the first offending element
}
