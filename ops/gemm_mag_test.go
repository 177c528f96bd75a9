package ops

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// bigSum returns Σ xs exactly (big.Float with enough bits for float64
// values whose exponents span less than 2000).
func bigSum(xs []float64) *big.Float {
	s := new(big.Float).SetPrec(4096)
	for _, x := range xs {
		s.Add(s, big.NewFloat(x))
	}
	return s
}

// TestGEMMMagnitudeRoundedUp: with K = 2^14 crafted fp32 magnitudes (one
// product 1, then K−1 products 2^-53, each a tie that rounds back to 1),
// the float64 S = Σ|a||b| of reference.MatMul, and the float64 positive
// and negative sums, lie below the true sums (big.Float), so a bound built
// on them is not rigorous; bound.MagUp, which Expect and dotPosNeg apply,
// lies at or above the truth. Seeded random orders of such terms (K up to
// 2^15) confirm it for other placements.
func TestGEMMMagnitudeRoundedUp(t *testing.T) {
	const k = 1 << 14
	// a [1,K], b [K,2]: column 0 has positive products, column 1 negative.
	a, b := make([]float64, k), make([]float64, 2*k)
	a[0], b[0], b[1] = 1, 1, -1
	for kk := 1; kk < k; kk++ {
		a[kk] = math.Ldexp(1, -27) // fp32 values: the product 2^-53 is exact
		b[2*kk], b[2*kk+1] = math.Ldexp(1, -26), -math.Ldexp(1, -26)
	}
	terms := make([]float64, k)
	for kk := range terms {
		terms[kk] = math.Abs(a[kk] * b[2*kk])
	}
	truth := bigSum(terms)
	_, s := reference.MatMul(1, k, 2, a, b)
	for j := 0; j < 2; j++ {
		if new(big.Float).SetFloat64(s[j]).Cmp(truth) >= 0 {
			t.Errorf("gemm K=%d column %d: float64 S = %g, true S = %s: want the old computation below the truth (the crafted case must undershoot)", k, j, s[j], truth.Text('g', 20))
		}
		if up := bound.MagUp(s[j], k); new(big.Float).SetFloat64(up).Cmp(truth) < 0 {
			t.Errorf("gemm K=%d column %d: got MagUp(S) = %s / want ≥ true S = %s", k, j, big.NewFloat(up).Text('g', 20), truth.Text('g', 20))
		}
	}
	pos, _ := dotPosNeg(a, b, 0, 0, k, 2)
	_, neg := dotPosNeg(a, b, 0, 1, k, 2)
	for _, x := range []struct {
		name string
		v    float64
	}{{"positive sum", pos}, {"negative sum", neg}} {
		if new(big.Float).SetFloat64(x.v).Cmp(truth) < 0 {
			t.Errorf("gemm K=%d: dotPosNeg %s: got %s / want ≥ true %s", k, x.name, big.NewFloat(x.v).Text('g', 20), truth.Text('g', 20))
		}
	}

	// The bound Expect gives this element grows with the rounded-up S.
	in := map[string]*tensor.Tensor{"a": tensor.MustNew(tensor.Float32, 1, k), "b": tensor.MustNew(tensor.Float32, k, 2)}
	for i, v := range a {
		in["a"].SetFloat64(i, v, tensor.Numerics{})
	}
	for i, v := range b {
		in["b"].SetFloat64(i, v, tensor.Numerics{})
	}
	p, _ := GEMM.Validate(Params{"mode": "fp32"})
	exp, err := GEMM.Expect(p, in, tensor.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	old := bound.NewDot(k, tensor.Float32, tensor.Numerics{}).Sum(bound.Terms{Ref: exp["out"].Ref[0], Mag: s[0]})
	if got := exp["out"].Bound[0]; !(got > old.Err) {
		t.Errorf("gemm mode=fp32 K=%d: bound %g, want above the accumulation error %g on the unrounded S", k, got, old.Err)
	}

	// Seeded random placements: a few large terms among many tiny ones.
	rng := rand.New(rand.NewPCG(2024, 9))
	for trial := 0; trial < 20; trial++ {
		n := 1<<14 + rng.IntN(1<<14)
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = math.Ldexp(1+float64(float64(rng.IntN(1<<20))/(1<<20)), -53-rng.IntN(3))
			if rng.IntN(64) == 0 {
				xs[i] = math.Ldexp(1, rng.IntN(3))
			}
		}
		var f float64
		for _, x := range xs {
			f += x
		}
		tr := bigSum(xs)
		if up := bound.MagUp(f, n); new(big.Float).SetFloat64(up).Cmp(tr) < 0 {
			t.Errorf("MagUp seed=2024 trial %d n=%d: got %s / want ≥ true %s (float64 sum %g)", trial, n, big.NewFloat(up).Text('g', 20), tr.Text('g', 20), f)
		}
	}
}

// TestGEMMMagnitudeFP32RoundedUp is TestGEMMMagnitudeRoundedUp for S
// summed in fp32 (gemm_mag.go): with K = gemmMagFP32MaxK fp16 operands
// whose products are one 1 and then K−1 ties 2^-25 that round back to 1,
// the fp32 sum lies below the true S, and the rounded-up value at or
// above it; seeded random fp16 operands (a few large products among many
// tiny ones, K up to the limit) confirm it element by element. Expect's
// bound on that element exceeds the accumulation error on the unrounded
// sum.
func TestGEMMMagnitudeFP32RoundedUp(t *testing.T) {
	const k = gemmMagFP32MaxK
	a, b := tensor.MustNew(tensor.Float16, 1, k), tensor.MustNew(tensor.Float16, k, 1)
	a.SetFloat64(0, 1, tensor.Numerics{})
	b.SetFloat64(0, 1, tensor.Numerics{})
	terms := []float64{1}
	for kk := 1; kk < k; kk++ {
		a.SetFloat64(kk, 0x1p-12, tensor.Numerics{})
		b.SetFloat64(kk, 0x1p-13, tensor.Numerics{})
		terms = append(terms, 0x1p-25)
	}
	truth := bigSum(terms)
	s := make([]float64, 1)
	newGEMMMag32(a, b, k, 1).rows(0, 1, s, func(int, int) {})
	if new(big.Float).SetFloat64(s[0]).Cmp(truth) >= 0 {
		t.Errorf("gemm K=%d: fp32 S = %g, true S = %s: want it below the truth (the crafted case must undershoot)", k, s[0], truth.Text('g', 20))
	}
	if up := s[0] * gemmMagUpFactor32(k); new(big.Float).SetFloat64(up).Cmp(truth) < 0 {
		t.Errorf("gemm K=%d: got fp32 S rounded up = %s / want ≥ true S = %s", k, big.NewFloat(up).Text('g', 20), truth.Text('g', 20))
	}
	p, _ := GEMM.Validate(Params{"mode": "fp16_fp32acc"})
	exp, err := GEMM.Expect(p, map[string]*tensor.Tensor{"a": a, "b": b}, tensor.Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	old := bound.NewDot(k, tensor.Float32, tensor.Numerics{}).Sum(bound.Terms{Ref: exp["out"].Ref[0], Mag: s[0]})
	if got := exp["out"].Bound[0]; !(got > old.Err) {
		t.Errorf("gemm mode=fp16_fp32acc K=%d: bound %g, want above the accumulation error %g on the unrounded fp32 S", k, got, old.Err)
	}

	const seed = 2025
	rng := rand.New(rand.NewPCG(seed, 3))
	for trial := range 12 {
		m, n, kk := 1+rng.IntN(7), 1+rng.IntN(20), 1+rng.IntN(k)
		a, b := tensor.MustNew(tensor.Float16, m, kk), tensor.MustNew(tensor.Float16, kk, n)
		for _, x := range []*tensor.Tensor{a, b} {
			for i := range x.Len() {
				v := math.Ldexp(1+float64(float64(rng.IntN(1024))/1024), -12-rng.IntN(3))
				if rng.IntN(64) == 0 {
					v = math.Ldexp(1, rng.IntN(4))
				}
				if rng.IntN(2) == 0 {
					v = -v
				}
				x.SetFloat64(i, v, tensor.Numerics{})
			}
		}
		s := make([]float64, m*n)
		newGEMMMag32(a, b, kk, n).rows(0, m, s, func(int, int) {})
		av, bv := a.Float64s(), b.Float64s()
		for i := range m {
			for j := range n {
				xs := make([]float64, kk)
				for q := range kk {
					xs[q] = math.Abs(av[i*kk+q] * bv[q*n+j])
				}
				tr := bigSum(xs)
				if up := s[i*n+j] * gemmMagUpFactor32(kk); new(big.Float).SetFloat64(up).Cmp(tr) < 0 {
					t.Fatalf("gemm fp32 S seed=%d trial %d %dx%dx%d: element [%d,%d]: got rounded-up S %s / want ≥ true %s (fp32 sum %g)",
						seed, trial, m, kk, n, i, j, big.NewFloat(up).Text('g', 20), tr.Text('g', 20), s[i*n+j])
				}
			}
		}
	}
}

// TestGEMMMagUpFactor checks that the fast path's precomputed factor gives
// bound.MagUp's bits for every kind of s and K it can meet.
func TestGEMMMagUpFactor(t *testing.T) {
	const seed = 5
	r := rand.New(rand.NewPCG(seed, 0))
	for _, k := range []int{0, 1, 2, 3, 16, 257, 1024, 4096, 1 << 20, GEMMMaxMACs} {
		f := gemmMagUpFactor(k)
		for i := range 2000 {
			s := math.Ldexp(r.Float64(), r.IntN(2000)-1000)
			switch i {
			case 0:
				s = 0
			case 1:
				s = math.Inf(1)
			case 2:
				s = math.NaN()
			case 3:
				s = 0x1p-1074
			case 4:
				s = math.MaxFloat64
			}
			if got, want := s*f, bound.MagUp(s, k); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("gemm K=%d seed=%d: s=%v: got s·magUp = %v / want bound.MagUp = %v", k, seed, s, got, want)
			}
			if k > gemmMagFP32MaxK {
				continue
			}
			if got, want := s*gemmMagUpFactor32(k), bound.MagUpIn(s, k, 0x1p-24); math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("gemm K=%d seed=%d: s=%v: got s·magUp32 = %v / want bound.MagUpIn(s, K, 2^-24) = %v", k, seed, s, got, want)
			}
		}
	}
}

// TestAbsFloat32s checks the magnitudes gemm's fp32 S is summed from
// against math.Abs of the tensors' float64 values, for every fp16 bit
// pattern and every int8 value.
func TestAbsFloat32s(t *testing.T) {
	h := tensor.MustNew(tensor.Float16, 1<<16)
	for i := range 1 << 16 {
		h.SetBits(i, uint64(i))
	}
	q := tensor.MustNew(tensor.Int8, 256)
	for i := range 256 {
		q.SetBits(i, uint64(i))
	}
	for _, x := range []*tensor.Tensor{h, q} {
		got := make([]float32, x.Len()-3)
		absFloat32s(x, 3, got)
		for i, g := range got {
			w := math.Abs(x.Float64(3 + i))
			if float64(g) != w && !(math.IsNaN(w) && g != g) {
				t.Fatalf("absFloat32s %s: element %d (bits %#x): got %v / want %v", x.DType, 3+i, x.Bits(3+i), g, w)
			}
		}
	}
}

// TestAbsF16sMatchesTable holds absF16s (F16C where the CPU has it) and
// its portable form to float16's conversion of the sign-cleared pattern,
// bit for bit, on every fp16 pattern at every alignment and for every
// length up to 40 (the 8-wide loop and its tail).
func TestAbsF16sMatchesTable(t *testing.T) {
	src := make([]float16.Float16, 1<<16+40)
	for i := range src {
		src[i] = float16.Frombits(uint16(i))
	}
	got, port := make([]float32, len(src)), make([]float32, len(src))
	check := func(lo, hi int) {
		t.Helper()
		absF16s(got[lo:hi], src[lo:hi])
		absF16sGo(port[lo:hi], src[lo:hi])
		for i := lo; i < hi; i++ {
			w := math.Float32bits(float16.Frombits(src[i].Bits() & 0x7FFF).Float32())
			if g, p := math.Float32bits(got[i]), math.Float32bits(port[i]); g != w || p != w {
				t.Fatalf("absF16s(src[%d:%d]) (F16C %v): fp16 %#04x: got %#08x (portable %#08x) / want %#08x (float16 of the sign-cleared pattern)", lo, hi, magUseF16C, src[i].Bits(), g, p, w)
			}
		}
	}
	check(0, 1<<16)
	for lo := range 9 {
		for n := range 41 {
			// Every tail length over the largest finite values, Inf and
			// NaNs of both signs, and −0 and the negative subnormals.
			for _, at := range []int{0x7BF0, 0xFBF0, 0x8000} {
				check(at+lo, at+lo+n)
			}
		}
	}
}

// TestAbsF16Panel holds absF16Panel (gemm32's panel pieces of |B|) to the
// sign-cleared fp16 patterns widened by float16, on every pattern: a B of
// 4097 rows at a row stride of 20 (not 16, so that each row starts
// elsewhere than the last ended) holds all 2^16 in its first 16 columns,
// converted in pieces of 1 to 16 rows, each into a buffer whose value
// after the piece is left untouched.
func TestAbsF16Panel(t *testing.T) {
	if !magUseF16C {
		t.Skip("absF16Panel runs only with F16C")
	}
	const ld, rowsB = 20, 1<<12 + 1
	src := make([]float16.Float16, rowsB*ld)
	for r := range rowsB {
		for c := range 16 {
			src[r*ld+c] = float16.Frombits(uint16(r*16 + c)) // wraps in the last row
		}
	}
	for _, rows := range []int{1, 3, 16} {
		for r0 := 0; r0+rows <= rowsB; r0 += rows {
			dst := make([]float32, 16*rows+1)
			dst[16*rows] = -1
			absF16Panel(dst, src[r0*ld:], rows, ld)
			for r := range rows {
				for c := range 16 {
					b := src[(r0+r)*ld+c].Bits()
					w := math.Float32bits(float16.Frombits(b & 0x7FFF).Float32())
					if g := math.Float32bits(dst[16*r+c]); g != w {
						t.Fatalf("absF16Panel(rows=%d from row %d, ld=%d): row %d column %d, fp16 %#04x: got %#08x / want %#08x", rows, r0, ld, r, c, b, g, w)
					}
				}
			}
			if dst[16*rows] != -1 {
				t.Fatalf("absF16Panel(rows=%d from row %d, ld=%d): wrote past its %d values", rows, r0, ld, 16*rows)
			}
		}
	}
}
