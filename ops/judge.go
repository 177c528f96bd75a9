package ops

import (
	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// OutputJudge is implemented by ops whose acceptable outputs are a joint
// set no per-element bound can hold: a top-k selection, where a token
// inside the tie band may be kept or dropped, and what the other outputs
// must hold (the copied rows, the mask) follows from that choice. Given
// the outputs a backend returned, ExpectGiven resolves the acceptable set
// to one Expected per output: the returned selection's when it is one of
// the acceptable ones, the reference's otherwise (so every policy then
// judges element by element and names the first wrong one).
type OutputJudge interface {
	ExpectGiven(p Params, in, out map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error)
}

// ExpectFor returns op's Expected sets for the outputs out: ExpectGiven
// for an OutputJudge, Expect otherwise.
func ExpectFor(op Op, p Params, in, out map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	if j, ok := op.(OutputJudge); ok && out != nil {
		return j.ExpectGiven(p, in, out, num)
	}
	return op.Expect(p, in, num)
}

// BlockExpecter is implemented by ops whose Expected can be produced a
// block of consecutive output elements at a time, so that a large output
// is judged (verify.Stream) without its whole Expected in memory. The
// blocks of an output, concatenated, are Expect's bit for bit.
type BlockExpecter interface {
	// ExpectBlocks calls yield with the Expected of each block of each
	// output, an output's blocks in index order and together covering it
	// (an empty output as one empty block). yield must not keep e, which
	// the next block may reuse; its error stops ExpectBlocks, which
	// returns it.
	ExpectBlocks(p Params, in map[string]*tensor.Tensor, num tensor.Numerics, yield func(output string, e *bound.Expected) error) error
}
