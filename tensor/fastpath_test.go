package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulpLdexp is Format.Ulp as the plain Frexp/Ldexp formula the bit-built
// one replaced.
func ulpLdexp(f Format, x float64) float64 {
	x = math.Abs(x)
	if math.IsNaN(x) {
		return x
	}
	e := f.Emin
	if math.IsInf(x, 0) {
		e = f.Emax
	} else if x != 0 {
		_, exp := math.Frexp(x)
		e = max(e, exp-1)
	}
	return math.Ldexp(1, min(e, f.Emax)-f.P+1)
}

// TestFormatBitsMatchLdexp checks Ulp, MaxFinite, MinNormal and
// MinSubnormal, built from bits, against the Ldexp formulas on every
// format: powers of two and their neighbours across float64's whole
// range (subnormals included), ±0, ±Inf, NaN and seeded random values.
func TestFormatBitsMatchLdexp(t *testing.T) {
	const seed = 3
	r := rand.New(rand.NewPCG(seed, 0))
	xs := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64, math.MaxFloat64}
	for e := -1074; e <= 1023; e++ {
		p := math.Ldexp(1, e)
		xs = append(xs, p, -p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)))
	}
	for range 10000 {
		xs = append(xs, math.Float64frombits(r.Uint64()))
	}
	for _, d := range DTypes() {
		f, ok := d.FloatFormat()
		if !ok {
			continue
		}
		if got, want := f.MaxFinite(), math.Ldexp(2-math.Ldexp(1, 1-f.P), f.Emax); got != want {
			t.Errorf("tensor %s MaxFinite seed=%d: got %g / want %g", d, seed, got, want)
		}
		if got, want := f.MinNormal(), math.Ldexp(1, f.Emin); got != want {
			t.Errorf("tensor %s MinNormal seed=%d: got %g / want %g", d, seed, got, want)
		}
		if got, want := f.MinSubnormal(), math.Ldexp(1, f.Emin-f.P+1); got != want {
			t.Errorf("tensor %s MinSubnormal seed=%d: got %g / want %g", d, seed, got, want)
		}
		for _, x := range xs {
			got, want := f.Ulp(x), ulpLdexp(f, x)
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("tensor %s Ulp(%g) seed=%d: got %g / want %g", d, x, seed, got, want)
			}
		}
	}
}

// TestFloat64sMatchesFloat64 checks the typed, table-driven, parallel
// Float64s against Float64(i) bit for bit: every fp16 and bf16 bit
// pattern (NaN payloads included), seeded fp32 and int values.
func TestFloat64sMatchesFloat64(t *testing.T) {
	const seed = 4
	r := rand.New(rand.NewPCG(seed, 0))
	for _, d := range DTypes() {
		x := MustNew(d, 1<<18+3)
		for i := range x.Len() {
			b := r.Uint64()
			if d == Float16 || d == BFloat16 {
				b = uint64(i) // every pattern, then again
			}
			x.SetBits(i, b)
		}
		got := x.Float64s()
		part := make([]float64, 1000)
		x.Float64sFrom(777, part)
		for i, g := range part {
			if w := got[777+i]; math.Float64bits(g) != math.Float64bits(w) {
				t.Fatalf("tensor %s Float64sFrom(777) seed=%d: element %d: got %#x / want %#x", d, seed, 777+i, math.Float64bits(g), math.Float64bits(w))
			}
		}
		for i, g := range got {
			if w := x.Float64(i); math.Float64bits(g) != math.Float64bits(w) {
				t.Fatalf("tensor %s Float64s seed=%d: element %d (bits %#x): got %#x / want %#x", d, seed, i, x.Bits(i), math.Float64bits(g), math.Float64bits(w))
			}
		}
	}
}

// rneQuantum is Format.RoundNearestEven as the quantum formula (the only
// path below MinNormal, the reference for the bit path above it).
func rneQuantum(f Format, x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	q := f.Ulp(x)
	r := math.RoundToEven(x/q) * q
	if math.Abs(r) > f.MaxFinite() {
		return math.Copysign(math.Inf(1), x)
	}
	return r
}

// TestRoundNearestEvenBitsMatchQuantum checks the bit-rounding path of
// RoundNearestEven against the quantum formula on every format: exact
// ties and their neighbours at every exponent of the format (the carry
// into the exponent, MaxFinite and the overflow threshold included),
// subnormals, and seeded random float64 values.
func TestRoundNearestEvenBitsMatchQuantum(t *testing.T) {
	const seed = 5
	r := rand.New(rand.NewPCG(seed, 0))
	for _, d := range []DType{Float32, Float16, BFloat16} {
		f, _ := d.FloatFormat()
		var xs []float64
		for e := f.Emin - f.P - 2; e <= f.Emax+2; e++ {
			for _, m := range []float64{1, 1.5, 2 - math.Ldexp(1, 1-f.P)} {
				v := math.Ldexp(m, e)
				half := f.Ulp(v) / 2
				for _, y := range []float64{v, v + half, v - half, v + 3*half, math.Nextafter(v+half, 0), math.Nextafter(v+half, math.Inf(1))} {
					xs = append(xs, y, -y)
				}
			}
		}
		thr := f.MaxFinite() + f.Ulp(f.MaxFinite())/2
		xs = append(xs, thr, math.Nextafter(thr, 0), -thr, math.MaxFloat64, math.SmallestNonzeroFloat64)
		for range 200000 {
			xs = append(xs, math.Float64frombits(r.Uint64()), math.Ldexp(r.NormFloat64(), r.IntN(2*(f.Emax+f.P))-f.Emax-f.P))
		}
		for _, x := range xs {
			got, want := f.RoundNearestEven(x), rneQuantum(f, x)
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("tensor %s RoundNearestEven(%x) seed=%d: got %g / want %g", d, math.Float64bits(x), seed, got, want)
			}
		}
	}
}

// TestBitsEqualTyped checks the typed BitsEqual: a copy is equal, and a
// change of one bit anywhere (the sign of a zero, a NaN payload) is found
// at its index, for every dtype.
func TestBitsEqualTyped(t *testing.T) {
	const seed = 6
	r := rand.New(rand.NewPCG(seed, 0))
	for _, d := range DTypes() {
		x := randomBits(d, 1000, r)
		x.SetBits(3, 0) // +0 (or integer 0)
		for _, at := range []int{0, 3, 999} {
			for _, bit := range []uint{0, uint(d.Size()*8 - 1)} {
				y := x.Clone()
				if ok, i := BitsEqual(x, y); !ok {
					t.Fatalf("tensor %s BitsEqual(copy) seed=%d: got different at %d / want equal", d, seed, i)
				}
				y.SetBits(at, y.Bits(at)^1<<bit)
				if ok, i := BitsEqual(x, y); ok || i != at {
					t.Fatalf("tensor %s BitsEqual seed=%d, bit %d of element %d flipped: got %v, %d / want false, %d", d, seed, bit, at, ok, i, at)
				}
			}
		}
	}
}

// TestBitsEqualRange: a range of a copy is equal; a range holding a
// flipped bit (the sign of a zero, a NaN payload's lowest bit) is not,
// and one ending before it or starting after it is; empty ranges are
// equal; other dtypes and ranges past either end are not, for every
// dtype.
func TestBitsEqualRange(t *testing.T) {
	const seed = 7
	r := rand.New(rand.NewPCG(seed, 0))
	for _, d := range DTypes() {
		x := randomBits(d, 100, r)
		x.SetBits(40, 0)
		for _, bit := range []uint{0, uint(d.Size()*8 - 1)} {
			y := x.Clone()
			y.SetBits(40, y.Bits(40)^1<<bit)
			for _, c := range []struct {
				lo, hi int
				want   bool
			}{{0, 100, false}, {40, 41, false}, {39, 41, false}, {0, 40, true}, {41, 100, true}, {40, 40, true}, {0, 0, true}, {100, 100, true}, {0, 101, false}, {-1, 10, false}, {50, 49, false}} {
				if got := BitsEqualRange(x, y, c.lo, c.hi); got != c.want {
					t.Errorf("tensor %s seed=%d bit %d of element 40 flipped: BitsEqualRange(x, y, %d, %d) = %v, want %v", d, seed, bit, c.lo, c.hi, got, c.want)
				}
			}
			if !BitsEqualRange(x, x.Clone(), 0, 100) {
				t.Errorf("tensor %s seed=%d: BitsEqualRange(x, copy, 0, 100) = false, want true", d, seed)
			}
		}
		other := Int32
		if d == Int32 {
			other = Float32
		}
		if z := MustNew(other, 100); BitsEqualRange(x, z, 0, 0) {
			t.Errorf("tensor %s: BitsEqualRange against %s = true, want false (dtypes differ)", d, other)
		}
	}
}

// randomBits returns a tensor of n elements of d with random bit
// patterns from r (NaNs of any payload, both zeros, subnormals).
func randomBits(d DType, n int, r *rand.Rand) *Tensor {
	x := MustNew(d, n)
	for i := range x.Len() {
		x.SetBits(i, r.Uint64())
	}
	return x
}
