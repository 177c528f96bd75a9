package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSetFloat64sMatchesSetFloat64: the bulk store gives every element the
// bits SetFloat64 gives it, for every dtype under every corner of the
// numerics profile (the IEEE profile takes setRounded's direct path,
// every other profile goes through Round), on values that round up, round
// to even, overflow, fall below the subnormals, and are special.
func TestSetFloat64sMatchesSetFloat64(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 0))
	vals := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		1, -1, 0.5, 1.5, 2.5, -2.5, 127.5, 128.5, -128.5, 255.5, 256, 1e300, -1e300, 1e-300,
		65504, 65519.99, 65520, 3.4e38, 3.5e38, 5.9604644775390625e-08, 2.98e-08, 6.1e-05}
	for len(vals) < 3000 {
		// Random significands at random scales: ties and near-ties of every
		// narrow format come up among them.
		vals = append(vals, math.Ldexp(rng.Float64()*2-1, rng.IntN(300)-150))
	}
	var profiles []Numerics
	for _, o := range []Overflow{OverflowInf, OverflowSaturate} {
		for _, s := range []Subnormals{SubnormalKeep, SubnormalFlush} {
			for _, r := range []Rounding{RoundHalfEven, RoundHalfAway} {
				profiles = append(profiles, Numerics{Overflow: o, Subnormals: s, Int8Rounding: r})
			}
		}
	}
	for _, d := range DTypes() {
		for _, num := range profiles {
			for _, off := range []int{0, 3} {
				bulk, each := MustNew(d, len(vals)+off), MustNew(d, len(vals)+off)
				bulk.SetFloat64s(off, vals, num)
				for i, v := range vals {
					each.SetFloat64(off+i, v, num)
				}
				bad := 0
				for i := range bulk.Len() {
					if got, want := bulk.Bits(i), each.Bits(i); got != want && bad < maxErrors {
						bad++
						t.Errorf("%s %s seed=%d: SetFloat64s(%d, …)[%d] (value %g) = bits %#x, want %#x (SetFloat64)", d, num, seed, off, i, vals[max(0, i-off)], got, want)
					}
				}
			}
		}
	}
}

// TestFillMatchesSetFloat64: Fill leaves every element of every dtype
// with the bits SetFloat64 stores for the value, at lengths around the
// powers of two its doubling copies cross.
func TestFillMatchesSetFloat64(t *testing.T) {
	vals := []float64{math.NaN(), math.Inf(-1), math.Copysign(0, -1), 2.5, -128.5, 65520, 1e-300}
	for _, d := range DTypes() {
		for _, num := range []Numerics{{}, {Overflow: OverflowSaturate, Subnormals: SubnormalFlush, Int8Rounding: RoundHalfAway}} {
			for _, v := range vals {
				one := MustNew(d, 1)
				one.SetFloat64(0, v, num)
				want := one.Bits(0)
				for _, n := range []int{0, 1, 2, 3, 4, 5, 63, 64, 65, 1000} {
					f := MustNew(d, n)
					f.Fill(v, num)
					for i := range n {
						if got := f.Bits(i); got != want {
							t.Errorf("%s %s: Fill(%g) of %d elements: [%d] = bits %#x, want %#x (SetFloat64)", d, num, v, n, i, got, want)
							break
						}
					}
				}
			}
		}
	}
}

// TestRepeatPrefix: after RepeatPrefix(m) every element i holds the bits
// of element i mod m, for every dtype, periods that do and do not divide
// the length, and m at and past the length (nothing changes).
func TestRepeatPrefix(t *testing.T) {
	for _, d := range DTypes() {
		for _, n := range []int{0, 1, 2, 7, 64, 1000} {
			for _, m := range []int{0, 1, 2, 3, 5, 64, 1000, 1001} {
				x := MustNew(d, n)
				for i := range n {
					x.SetBits(i, uint64(i*37+1)&(1<<(8*d.Size())-1))
				}
				orig := x.Clone()
				x.RepeatPrefix(m)
				for i := range n {
					want := orig.Bits(i)
					if m >= 1 && m < n {
						want = orig.Bits(i % m)
					}
					if got := x.Bits(i); got != want {
						t.Errorf("%s n=%d: RepeatPrefix(%d)[%d] = bits %#x, want %#x", d, n, m, i, got, want)
						break
					}
				}
			}
		}
	}
}

// TestCopyFrom: CopyFrom puts src's bit patterns at off and nothing else
// changes; a dtype mismatch or a range past the end is an error that
// leaves t alone.
func TestCopyFrom(t *testing.T) {
	for _, d := range DTypes() {
		dst, src := MustNew(d, 10), MustNew(d, 4)
		for i := range dst.Len() {
			dst.SetBits(i, uint64(0x11*(i+1)))
		}
		for i := range src.Len() {
			src.SetBits(i, uint64(0x70+i))
		}
		if err := dst.CopyFrom(5, src); err != nil {
			t.Fatalf("%s: CopyFrom(5, %s): %v", d, src, err)
		}
		for i := range dst.Len() {
			want := uint64(0x11 * (i + 1))
			if i >= 5 && i < 9 {
				want = uint64(0x70 + i - 5)
			}
			if got := dst.Bits(i); got != want {
				t.Errorf("%s: after CopyFrom(5, …): element %d = %#x, want %#x", d, i, got, want)
			}
		}
		before := dst.Clone()
		for _, off := range []int{-1, 7, 11} {
			if err := dst.CopyFrom(off, src); err == nil {
				t.Errorf("%s: CopyFrom(%d, 4 elements) into 10 = nil error, want out of range", d, off)
			}
		}
		other := MustNew(Float64, 2)
		if d == Float64 {
			other = MustNew(Int8, 2)
		}
		if err := dst.CopyFrom(0, other); err == nil {
			t.Errorf("%s: CopyFrom of a %s tensor = nil error, want a dtype mismatch", d, other.DType)
		}
		if ok, i := BitsEqual(dst, before); !ok {
			t.Errorf("%s: a failed CopyFrom changed element %d", d, i)
		}
	}
}
