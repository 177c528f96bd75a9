package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// termsVal draws from r a value of every magnitude, with ±0, subnormals,
// ±Inf, NaN, values near the largest and arbitrary bit patterns.
func termsVal(r *rand.Rand) float64 {
	switch r.IntN(12) {
	case 0:
		return math.Copysign(0, -1)
	case 1:
		return 0
	case 2:
		return math.Inf(1 - 2*r.IntN(2))
	case 3:
		return math.NaN()
	case 4:
		return math.Float64frombits(r.Uint64N(1 << 52)) // subnormal
	case 5:
		return math.Copysign(math.MaxFloat64/(1+float64(r.Float64())), r.NormFloat64())
	case 6:
		return math.Float64frombits(r.Uint64())
	}
	return r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20)
}

// TestChunkMaxMatchesPortable holds chunkMax (chunkMaxAVX2 where the CPU
// has it) to chunkMaxGo bit for bit at lengths around the vector width,
// on the values of TestTermsMatchPortable: huge values whose difference
// overflows, non-finite ones that must be left out, zeros and
// subnormals.
func TestChunkMaxMatchesPortable(t *testing.T) {
	const seed = 43
	r := rand.New(rand.NewPCG(seed, 0))
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 64, 1001} {
		for range 20 {
			g, rr := make([]float64, n), make([]float64, n)
			for i := range n {
				g[i], rr[i] = termsVal(r), termsVal(r)
			}
			ge, gv := chunkMax(g, rr)
			we, wv := chunkMaxGo(g, rr)
			if math.Float64bits(ge) != math.Float64bits(we) || math.Float64bits(gv) != math.Float64bits(wv) {
				t.Fatalf("verify chunkMax n=%d seed=%d (AVX2 %v): got %g, %g / want %g, %g", n, seed, useAVX2, ge, gv, we, wv)
			}
		}
	}
}

// TestPow2Recip holds pow2Recip to its definition at the edges of the
// powers of two with normal reciprocals and around them, and to its
// promise: where it returns a reciprocal, x·(1/s) is x/s bit for bit, on
// values whose quotients are ordinary, subnormal, underflow to zero or
// overflow.
func TestPow2Recip(t *testing.T) {
	xs := []float64{1, -3, 0x1.fffffffffffffp0, math.MaxFloat64, 0x1p-1074, 0x1.8p-1050, -7.5e300, 1e-300, 0}
	for _, c := range []struct {
		s  float64
		ok bool
	}{
		{1, true}, {0x1p-1022, true}, {0x1p1022, true}, {0x1p-60, true}, {0.5, true},
		{0x1p1023, false}, {0x1p-1023, false}, {0x1p-1074, false}, {0, false}, {math.Inf(1), false},
		{math.NaN(), false}, {-2, false}, {3, false}, {math.Nextafter(1, 2), false}, {math.MaxFloat64, false},
	} {
		inv, ok := pow2Recip(c.s)
		if ok != c.ok {
			t.Errorf("verify: pow2Recip(%g) = %g, %v, want ok %v", c.s, inv, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if math.Float64bits(inv) != math.Float64bits(1/c.s) {
			t.Errorf("verify: pow2Recip(%g) = %g, want 1/s = %g", c.s, inv, 1/c.s)
		}
		for _, x := range xs {
			if got, want := x*inv, x/c.s; math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("verify: pow2Recip(%g): x·inv = %g, want x/s = %g (x = %g)", c.s, got, want, x)
			}
		}
	}
}

// TestTermSumsMatchPortable holds termSums (termSumsAVX2 where the CPU
// has it) to termSumsGo bit for bit: every lane of every sum and the
// largest relative error, at lengths around the vector width, starting
// from lanes that already hold sums (a chunk's tail after its bulk), on
// seeded values of every magnitude with ±0, subnormals, ±Inf, NaN, huge
// values whose difference overflows, and zero, subnormal, infinite and
// ordinary scales.
func TestTermSumsMatchPortable(t *testing.T) {
	const seed = 41
	r := rand.New(rand.NewPCG(seed, 0))
	val := func() float64 { return termsVal(r) }
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	// Powers of two from 2^-1022 to 2^1022 take termSumsAVX2 (x·(1/s) for
	// x/s, quotients underflowing and overflowing among the values); the
	// others take termSumsGo: 2^1023, whose reciprocal is subnormal,
	// 2^-1023 and 2^-1070, subnormal themselves (the second's reciprocal
	// overflows), and the scales that are not powers of two.
	scales := []float64{1, 0, 3.7, 0x1p-1070, math.MaxFloat64, math.Inf(1), 1e-300,
		0x1p-1022, 0x1p-1023, 0x1p1023, 0x1p-60, 0x1p50}
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 64, 1001} {
		for _, sE := range scales {
			for _, sV := range scales {
				g, rr := make([]float64, n), make([]float64, n)
				for i := range n {
					g[i], rr[i] = val(), val()
				}
				var start laneSums
				for k := range 4 {
					start.mere[k], start.sq[k], start.gr[k] = float64(k+1), 0.5, -float64(k)-0.25 // no lane holds −0 (laneSums)
				}
				// The values as drawn, and with the non-finite ones
				// replaced by finite ones for the form that takes
				// them all finite.
				gf, rf := slices.Clone(g), slices.Clone(rr)
				for i := range n {
					if !isFinite(gf[i]) {
						gf[i] = 1.5
					}
					if !isFinite(rf[i]) {
						rf[i] = -0x1p-30
					}
				}
				for _, c := range []struct {
					finite bool
					g, r   []float64
				}{{false, g, rr}, {true, gf, rf}} {
					got, want := start, start
					gm := termSums(c.g, c.r, sE, sV, c.finite, &got)
					wm := termSumsGo(c.g, c.r, sE, sV, &want)
					if !same(gm, wm) {
						t.Fatalf("verify termSums n=%d scaleE=%g scaleV=%g finite=%v seed=%d (AVX2 %v): got mare %g / want %g", n, sE, sV, c.finite, seed, useAVX2, gm, wm)
					}
					gl := [5][4]float64{got.mere, got.sq, got.gr, got.gg, got.rr}
					wl := [5][4]float64{want.mere, want.sq, want.gr, want.gg, want.rr}
					for k := range gl {
						for l := range 4 {
							if !same(gl[k][l], wl[k][l]) {
								t.Fatalf("verify termSums n=%d scaleE=%g scaleV=%g finite=%v seed=%d (AVX2 %v): sum %d lane %d: got %g (%#x) / want %g (%#x)",
									n, sE, sV, c.finite, seed, useAVX2, k, l, gl[k][l], math.Float64bits(gl[k][l]), wl[k][l], math.Float64bits(wl[k][l]))
							}
						}
					}
				}
			}
		}
	}
}

// TestTermSumsLanes holds termSums to the association it promises, on
// values whose sums round: lane l is the terms of elements j ≡ l (mod 4)
// added one by one in index order from +0, each written out here from
// its definition, and an element with a non-finite value adds nothing.
func TestTermSumsLanes(t *testing.T) {
	const seed = 44
	r := rand.New(rand.NewPCG(seed, 0))
	const n = 1003
	g, rr := make([]float64, n), make([]float64, n)
	for i := range n {
		g[i], rr[i] = r.NormFloat64()*1e3, r.NormFloat64()*1e3
		if i%97 == 5 {
			g[i] = math.Inf(1)
		}
	}
	const scaleE, scaleV = 0x1p11, 0x1p12
	var got laneSums
	gm := termSums(g, rr, scaleE, scaleV, false, &got)
	var want [5][4]float64
	var wm float64
	for j := range n {
		if math.IsInf(g[j], 0) {
			continue
		}
		e := math.Abs(g[j] - rr[j])
		m := e / (math.Abs(rr[j]) + 1e-7)
		wm = math.Max(wm, m)
		es, gs, rs := e/scaleE, g[j]/scaleV, rr[j]/scaleV
		for k, term := range [5]float64{m, float64(es * es), float64(gs * rs), float64(gs * gs), float64(rs * rs)} {
			want[k][j%4] += term
		}
	}
	if gm != wm {
		t.Errorf("verify termSums n=%d seed=%d (AVX2 %v): got mare %g / want %g", n, seed, useAVX2, gm, wm)
	}
	for k, l := range [5][4]float64{got.mere, got.sq, got.gr, got.gg, got.rr} {
		if l != want[k] {
			t.Errorf("verify termSums n=%d seed=%d (AVX2 %v): sum %d: got lanes %v / want %v", n, seed, useAVX2, k, l, want[k])
		}
	}
}

// TestComputeVectorMatchesPortable runs Compute with the AVX2 forms
// (termsAVX2, exactRunAVX2) and with the portable ones forced, on
// compact outputs that are mostly correct (long runs of the inline case)
// with every kind of exception mixed in at a low rate, and on ones with
// many exceptions, and on copies (every element its exact value, error 0
// throughout): every field must agree bit for bit, with each other and
// with the single loop.
func TestComputeVectorMatchesPortable(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2 form on this CPU or build")
	}
	defer func() { useAVX2 = true }()
	for _, seed := range []uint64{51, 52} {
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
			for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
				for _, n := range []int{5, 4099, 50001} {
					got, compact, full := compactCase(d, num, n, seed)
					if seed == 52 { // mostly correct: the got is the rounding except at a few elements
						r := rand.New(rand.NewPCG(seed, 9))
						for i := range n {
							if r.IntN(500) != 0 {
								got.SetFloat64(i, full.Rounded[i], tensor.Numerics{})
							}
						}
					}
					if seed == 51 && n == 50001 { // clean: normal sums only, all correctly rounded
						got, compact, full = cleanCase(d, num, n, seed, false)
					}
					if seed == 52 && n == 50001 { // the largest errors below a half ulp, ties only among small values
						got, compact, full = cleanCase(d, num, n, seed, true)
					}
					if n == 4099 { // copies: every error 0, so the largest relative error stays 0
						got, compact, full = copyCase(d, num, n, seed)
					}
					useAVX2 = true
					vec := fmt.Sprintf("%+v", Compute(got, compact))
					useAVX2 = false
					portable := fmt.Sprintf("%+v", Compute(got, compact))
					serial := fmt.Sprintf("%+v", computeSerial(got, full))
					if vec != portable || vec != serial {
						t.Fatalf("verify Compute %s %v n=%d seed=%d: AVX2 %s / portable %s / single loop %s", d, num, n, seed, vec, portable, serial)
					}
				}
			}
		}
	}
}

// cleanCase is compactCase without exceptions: seeded sums of two
// normal values of d, of magnitudes over a few binades, and their correct
// roundings as got, so that every element is gathered inline and the
// figures (the largest value, error and ratio among them) come from the
// inline paths alone.
//
// With ties, half of the values are ties in [2^-8, 1) and the others lie in
// [16, 32) a random fraction of an ulp off the format (almost surely
// never a tie): the worst elements held are then small ties (e/b = 1),
// and the largest error and the largest value, at e/b < 1, come from the
// inline paths. (The largest ratio always comes from an element held
// among the worst, so the inline paths never decide it.)
func cleanCase(d tensor.DType, num tensor.Numerics, n int, seed uint64, ties bool) (got *tensor.Tensor, compact, full *bound.Expected) {
	r := rand.New(rand.NewPCG(seed, 5))
	f, _ := d.FloatFormat()
	rs := make([]float64, n)
	for i := range rs {
		if ties {
			if r.IntN(2) == 0 {
				k := -1 - r.IntN(8) // ties of different sizes: few are candidates for the worst
				rs[i] = math.Ldexp(1+float64(float64(r.IntN(64))*f.Ulp(1))+float64(f.Ulp(1)/2), k)
			} else {
				rs[i] = 16 + float64((float64(r.IntN(64))+float64(r.Float64()))*f.Ulp(16)) // one largest error, almost surely
			}
			continue
		}
		a := tensor.Numerics{}.Round(r.NormFloat64()*math.Ldexp(1, r.IntN(6)), d)
		b := tensor.Numerics{}.Round(r.NormFloat64(), d)
		rs[i] = a + b
	}
	return exactCase(d, num, rs)
}

// copyCase is an output of copies: seeded values of d (normal values
// over a few binades, a few zeros of either sign), each its own exact
// value and, as got, its own rounding, so every error is 0 and the
// largest relative error stays 0 (the inline paths' relative-error test
// then rests on e = 0 alone).
func copyCase(d tensor.DType, num tensor.Numerics, n int, seed uint64) (got *tensor.Tensor, compact, full *bound.Expected) {
	r := rand.New(rand.NewPCG(seed, 7))
	rs := make([]float64, n)
	for i := range rs {
		rs[i] = tensor.Numerics{}.Round(r.NormFloat64()*math.Ldexp(1, r.IntN(6)), d)
		if r.IntN(100) == 0 {
			rs[i] = math.Copysign(0, float64(r.IntN(2))-0.5)
		}
	}
	return exactCase(d, num, rs)
}

// exactCase makes every element of rs exact in d under num, compact and
// full, with got the correctly rounded outputs.
func exactCase(d tensor.DType, num tensor.Numerics, rs []float64) (got *tensor.Tensor, compact, full *bound.Expected) {
	n := len(rs)
	src := func(off int, dst []float64) { copy(dst, rs[off:off+len(dst)]) }
	compact = bound.NewExactFrom(n, d, num, src)
	full = bound.NewExpected(n)
	got = tensor.MustNew(d, n)
	for i, v := range rs {
		full.SetExact(i, v, d, num)
		got.SetFloat64(i, full.Rounded[i], tensor.Numerics{})
	}
	return got, compact, full
}

// TestSumSquares4MatchesPortable holds sumSquares4 (sumSquares4AVX2
// where the CPU has it) to sumSquares on each chunk apart, bit for bit,
// and maxAbs to the largest |x| taken one value at a time, at lengths
// around the vector widths, on finite values of every magnitude (±0,
// subnormals, values whose squares overflow or underflow) and reciprocals
// of normal and extreme powers of two.
func TestSumSquares4MatchesPortable(t *testing.T) {
	const seed = 46
	r := rand.New(rand.NewPCG(seed, 0))
	val := func() float64 {
		for {
			if v := termsVal(r); isFinite(v) {
				return v
			}
		}
	}
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 64, 1001, sumChunk} {
		for _, inv := range [][4]float64{{1, 1, 1, 1}, {0x1p-20, 0x1p40, 0x1p-1000, 0x1p1000}, {0x1p-1022, 0.5, 2, 0x1p1022}} {
			var rs [4][]float64
			for i := range rs {
				rs[i] = make([]float64, n)
				for j := range rs[i] {
					rs[i][j] = val()
				}
			}
			got := sumSquares4(rs, inv)
			for i := range rs {
				if want := sumSquares(rs[i], inv[i]); math.Float64bits(got[i]) != math.Float64bits(want) {
					t.Fatalf("verify sumSquares4 n=%d inv=%v seed=%d (AVX2 %v): chunk %d: got %g (%#x) / want %g (%#x)", n, inv, seed, useAVX2, i, got[i], math.Float64bits(got[i]), want, math.Float64bits(want))
				}
				want := 0.0
				for _, x := range rs[i] {
					want = math.Max(want, math.Abs(x))
				}
				if got := maxAbs(rs[i]); math.Float64bits(got) != math.Float64bits(want) {
					t.Fatalf("verify maxAbs n=%d seed=%d (AVX2 %v): chunk %d: got %g / want %g", n, seed, useAVX2, i, got, want)
				}
			}
		}
	}
}
