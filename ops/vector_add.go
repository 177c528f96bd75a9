package ops

import (
	"fmt"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// VectorAdd is the vector_add contract .
var VectorAdd = Register(vectorAdd{})

// vectorAdd is the contract of vector_add: z = x + y element-wise, computed
// in fp32 and rounded once to dtype (so correctly rounded); int8 saturates.
type vectorAdd struct{}

var vectorAddDTypes = []string{"fp16", "bf16", "fp32", "int8"}

func (vectorAdd) Name() string { return "vector_add" }

func (vectorAdd) Doc() string {
	return "z = x + y element-wise, correctly rounded to dtype (fp32 compute); int8 saturates"
}

func (vectorAdd) ParamSpecs() []ParamSpec {
	return []ParamSpec{{Name: "dtype", Default: "fp16", Values: vectorAddDTypes, Doc: "storage dtype of x, y and z"}}
}

func (vectorAdd) DimSpecs() []DimSpec { return []DimSpec{{Name: "n", Doc: "number of elements"}} }

func (vectorAdd) Dists() []string {
	return []string{DistUniform, DistNormal, DistLarge, DistSpecial, DistCancel}
}

func (op vectorAdd) Validate(p Params) (Params, error) {
	return validate(op, p)
}

// vectorAddDType returns the dtype of validated params.
func vectorAddDType(p Params) tensor.DType {
	d, _ := tensor.ParseDType(p["dtype"])
	return d
}

func (op vectorAdd) Generate(p Params, g Gen) (map[string]*tensor.Tensor, error) {
	if err := checkDist(op, g.Dist); err != nil {
		return nil, err
	}
	n, err := dim(op, g, "n")
	if err != nil {
		return nil, err
	}
	d := vectorAddDType(p)
	rng := g.Rand()
	if g.Dist == DistCancel {
		x, err := Fill(rng, DistUniform, d, n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op.Name(), err)
		}
		return map[string]*tensor.Tensor{"x": x, "y": Negate(rng, x)}, nil
	}
	x, err := Fill(rng, g.Dist, d, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name(), err)
	}
	y, err := Fill(rng, g.Dist, d, n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op.Name(), err)
	}
	return map[string]*tensor.Tensor{"x": x, "y": y}, nil
}

func (op vectorAdd) Inputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	x, ok := in["x"]
	if !ok || x == nil {
		return nil, fmt.Errorf("%s: input %q is missing", op.Name(), "x")
	}
	if len(x.Shape) != 1 {
		return nil, fmt.Errorf("%s: input %q: shape %v, want [N]", op.Name(), "x", x.Shape)
	}
	d := vectorAddDType(p)
	n := x.Shape[0]
	return []TensorSpec{{Name: "x", DType: d, Shape: []int{n}}, {Name: "y", DType: d, Shape: []int{n}}}, nil
}

func (op vectorAdd) Outputs(p Params, in map[string]*tensor.Tensor) ([]TensorSpec, error) {
	x, ok := in["x"]
	if !ok || x == nil || len(x.Shape) != 1 {
		return nil, fmt.Errorf("%s: input %q is missing or not [N]", op.Name(), "x")
	}
	return []TensorSpec{{Name: "z", DType: vectorAddDType(p), Shape: []int{x.Shape[0]}}}, nil
}

// Expect makes every z[i] exact (bound.Expected.SetExact): z is one
// rounding of the exact sum x + y, so the only correct value is the
// profile's rounding of it, ties to even, the sign of a zero sum included
// (+0 unless both addends are −0), NaN where the sum is NaN. The float64
// sum is exact for fp16, bf16 and int8 values; for fp32 it may be
// rounded, but rounding it to fp32 gives the rounding of the exact sum
// (53 ≥ 2·24 + 2: double rounding is innocuous), so its profile rounding
// is the required value. Ref and Bound stay the float64 sum and half an
// ulp around it, so metrics and tightness show the error in ulps.
//
// The Expected is compact (bound.NewExactSumFrom): it holds x and y, not
// five arrays of n entries, and computes the sums a block at a time as it
// is read (or lets its reader add them: verify's lean path widens x, y
// and z in one pass), so the caller must not modify x and y while it uses
// it.
func (op vectorAdd) Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	return map[string]*bound.Expected{"z": bound.NewExactSumFrom(in["x"], in["y"], vectorAddDType(p), num)}, nil
}
