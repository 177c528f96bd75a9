package ops

import (
	"fmt"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// VectorAdd is the vector_add contract .
var VectorAdd Op = vectorAdd{}

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
func (op vectorAdd) Expect(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	d := vectorAddDType(p)
	x, y := in["x"], in["y"]
	n := x.Len()
	e := bound.NewExpected(n)
	if n == 0 {
		return map[string]*bound.Expected{"z": e}, nil
	}
	// Element by element, over all cores, a block at a time (no float64
	// copies of whole inputs); SetExact on element 0 first allocates the
	// exact marks, so the ranges then only write their own elements.
	setExactRange := func(lo, hi int) {
		bl := min(2048, hi-lo) // sized to the range: small inputs allocate little
		buf := make([]float64, 3*bl)
		xb, yb, zb := buf[:bl], buf[bl:2*bl], buf[2*bl:]
		for b0 := lo; b0 < hi; b0 += bl {
			k := min(bl, hi-b0)
			x.Float64sFrom(b0, xb[:k])
			y.Float64sFrom(b0, yb[:k])
			reference.VectorAddInto(zb[:k], xb[:k], yb[:k])
			e.SetExactBlock(b0, zb[:k], d, num)
		}
	}
	setExactRange(0, 1)
	parallel.For(n-1, 1<<14, func(lo, hi int) { setExactRange(1+lo, 1+hi) })
	return map[string]*bound.Expected{"z": e}, nil
}
