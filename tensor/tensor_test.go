package tensor

import (
	"hash/maphash"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestNumElements(t *testing.T) {
	const big = 1 << 40
	for _, tc := range []struct {
		shape   []int
		want    int
		wantErr string // substring; "" means no error
	}{
		{nil, 1, ""},
		{[]int{}, 1, ""},
		{[]int{0}, 0, ""},
		{[]int{3}, 3, ""},
		{[]int{2, 3, 4}, 24, ""},
		{[]int{MaxElements}, MaxElements, ""},
		{[]int{1 << 14, 1 << 14}, 1 << 28, ""},
		{[]int{MaxElements + 1}, 0, "more than"},
		{[]int{1 << 14, 1 << 14, 2}, 0, "more than"},
		{[]int{big, big}, 0, "more than"},                     // 2^80 must not wrap around
		{[]int{1 << 32, 1 << 32}, 0, "more than"},             // wraps to 0 in int64
		{[]int{math.MaxInt, math.MaxInt}, 0, "more than"},     //
		{[]int{3, math.MaxInt/3 + 1, 2}, 0, "more than"},      //
		{[]int{big, 0}, 0, ""},                                // empty, not too large
		{[]int{0, big, big}, 0, ""},                           //
		{[]int{-1}, 0, "dimension 0 is negative"},             //
		{[]int{2, -3}, 0, "dimension 1 is negative"},          //
		{[]int{big, 0, -1}, 0, "dimension 2 is negative"},     // not hidden by the zero
		{[]int{0, -1}, 0, "dimension 1 is negative"},          //
		{[]int{math.MinInt, 0}, 0, "dimension 0 is negative"}, //
	} {
		got, err := NumElements(tc.shape)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("NumElements(%v) error %v, want %d", tc.shape, err, tc.want)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("NumElements(%v) = %d, %v, want error containing %q", tc.shape, got, err, tc.wantErr)
		case got != tc.want:
			t.Errorf("NumElements(%v) = %d, want %d", tc.shape, got, tc.want)
		}
	}
}

func TestNew(t *testing.T) {
	for _, d := range DTypes() {
		shape := []int{2, 3}
		x, err := New(d, shape...)
		if err != nil {
			t.Fatalf("New(%s, 2, 3): %v", d, err)
		}
		shape[0] = 7 // the tensor must own its shape
		if x.DType != d || !x.SameShape([]int{2, 3}) || x.Len() != 6 {
			t.Errorf("New(%s, 2, 3) = %v with Len %d", d, x, x.Len())
		}
		for i := range x.Len() {
			if x.Bits(i) != 0 {
				t.Errorf("New(%s): element %d = %#x, want 0", d, i, x.Bits(i))
			}
		}
		s := MustNew(d) // scalar
		if s.Len() != 1 || len(s.Shape) != 0 {
			t.Errorf("MustNew(%s) = %v with Len %d, want a scalar", d, s, s.Len())
		}
	}
	for _, tc := range []struct {
		d     DType
		shape []int
	}{
		{0, []int{2}},
		{DType(99), []int{2}},
		{Float16, []int{-1}},
		{Float16, []int{2, -1}},
		{Int8, []int{1 << 20, 1 << 20}},
	} {
		if x, err := New(tc.d, tc.shape...); err == nil {
			t.Errorf("New(%v, %v) = %v, want an error", tc.d, tc.shape, x)
		}
	}
	defer func() {
		if recover() == nil {
			t.Errorf("MustNew(fp16, -1) did not panic")
		}
	}()
	MustNew(Float16, -1)
}

func TestFromFloat64(t *testing.T) {
	x, err := FromFloat64(Float16, []int{2, 2}, []float64{1, 1 + math.Ldexp(1, -11) + math.Ldexp(1, -40), math.Copysign(0, -1), 1e6}, Numerics{})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{0x3c00, 0x3c01, 0x8000, 0x7c00}
	for i, w := range want {
		if got := x.Bits(i); got != w {
			t.Errorf("FromFloat64 element %d bits %#04x, want %#04x", i, got, w)
		}
	}
	if _, err := FromFloat64(Float16, []int{3}, []float64{1, 2}, Numerics{}); err == nil {
		t.Errorf("FromFloat64 with 2 values for shape [3] succeeded, want an error")
	}
}

// fillPatterns gives every element of x a distinct, awkward bit pattern
// (NaN payloads and −0 included for the float dtypes).
func fillPatterns(x *Tensor) {
	specials := map[DType][]uint64{
		Float64:  {0x8000000000000000, 0x7ff8000000000001, 0xfff4000000000000, 0x0000000000000001, 0x7ff0000000000000},
		Float32:  {0x80000000, 0x7fc00001, 0xffa00000, 0x00000001, 0xff800000},
		Float16:  {0x8000, 0x7e01, 0xfd00, 0x0001, 0x7c00},
		BFloat16: {0x8000, 0x7fc1, 0xffa0, 0x0001, 0xff80},
		Int8:     {0x80, 0x7f, 0xff},
		Int32:    {0x80000000, 0x7fffffff, 0xffffffff},
		Uint8:    {0xff, 0x80},
	}
	sp := specials[x.DType]
	for i := range x.Len() {
		if i < len(sp) {
			x.SetBits(i, sp[i])
		} else {
			x.SetBits(i, uint64(i)*0x9e3779b97f4a7c15>>7)
		}
	}
}

// TestWindow: a window holds exactly the elements it names, for every
// dtype, and shares their memory both ways.
func TestWindow(t *testing.T) {
	for _, d := range DTypes() {
		x := MustNew(d, 3, 5)
		fillPatterns(x)
		for _, c := range [][2]int{{0, 15}, {4, 7}, {15, 0}, {14, 1}} {
			off, n := c[0], c[1]
			w := x.Window(off, n)
			if w.DType != d || !w.SameShape([]int{n}) || w.Len() != n {
				t.Errorf("%v.Window(%d, %d) = %v, want %s[%d]", x, off, n, w, d, n)
				continue
			}
			for i := range n {
				if w.Bits(i) != x.Bits(off+i) {
					t.Errorf("%v.Window(%d, %d): element %d = %#x, want %#x", x, off, n, i, w.Bits(i), x.Bits(off+i))
				}
			}
			if n > 0 {
				old := x.Bits(off)
				w.SetBits(0, old^1)
				if x.Bits(off) != old^1 {
					t.Errorf("%v.Window(%d, %d) does not share memory with the tensor", x, off, n)
				}
				w.SetBits(0, old)
			}
		}
	}
}

func TestClone(t *testing.T) {
	for _, d := range DTypes() {
		for _, shape := range [][]int{{3, 5}, {}, {0}, {2, 0, 3}} {
			x := MustNew(d, shape...)
			fillPatterns(x)
			c := x.Clone()
			if ok, i := BitsEqual(x, c); !ok {
				t.Errorf("%v.Clone() differs at element %d", x, i)
				continue
			}
			if c.Len() > 0 {
				c.SetBits(0, x.Bits(0)^1)
				if x.Bits(0) == c.Bits(0) {
					t.Errorf("%v.Clone() shares data with the original", x)
				}
			}
			if len(c.Shape) > 0 {
				c.Shape[0]++
				if slices.Equal(c.Shape, x.Shape) {
					t.Errorf("%v.Clone() shares its shape with the original", x)
				}
			}
		}
		// Clone is a plain copy: the Tensor, the shape, the data and the
		// slice header boxed in the interface; no per-element work.
		x := MustNew(d, 64, 64)
		if n := testing.AllocsPerRun(10, func() { _ = x.Clone() }); n > 4 {
			t.Errorf("%v.Clone() allocates %v times, want at most 4", x, n)
		}
	}
}

// TestHash: a clone hashes as its original; flipping any one bit of an
// element, or changing the dtype or the shape, changes the hash (each
// with probability about 1 − 2^-63): hashed whole, and a chunk at a time
// (hashChunk cut to 4, 7 and 16 bytes, so that the chunks fall on and
// off element boundaries and the last is short).
func TestHash(t *testing.T) {
	for _, chunk := range []int{hashChunk, 4, 7, 16} {
		prev := hashChunk
		hashChunk = chunk
		testHash(t)
		hashChunk = prev
	}
}

// testHash is TestHash at the present hashChunk.
func testHash(t *testing.T) {
	seed := maphash.MakeSeed()
	for _, d := range DTypes() {
		x := MustNew(d, 3, 5)
		fillPatterns(x)
		h := x.Hash(seed)
		if got := x.Clone().Hash(seed); got != h {
			t.Errorf("%s: Clone().Hash = %#x, want the original's %#x", x, got, h)
		}
		for i := range x.Len() {
			for bit := range 8 * d.Size() {
				y := x.Clone()
				y.SetBits(i, y.Bits(i)^1<<bit)
				if y.Hash(seed) == h {
					t.Errorf("%s hashChunk=%d: flipping bit %d of element %d left the hash %#x", x, hashChunk, bit, i, h)
				}
			}
		}
		r := x.Clone()
		r.Shape = []int{5, 3}
		if r.Hash(seed) == h {
			t.Errorf("%s: reshaped to %v, the hash stayed %#x", x, r.Shape, h)
		}
	}
	a, b := MustNew(Int8, 4), MustNew(Uint8, 4)
	if a.Hash(seed) == b.Hash(seed) {
		t.Error("int8[4] and uint8[4] of zeros hash the same")
	}
}

func TestBitsEqual(t *testing.T) {
	a := MustNew(Float16, 2, 2)
	fillPatterns(a)
	b := a.Clone()
	if ok, _ := BitsEqual(a, b); !ok {
		t.Errorf("BitsEqual(a, a.Clone()) = false")
	}
	b.SetBits(3, 0x8000) // −0 vs +0 differs bitwise
	if ok, i := BitsEqual(a, b); ok || i != 3 {
		t.Errorf("BitsEqual after changing element 3 = %v, %d, want false, 3", ok, i)
	}
	if ok, i := BitsEqual(a, MustNew(Float16, 4)); ok || i != -1 {
		t.Errorf("BitsEqual with another shape = %v, %d, want false, -1", ok, i)
	}
	if ok, i := BitsEqual(a, MustNew(BFloat16, 2, 2)); ok || i != -1 {
		t.Errorf("BitsEqual with another dtype = %v, %d, want false, -1", ok, i)
	}
}

func BenchmarkClone(b *testing.B) {
	x := MustNew(Float16, 1024, 1024)
	b.SetBytes(int64(x.Len() * x.DType.Size()))
	for b.Loop() {
		_ = x.Clone()
	}
}

func TestAccessors(t *testing.T) {
	vals := []float64{1.5, -2, 100}
	for _, d := range DTypes() {
		x, err := FromFloat64(d, []int{3}, vals, Numerics{})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		switch d {
		case Float64:
			n = len(x.F64())
		case Float32:
			n = len(x.F32())
		case Float16:
			n = len(x.F16())
		case BFloat16:
			n = len(x.BF16s())
		case Int8:
			n = len(x.I8())
		case Int32:
			n = len(x.I32())
		case Uint8:
			n = len(x.U8())
		}
		if n != 3 {
			t.Errorf("%s: typed accessor has %d elements, want 3", d, n)
		}
		want := []float64{1.5, -2, 100}
		switch d {
		case Int8, Int32:
			want = []float64{2, -2, 100}
		case Uint8:
			want = []float64{2, 0, 100}
		}
		if got := x.Float64s(); !slices.Equal(got, want) {
			t.Errorf("FromFloat64(%s, %v).Float64s() = %v, want %v", d, vals, got, want)
		}
		// Every other accessor is nil.
		others := 0
		for _, s := range []int{len(x.F64()), len(x.F32()), len(x.F16()), len(x.BF16s()), len(x.I8()), len(x.I32()), len(x.U8())} {
			if s != 0 {
				others++
			}
		}
		if others != 1 {
			t.Errorf("%s: %d typed accessors are non-empty, want 1", d, others)
		}
		if got, want := x.String(), d.String()+"[3]"; got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
}

// BenchmarkHash is Hash of a 2^24-element fp16 tensor (32 MiB), the size
// of a vector_add benchmark input, which a harness hashes twice a run.
func BenchmarkHash(b *testing.B) {
	x := MustNew(Float16, 1<<24)
	seed := maphash.MakeSeed()
	b.SetBytes(2 << 24)
	for b.Loop() {
		x.Hash(seed)
	}
}
