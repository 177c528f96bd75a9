package ops

import (
	"math"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

func mustOp(t *testing.T, name string) Op {
	t.Helper()
	for _, op := range []Op{VectorAdd, GEMM} {
		if op.Name() == name {
			return op
		}
	}
	t.Fatalf("no op %q in this package", name)
	return nil
}

func TestVectorAddValidate(t *testing.T) {
	op := mustOp(t, "vector_add")
	p, err := op.Validate(Params{})
	if err != nil || p["dtype"] != "fp16" {
		t.Fatalf("vector_add: Validate({}) = %v, %v, want dtype=fp16 default", p, err)
	}
	for _, tt := range []struct {
		p    Params
		want string // substring of the error
	}{
		{Params{"dtype": "fp64"}, `param "dtype": invalid value "fp64"`},
		{Params{"dtyp": "fp16"}, `unknown param "dtyp"`},
	} {
		if _, err := op.Validate(tt.p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("vector_add: Validate(%v) = %v, want error containing %q", tt.p, err, tt.want)
		}
	}
}

func TestVectorAddGenerateIsSeeded(t *testing.T) {
	op := mustOp(t, "vector_add")
	for _, dt := range vectorAddDTypes {
		for _, dist := range op.Dists() {
			p, _ := op.Validate(Params{"dtype": dt})
			g := Gen{Dims: map[string]int{"n": 257}, Dist: dist, Seed: 7}
			a, err := op.Generate(p, g)
			if err != nil {
				t.Fatalf("vector_add %v dist=%s seed=7: Generate: %v", p, dist, err)
			}
			b, _ := op.Generate(p, g)
			g.Seed = 8
			c, _ := op.Generate(p, g)
			for _, name := range []string{"x", "y"} {
				if ok, i := tensor.BitsEqual(a[name], b[name]); !ok {
					t.Errorf("vector_add %v dist=%s seed=7: input %s differs between two generations at %d, want bit-identical", p, dist, name, i)
				}
				if ok, _ := tensor.BitsEqual(a[name], c[name]); ok {
					t.Errorf("vector_add %v dist=%s seed=7 vs 8: input %s identical, want different", p, dist, name)
				}
			}
			if err := CheckInputs(op, p, a); err != nil {
				t.Errorf("vector_add %v dist=%s seed=7: generated inputs break the contract: %v", p, dist, err)
			}
		}
	}
}

func TestVectorAddSpecialDistCoversSpecials(t *testing.T) {
	op := mustOp(t, "vector_add")
	p, _ := op.Validate(Params{"dtype": "fp16"})
	in, err := op.Generate(p, Gen{Dims: map[string]int{"n": 4096}, Dist: DistSpecial, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	x := in["x"]
	for i := 0; i < x.Len(); i++ {
		v := x.Float64(i)
		switch {
		case math.IsNaN(v):
			seen["nan"] = true
		case math.IsInf(v, 0):
			seen["inf"] = true
		case v == 0 && math.Signbit(v):
			seen["-0"] = true
		case v != 0 && math.Abs(v) < math.Ldexp(1, -14):
			seen["subnormal"] = true
		case math.Abs(v) == 65504:
			seen["max"] = true
		}
	}
	for _, k := range []string{"nan", "inf", "-0", "subnormal", "max"} {
		if !seen[k] {
			t.Errorf("vector_add dtype=fp16 dist=special seed=1: no %s among 4096 values, want at least one", k)
		}
	}
}

func TestVectorAddCheckInputs(t *testing.T) {
	op := mustOp(t, "vector_add")
	p, _ := op.Validate(Params{"dtype": "fp16"})
	x := tensor.MustNew(tensor.Float16, 4)
	for _, tt := range []struct {
		name string
		in   map[string]*tensor.Tensor
		want string
	}{
		{"missing y", map[string]*tensor.Tensor{"x": x}, `input "y" is missing`},
		{"dtype", map[string]*tensor.Tensor{"x": x, "y": tensor.MustNew(tensor.Float32, 4)}, `input "y": dtype fp32, want fp16`},
		{"shape", map[string]*tensor.Tensor{"x": x, "y": tensor.MustNew(tensor.Float16, 5)}, `input "y": shape [5], want [4]`},
		{"rank", map[string]*tensor.Tensor{"x": tensor.MustNew(tensor.Float16, 2, 2), "y": x}, `input "x": shape [2 2], want [N]`},
		{"extra", map[string]*tensor.Tensor{"x": x, "y": x, "w": x}, `unknown input "w"`},
	} {
		if err := CheckInputs(op, p, tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("vector_add %v: CheckInputs(%s) = %v, want error containing %q", p, tt.name, err, tt.want)
		}
	}
}

// TestVectorAddExpectAcceptsCorrectRounding: the correctly rounded sum,
// computed here independently through fp32 (innocuous double rounding,
// 24 ≥ 2·11+2), is accepted, and a result one ulp away is not.
func TestVectorAddExpectAcceptsCorrectRounding(t *testing.T) {
	op := mustOp(t, "vector_add")
	for _, dt := range []string{"fp16", "bf16", "fp32"} {
		p, _ := op.Validate(Params{"dtype": dt})
		g := Gen{Dims: map[string]int{"n": 1000}, Dist: DistNormal, Seed: 3}
		in, _ := op.Generate(p, g)
		exp, err := op.Expect(p, in, tensor.Numerics{})
		if err != nil {
			t.Fatal(err)
		}
		d := vectorAddDType(p)
		f, _ := d.FloatFormat()
		e := exp["z"]
		for i := 0; i < 1000; i++ {
			sum := float64(float32(in["x"].Float64(i)) + float32(in["y"].Float64(i)))
			got := tensor.Numerics{}.Round(sum, d)
			if !e.Accepts(i, got) {
				t.Errorf("vector_add %v seed=3: z[%d]: correctly rounded %g rejected, want accepted (ref %g, bound %g)", p, i, got, e.RefAt(i), e.BoundAt(i))
			}
			// One ulp away from the reference (skipping powers of two, where
			// the spacing below is half the spacing above).
			dir := 1.0
			if got < e.RefAt(i) {
				dir = -1
			}
			off := got + float64(dir*f.Ulp(got))
			if fr, _ := math.Frexp(got); got != 0 && fr != 0.5 && fr != -0.5 && e.Accepts(i, off) {
				t.Errorf("vector_add %v seed=3: z[%d]: one ulp off %g accepted, want rejected (ref %g, bound %g)", p, i, off, e.RefAt(i), e.BoundAt(i))
			}
		}
	}
}
