package ops

import (
	"strconv"

	"github.com/npuverify/npuverify/tensor"
)

// InputDefaulter is implemented by an op with a param whose default
// depends on the inputs' shapes (decode_attention's scale, 1/√D), which
// Validate, seeing params alone, cannot fill in.
type InputDefaulter interface {
	// DefaultsFor returns validated params v with those defaults filled in
	// for inputs in; a param already set, or one whose input is missing
	// or misshapen (CheckInputs reports that), is left as it is.
	DefaultsFor(v Params, in map[string]*tensor.Tensor) Params
}

// CompleteParams validates p and fills in every default, the ones that
// depend on the inputs included: the params a case is run, recorded
// (golden case.json) and handed to an exec or worker kernel (its
// case.json) with, so that every param of the op's contract is present
// (docs/exec-backend.md). Filling a default changes no result: the value
// written is the one the op uses when the param is absent, and it
// validates to itself.
func CompleteParams(op Op, p Params, in map[string]*tensor.Tensor) (Params, error) {
	v, err := op.Validate(p)
	if err != nil {
		return nil, err
	}
	if d, ok := op.(InputDefaulter); ok {
		v = d.DefaultsFor(v, in)
	}
	return v, nil
}

// DefaultsFor fills in scale: RN32(1/√D) as the shortest decimal that
// parses back to that value as a float64, which is then exactly an fp32
// value, so a kernel parsing it as either width (strtod, strtof,
// float(…)) gets the σ the contract uses (DecodeScale).
func (decodeAttention) DefaultsFor(v Params, in map[string]*tensor.Tensor) Params {
	if _, ok := v["scale"]; ok {
		return v
	}
	q := in["q"]
	if q == nil || len(q.Shape) != 3 || q.Shape[2] <= 0 {
		return v // no D, no default (and nothing to scale when D = 0)
	}
	out := v.Clone()
	out["scale"] = strconv.FormatFloat(DecodeScale(v, q.Shape[2]), 'g', -1, 64)
	return out
}
