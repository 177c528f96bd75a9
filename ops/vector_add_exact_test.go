package ops

import (
	"math"
	"math/big"
	"testing"

	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// The numerics profiles vector_add's exactness is tested under.
var exactProfiles = []tensor.Numerics{
	{},
	{Overflow: tensor.OverflowSaturate},
	{Subnormals: tensor.SubnormalFlush},
	{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush},
}

// roundedSum is a vector_add kernel that rounds the exact sum x + y into d
// with mode (big.ToNearestEven is the contract; ToNearestAway and ToZero
// are the faults) and then applies num's overflow and subnormal rules.
// The sum is computed exactly with big.Float, independently of the
// reference.
func roundedSum(x, y float64, d tensor.DType, num tensor.Numerics, mode big.RoundingMode) float64 {
	s := x + y
	if math.IsNaN(s) || math.IsInf(s, 0) || s == 0 {
		return num.Round(s, d) // IEEE's special and zero sums, exact
	}
	f, _ := d.FloatFormat()
	exact := new(big.Float).SetPrec(2000).Add(big.NewFloat(x), big.NewFloat(y))
	if v, _ := exact.Float64(); math.Abs(v) < f.MinNormal() {
		// Sums of values of d below MinNormal are multiples of the smallest
		// subnormal: exact in d (and in float64).
		return num.Round(v, d)
	}
	v, _ := new(big.Float).SetPrec(uint(f.P)).SetMode(mode).Set(exact).Float64()
	if math.Abs(v) > f.MaxFinite() {
		v = math.Copysign(math.Inf(1), v)
	}
	return num.Round(v, d) // v is a value of d: only overflow and flush rules apply
}

// TestVectorAddExactRejectsWrongTies runs three vector_add kernels on
// seeded uniform inputs, where exact sums at ties are common, under every
// overflow and subnormal mode: round to nearest even (the contract) passes
// the bound policy; round half away from zero and truncation fail it. The
// half-away kernel stays within the half-ulp bound, so it is caught only
// by the exact elements (shown by clearing them).
func TestVectorAddExactRejectsWrongTies(t *testing.T) {
	const n, seed = 4096, 11
	pol := verify.DefaultPolicy()
	for _, dt := range []string{"fp16", "bf16", "fp32"} {
		p, _ := VectorAdd.Validate(Params{"dtype": dt})
		d := vectorAddDType(p)
		in, err := VectorAdd.Generate(p, Gen{Dims: map[string]int{"n": n}, Dist: DistUniform, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for _, num := range exactProfiles {
			exp, err := VectorAdd.Expect(p, in, num)
			if err != nil {
				t.Fatal(err)
			}
			want := exp["z"]
			kernel := func(mode big.RoundingMode) *tensor.Tensor {
				z := tensor.MustNew(d, n)
				for i := 0; i < n; i++ {
					z.SetFloat64(i, roundedSum(in["x"].Float64(i), in["y"].Float64(i), d, num, mode), num)
				}
				return z
			}
			rne, away, trunc := kernel(big.ToNearestEven), kernel(big.ToNearestAway), kernel(big.ToZero)
			if ok, _ := tensor.BitsEqual(rne, away); ok {
				t.Fatalf("vector_add %v n=%d seed=%d num=%s: no tie among the inputs; the test needs one", p, n, seed, num)
			}
			if v := pol.Judge(verify.Input{Got: rne, Want: want}); !v.Pass {
				t.Errorf("vector_add %v n=%d seed=%d num=%s: round-to-nearest-even kernel: got %s, want pass", p, n, seed, num, v.Details(nil))
			}
			for _, k := range []struct {
				name string
				z    *tensor.Tensor
			}{{"round-half-away", away}, {"truncating", trunc}} {
				v := pol.Judge(verify.Input{Got: k.z, Want: want})
				if v.Pass || v.Metrics.NotRounded == 0 || len(v.Failures) == 0 {
					t.Errorf("vector_add %v n=%d seed=%d num=%s: %s kernel: got pass=%v, %d not rounded (%s), want rejected with not-rounded elements",
						p, n, seed, num, k.name, v.Pass, v.Metrics.NotRounded, v.Reason)
				}
			}
			// Without the exact elements the half-ulp bound accepts the
			// half-away kernel: exactness is what catches it.
			loose := *materialized(want)
			loose.Exact, loose.Rounded = nil, nil
			if v := pol.Judge(verify.Input{Got: away, Want: &loose}); !v.Pass {
				t.Errorf("vector_add %v n=%d seed=%d num=%s: round-half-away kernel against the half-ulp bound alone: got %s, want pass (ties only)", p, n, seed, num, v.Reason)
			}
		}
	}
}

// TestVectorAddExactZerosAndSpecials pins the bits of zero sums, flushed
// subnormal sums, overflow and NaN under every profile, and rejects the
// zero of the other sign.
func TestVectorAddExactZerosAndSpecials(t *testing.T) {
	negZero := math.Copysign(0, -1)
	inf := math.Inf(1)
	mn := math.Ldexp(1, -14) // fp16 MinNormal
	tiny := math.Ldexp(1, -24)
	x := []float64{0, negZero, negZero, 1, -1, mn, -mn, 65504, inf}
	y := []float64{negZero, negZero, 0, -1, 1, -tiny, tiny, 65504, -inf}
	// Bits per profile index of exactProfiles: {inf, sat, flush, sat+flush}.
	want := [][4]uint64{
		{0x0000, 0x0000, 0x0000, 0x0000}, // +0 + −0 = +0
		{0x8000, 0x8000, 0x8000, 0x8000}, // −0 + −0 = −0
		{0x0000, 0x0000, 0x0000, 0x0000}, // −0 + +0 = +0
		{0x0000, 0x0000, 0x0000, 0x0000}, // 1 − 1 = +0
		{0x0000, 0x0000, 0x0000, 0x0000}, // −1 + 1 = +0
		{0x03ff, 0x03ff, 0x0000, 0x0000}, // subnormal, flushed to +0
		{0x83ff, 0x83ff, 0x8000, 0x8000}, // negative subnormal, flushed to −0
		{0x7c00, 0x7bff, 0x7c00, 0x7bff}, // overflow: +Inf or MaxFinite
		{0x7e00, 0x0000, 0x7e00, 0x0000}, // Inf − Inf = NaN, saturated to +0
	}
	p, _ := VectorAdd.Validate(Params{"dtype": "fp16"})
	in := map[string]*tensor.Tensor{"x": tensor.MustNew(tensor.Float16, len(x)), "y": tensor.MustNew(tensor.Float16, len(y))}
	for i := range x {
		in["x"].SetFloat64(i, x[i], tensor.Numerics{})
		in["y"].SetFloat64(i, y[i], tensor.Numerics{})
	}
	for k, num := range exactProfiles {
		exp, err := VectorAdd.Expect(p, in, num)
		if err != nil {
			t.Fatal(err)
		}
		e := exp["z"]
		for i := range x {
			w := want[i][k]
			got := tensor.MustNew(tensor.Float16, 1)
			got.SetBits(0, w)
			if !e.IsExact(i) || !e.Accepts(i, got.Float64(0)) {
				t.Errorf("vector_add %v num=%s: z[%d] = %g + %g: got Rounded %g (exact %v), want only 0x%04x accepted", p, num, i, x[i], y[i], e.RoundedAt(i), e.IsExact(i), w)
			}
			if w&0x7fff == 0 { // a zero: the other sign is rejected
				got.SetBits(0, w^0x8000)
				if e.Accepts(i, got.Float64(0)) {
					t.Errorf("vector_add %v num=%s: z[%d] = %g + %g: zero 0x%04x accepted, want only 0x%04x", p, num, i, x[i], y[i], w^0x8000, w)
				}
			}
		}
	}
}

// TestVectorAddExactInt8: int8 sums are exact and saturated; every element
// is exact.
func TestVectorAddExactInt8(t *testing.T) {
	p, _ := VectorAdd.Validate(Params{"dtype": "int8"})
	in, err := VectorAdd.Generate(p, Gen{Dims: map[string]int{"n": 300}, Dist: DistUniform, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := VectorAdd.Expect(p, in, tensor.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	e := exp["z"]
	for i := 0; i < 300; i++ {
		s := math.Max(-128, math.Min(127, in["x"].Float64(i)+in["y"].Float64(i)))
		if !e.IsExact(i) || !e.Accepts(i, s) || e.Accepts(i, s+1) || e.Accepts(i, s-1) {
			t.Errorf("vector_add %v seed=5: z[%d]: exact %v, got Rounded %g, want only %g accepted", p, i, e.IsExact(i), e.RoundedAt(i), s)
		}
	}
}
