package bound

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

func TestOutput(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	sat := tensor.Numerics{Overflow: tensor.OverflowSaturate}
	flush := tensor.Numerics{Subnormals: tensor.SubnormalFlush}
	// fp16: u = 2^-11, η = 2^-24, MaxFinite 65504, ulp(MaxFinite) = 32, so the
	// overflow threshold is 65504 + 16 = 65520.
	// Half an fp16 ulp at x in [2^e, 2^(e+1)) is 2^(e-11); 2^-25 in the subnormals.
	h16 := func(e int) float64 { return math.Ldexp(1, e-11) }
	tests := []struct {
		name    string
		r, b    float64
		d       tensor.DType
		num     tensor.Numerics
		ref     float64
		bnd     float64
		alt     Special
		wantNaN bool // bnd must be NaN
	}{
		{"fp16 exact one", 1, 0, tensor.Float16, tensor.Numerics{}, 1, h16(0), 0, false},
		{"fp16 with b", 2, 0.25, tensor.Float16, tensor.Numerics{}, 2, 0.25 + h16(1), 0, false},
		{"fp16 below threshold", 65519, 0, tensor.Float16, tensor.Numerics{}, 65519, h16(15), 0, false},
		{"fp16 at threshold overflows", 65520, 0, tensor.Float16, tensor.Numerics{}, inf, 0, PosInf, true},
		{"fp16 negative overflow", -1e6, 0, tensor.Float16, tensor.Numerics{}, -inf, 0, NegInf, true},
		{"fp16 straddles threshold", 65519, 1, tensor.Float16, tensor.Numerics{}, 65519, 1 + h16(15), PosInf, false},
		{"fp16 interval beyond threshold", 65530, 5, tensor.Float16, tensor.Numerics{}, inf, 0, PosInf, true},
		{"fp16 nan", nan, 0, tensor.Float16, tensor.Numerics{}, nan, 0, NaN, true},
		{"fp16 inf", -inf, 0, tensor.Float16, tensor.Numerics{}, -inf, 0, NegInf, true},
		{"saturate overflow", 70000, 0, tensor.Float16, sat, 65504, 0, 0, false},
		{"saturate inf", -inf, 0, tensor.Float16, sat, -65504, 0, 0, false},
		{"saturate nan", nan, 0, tensor.Float16, sat, 0, 0, 0, false},
		{"saturate straddle needs no alt", 65519, 1, tensor.Float16, sat, 65519, 1 + h16(15), 0, false},
		{"flush floor is MinNormal", 1, 0, tensor.Float16, flush, 1, h16(0), 0, false},
		{"flush near zero", math.Ldexp(1, -20), 0, tensor.Float16, flush, math.Ldexp(1, -20), math.Ldexp(1, -14), 0, false},
		// r ± b reaches below MinNormal but also up to 3, where rounding alone
		// moves a value by half its spacing 2^-9, more than MinNormal (2^-14).
		{"flush with a wide interval", 1, 2, tensor.Float16, flush, 1, 2 + math.Ldexp(1, -10), 0, false},
		{"subnormal half spacing", math.Ldexp(3, -24), 0, tensor.Float16, tensor.Numerics{}, math.Ldexp(3, -24), math.Ldexp(1, -25), 0, false},
		{"bf16", 3, 0, tensor.BFloat16, tensor.Numerics{}, 3, math.Ldexp(1, 1-8) /* 3 in [2,4): spacing 2^-6 */, 0, false},
		{"int8 saturates high", 200, 0, tensor.Int8, tensor.Numerics{}, 127, 0, 0, false},
		{"int8 saturates low", -200, 0, tensor.Int8, tensor.Numerics{}, -128, 0, 0, false},
		{"int8 tie to even", 2.5, 0, tensor.Int8, tensor.Numerics{}, 2, 0, 0, false},
		{"int8 inexact", 2.5, 0.25, tensor.Int8, tensor.Numerics{}, 2.5, 0.75, 0, false},
		{"fp64 passes through", 1, 1e-20, tensor.Float64, tensor.Numerics{}, 1, 1e-20, 0, false},
	}
	for _, tt := range tests {
		ref, bnd, alt := Output(tt.r, tt.b, tt.d, tt.num)
		sameRef := ref == tt.ref || (math.IsNaN(ref) && math.IsNaN(tt.ref))
		sameBnd := bnd == tt.bnd || (tt.wantNaN && math.IsNaN(bnd))
		if !sameRef || !sameBnd || alt != tt.alt {
			t.Errorf("%s: Output(%g, %g, %s, %s) = (%g, %g, %s), want (%g, %g, %s)",
				tt.name, tt.r, tt.b, tt.d, tt.num, ref, bnd, alt, tt.ref, tt.bnd, tt.alt)
		}
	}
}

// TestOutputCoversRounding checks the bound against the rounding it
// describes: for values across the fp16 and bf16 ranges (normal,
// subnormal, near overflow), the profile-rounded value is always accepted.
func TestOutputCoversRounding(t *testing.T) {
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
		f, _ := d.FloatFormat()
		for _, num := range []tensor.Numerics{{}, {Subnormals: tensor.SubnormalFlush}, {Overflow: tensor.OverflowSaturate}} {
			for _, r := range []float64{
				1 + math.Ldexp(1, -f.P), // exact tie
				math.Pi, -math.E * 1000,
				f.MinSubnormal() * 1.5, f.MinNormal() * 0.99, f.MinNormal() * 1.0001,
				f.MaxFinite() * (1 + math.Ldexp(1, -f.P-1)), // just below overflow threshold
			} {
				e := NewExpected(1)
				e.Ref[0], e.Bound[0], e.Alt[0] = Output(r, 0, d, num)
				g := num.Round(r, d)
				if !e.Accepts(0, g) {
					t.Errorf("Output(%g, 0, %s, %s): rounded value %g not accepted, want accepted (ref %g, bound %g, alt %s)",
						r, d, num, g, e.Ref[0], e.Bound[0], e.Alt[0])
				}
			}
		}
	}
}

func TestAcceptsAndAmbiguous(t *testing.T) {
	e := &Expected{
		Ref:   []float64{1, math.Inf(1), math.NaN(), 65519},
		Bound: []float64{0.5, math.NaN(), math.NaN(), 1},
		Alt:   []Special{0, PosInf, NaN, PosInf},
	}
	tests := []struct {
		i    int
		g    float64
		want bool
	}{
		{0, 1.5, true}, {0, 1.5000001, false}, {0, math.Inf(1), false}, {0, math.NaN(), false},
		{1, math.Inf(1), true}, {1, math.Inf(-1), false}, {1, 65504, false},
		{2, math.NaN(), true}, {2, 0, false},
		{3, math.Inf(1), true}, {3, 65519.5, true}, {3, 65521, false},
	}
	for _, tt := range tests {
		if got := e.Accepts(tt.i, tt.g); got != tt.want {
			t.Errorf("Accepts(%d, %g) = %v, want %v", tt.i, tt.g, got, tt.want)
		}
	}
	for i, want := range []bool{false, false, false, true} {
		if got := e.Ambiguous(i); got != want {
			t.Errorf("Ambiguous(%d) = %v, want %v", i, got, want)
		}
	}
}

func TestGamma(t *testing.T) {
	u := math.Ldexp(1, -24)
	if got, want := Gamma(1, u), u/(1-u); got != want {
		t.Errorf("Gamma(1, 2^-24) = %g, want %g", got, want)
	}
	if got := Gamma(1<<11, math.Ldexp(1, -11)); !math.IsInf(got, 1) {
		t.Errorf("Gamma(2^11, 2^-11) = %g, want +Inf (n·u ≥ 1 voids the bound)", got)
	}
}

// TestExpectedWindow: a window describes exactly its elements, exact
// ones included, and shares the arrays both ways.
func TestExpectedWindow(t *testing.T) {
	e := NewExpected(10)
	for i := range 10 {
		e.Ref[i], e.Bound[i] = float64(i), float64(i)/8
	}
	e.Alt[4] = PosInf
	e.SetExact(5, 2.5, tensor.Float16, tensor.Numerics{})
	w := e.Window(3, 4)
	if w.Span() != 4 || w.Check() != nil {
		t.Fatalf("bound Expected(10).Window(3, 4): span %d, check %v, want 4, nil", w.Span(), w.Check())
	}
	for j := range 4 {
		i := 3 + j
		if w.RefAt(j) != e.RefAt(i) || w.BoundAt(j) != e.BoundAt(i) || w.AltAt(j) != e.AltAt(i) || w.IsExact(j) != e.IsExact(i) {
			t.Errorf("bound Expected(10).Window(3, 4): element %d = %v %v %v exact %v, want element %d's %v %v %v exact %v",
				j, w.RefAt(j), w.BoundAt(j), w.AltAt(j), w.IsExact(j), i, e.RefAt(i), e.BoundAt(i), e.AltAt(i), e.IsExact(i))
		}
	}
	w.Ref[0] = -1
	if e.Ref[3] != -1 {
		t.Errorf("bound Expected(10).Window(3, 4) does not share Ref with the Expected")
	}
}
