package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/x448/float16"
)

// MaxElements is the default cap on the number of elements of one tensor.
// Readers check it before allocating, so a hostile header cannot exhaust
// memory.
const MaxElements = 1 << 28

// Tensor is a dense row-major array of one dtype. Its elements live in a
// typed slice chosen by DType: []float64, []float32, []float16.Float16,
// []BF16, []int8, []int32 or []uint8. Len() == product of Shape (1 for a
// scalar of shape []).
type Tensor struct {
	DType DType
	Shape []int
	data  any
}

// New returns a zero-filled tensor. It fails for an invalid dtype, a
// negative dimension, or more than MaxElements elements.
func New(d DType, shape ...int) (*Tensor, error) {
	n, err := NumElements(shape)
	if err != nil {
		return nil, err
	}
	if !d.Valid() {
		return nil, fmt.Errorf("invalid dtype %d", uint8(d))
	}
	t := &Tensor{DType: d, Shape: append([]int(nil), shape...)}
	switch d {
	case Float64:
		t.data = makeHuge[float64](n, 8)
	case Float32:
		t.data = makeHuge[float32](n, 4)
	case Float16:
		t.data = makeHuge[float16.Float16](n, 2)
	case BFloat16:
		t.data = makeHuge[BF16](n, 2)
	case Int8:
		t.data = makeHuge[int8](n, 1)
	case Int32:
		t.data = makeHuge[int32](n, 4)
	case Uint8:
		t.data = makeHuge[uint8](n, 1)
	}
	return t, nil
}

// makeHuge is make([]T, n) (size bytes per element) with the memory of a
// large slice advised into huge pages before it is first touched
// (adviseHuge): a tensor of tens of MiB then costs a few page faults, not
// thousands.
func makeHuge[T any](n, size int) []T {
	s := make([]T, n)
	adviseHuge(rawBytes(s, size))
	return s
}

// cloneHuge is slices.Clone through makeHuge.
func cloneHuge[T any](s []T, size int) []T {
	c := makeHuge[T](len(s), size)
	copy(c, s)
	return c
}

// MustNew is New for shapes known to be valid; it panics otherwise and is
// meant for tests and package-internal constants.
func MustNew(d DType, shape ...int) *Tensor {
	t, err := New(d, shape...)
	if err != nil {
		panic(err)
	}
	return t
}

// NumElements returns the product of shape, failing on a negative
// dimension or a product above MaxElements (checked without overflow).
func NumElements(shape []int) (int, error) {
	return numElements(shape, MaxElements)
}

// numElements is NumElements with a caller-chosen cap (0 < limit ≤ MaxElements).
func numElements(shape []int, limit int) (int, error) {
	// Negative dimensions first: [2^40, 0, -1] is invalid, not empty.
	for i, s := range shape {
		if s < 0 {
			return 0, fmt.Errorf("shape %v: dimension %d is negative", shape, i)
		}
	}
	n := 1
	for i, s := range shape {
		if s != 0 && n > limit/s {
			// Keep scanning for a zero dimension: [2^40, 0] is empty, not too large.
			for _, r := range shape[i:] {
				if r == 0 {
					return 0, nil
				}
			}
			return 0, fmt.Errorf("shape %v: more than %d elements", shape, limit)
		}
		n *= s
	}
	return n, nil
}

// FromFloat64 converts vals to a tensor of dtype d and the given shape,
// rounding each value by the numerics profile num.
func FromFloat64(d DType, shape []int, vals []float64, num Numerics) (*Tensor, error) {
	t, err := New(d, shape...)
	if err != nil {
		return nil, err
	}
	if len(vals) != t.Len() {
		return nil, fmt.Errorf("shape %v needs %d values, got %d", shape, t.Len(), len(vals))
	}
	t.SetFloat64s(0, vals, num)
	return t, nil
}

// Len is the number of elements.
func (t *Tensor) Len() int {
	switch s := t.data.(type) {
	case []float64:
		return len(s)
	case []float32:
		return len(s)
	case []float16.Float16:
		return len(s)
	case []BF16:
		return len(s)
	case []int8:
		return len(s)
	case []int32:
		return len(s)
	case []uint8:
		return len(s)
	}
	return 0
}

// F64 returns the backing slice of a Float64 tensor, nil for other dtypes.
func (t *Tensor) F64() []float64 { s, _ := t.data.([]float64); return s }

// F32 returns the backing slice of a Float32 tensor, nil for other dtypes.
func (t *Tensor) F32() []float32 { s, _ := t.data.([]float32); return s }

// F16 returns the backing slice of a Float16 tensor, nil for other dtypes.
func (t *Tensor) F16() []float16.Float16 { s, _ := t.data.([]float16.Float16); return s }

// BF16s returns the backing slice of a BFloat16 tensor, nil for other dtypes.
func (t *Tensor) BF16s() []BF16 { s, _ := t.data.([]BF16); return s }

// I8 returns the backing slice of an Int8 tensor, nil for other dtypes.
func (t *Tensor) I8() []int8 { s, _ := t.data.([]int8); return s }

// I32 returns the backing slice of an Int32 tensor, nil for other dtypes.
func (t *Tensor) I32() []int32 { s, _ := t.data.([]int32); return s }

// U8 returns the backing slice of a Uint8 tensor, nil for other dtypes.
func (t *Tensor) U8() []uint8 { s, _ := t.data.([]uint8); return s }

// SetFloat64 stores v at element i after rounding it to the tensor's
// dtype by the profile num (see Numerics.Round).
func (t *Tensor) SetFloat64(i int, v float64, num Numerics) {
	r := num.Round(v, t.DType)
	switch s := t.data.(type) {
	case []float64:
		s[i] = r
	case []float32:
		s[i] = float32(r) // exact: r is an fp32 value
	case []float16.Float16:
		s[i] = float16.Fromfloat32(float32(r)) // exact: r is an fp16 value
	case []BF16:
		s[i] = BF16FromFloat32(float32(r)) // exact: r is a bf16 value
	case []int8:
		s[i] = int8(r)
	case []int32:
		s[i] = int32(r)
	case []uint8:
		s[i] = uint8(r)
	}
}

// Fill stores v into every element, exactly as SetFloat64 stores it:
// rounded once, then copied at memory speed (a generator fills a KV
// cache's unwritten positions with NaN this way).
func (t *Tensor) Fill(v float64, num Numerics) {
	if t.Len() == 0 {
		return
	}
	t.SetFloat64(0, v, num)
	t.RepeatPrefix(1)
}

// RepeatPrefix sets elements m, m+1, … to copies of elements 0…m−1 in
// turn (element i takes the bits of element i mod m), by doubling copies
// at memory speed. For m < 1 or m ≥ Len nothing changes.
func (t *Tensor) RepeatPrefix(m int) {
	b, size := rawData(t), t.DType.Size()
	if m < 1 || m*size >= len(b) {
		return
	}
	for k := m * size; k < len(b); k *= 2 {
		copy(b[k:], b[:k])
	}
}

// SetFloat64s stores vals into elements off, off+1, …, each exactly as
// SetFloat64 stores it (rounded to the dtype under num), with the dtype
// and the rounding worked out once rather than per element: input
// generation stores every element of every case this way. It panics, as
// slice indexing does, if the range runs past the tensor.
func (t *Tensor) SetFloat64s(off int, vals []float64, num Numerics) {
	switch s := t.data.(type) {
	case []float64:
		setRounded(s[off:off+len(vals)], vals, num, Float64, func(r float64) float64 { return r })
	case []float32:
		setRounded(s[off:off+len(vals)], vals, num, Float32, func(r float64) float32 { return float32(r) })
	case []float16.Float16:
		setRounded(s[off:off+len(vals)], vals, num, Float16, func(r float64) float16.Float16 { return float16.Fromfloat32(float32(r)) })
	case []BF16:
		setRounded(s[off:off+len(vals)], vals, num, BFloat16, func(r float64) BF16 { return BF16FromFloat32(float32(r)) })
	case []int8:
		setRounded(s[off:off+len(vals)], vals, num, Int8, func(r float64) int8 { return int8(r) })
	case []int32:
		setRounded(s[off:off+len(vals)], vals, num, Int32, func(r float64) int32 { return int32(r) })
	case []uint8:
		setRounded(s[off:off+len(vals)], vals, num, Uint8, func(r float64) uint8 { return uint8(r) })
	}
}

// setRounded sets dst[i] = conv(num.Round(vals[i], d)). Under the IEEE
// profile (Numerics{}) a narrow float format's rounding is
// Format.RoundNearestEven alone (NaN and ±Inf pass through it, nothing
// saturates or flushes), so that loop calls it directly; every other
// case goes through Round. conv is exact: its argument is a value of d.
func setRounded[E any](dst []E, vals []float64, num Numerics, d DType, conv func(float64) E) {
	if f, ok := d.FloatFormat(); ok && num == (Numerics{}) && d != Float64 {
		for i, v := range vals {
			dst[i] = conv(f.RoundNearestEven(v))
		}
		return
	}
	for i, v := range vals {
		dst[i] = conv(num.Round(v, d))
	}
}

// Bits returns the bit pattern of element i, zero-extended: the identity
// used by bit-exact comparisons (it distinguishes −0 from +0 and NaN
// payloads).
func (t *Tensor) Bits(i int) uint64 {
	switch s := t.data.(type) {
	case []float64:
		return math.Float64bits(s[i])
	case []float32:
		return uint64(math.Float32bits(s[i]))
	case []float16.Float16:
		return uint64(s[i].Bits())
	case []BF16:
		return uint64(s[i])
	case []int8:
		return uint64(uint8(s[i]))
	case []int32:
		return uint64(uint32(s[i]))
	case []uint8:
		return uint64(s[i])
	}
	panic("tensor: Bits on a tensor without data")
}

// SetBits stores the low Size()·8 bits of b as element i's bit pattern.
func (t *Tensor) SetBits(i int, b uint64) {
	switch s := t.data.(type) {
	case []float64:
		s[i] = math.Float64frombits(b)
	case []float32:
		s[i] = math.Float32frombits(uint32(b))
	case []float16.Float16:
		s[i] = float16.Frombits(uint16(b))
	case []BF16:
		s[i] = BF16(b)
	case []int8:
		s[i] = int8(uint8(b))
	case []int32:
		s[i] = int32(uint32(b))
	case []uint8:
		s[i] = uint8(b)
	}
}

// Clone returns a deep copy: the same dtype, a copy of the shape and a
// bit-exact copy of the elements (one allocation for the data).
func (t *Tensor) Clone() *Tensor {
	c := &Tensor{DType: t.DType, Shape: slices.Clone(t.Shape)}
	switch s := t.data.(type) {
	case []float64:
		c.data = cloneHuge(s, 8)
	case []float32:
		c.data = cloneHuge(s, 4)
	case []float16.Float16:
		c.data = cloneHuge(s, 2)
	case []BF16:
		c.data = cloneHuge(s, 2)
	case []int8:
		c.data = cloneHuge(s, 1)
	case []int32:
		c.data = cloneHuge(s, 4)
	case []uint8:
		c.data = cloneHuge(s, 1)
	}
	return c
}

// Window returns the 1-D tensor of elements off, off+1, … off+n−1 of t,
// sharing t's memory: a write through either is seen by both. It lets a
// caller judge a large output a block at a time without copying it.
// 0 ≤ off ≤ off+n ≤ t.Len() is the caller's to hold; it panics otherwise,
// as a slice expression would.
func (t *Tensor) Window(off, n int) *Tensor {
	w := &Tensor{DType: t.DType, Shape: []int{n}}
	switch s := t.data.(type) {
	case []float64:
		w.data = s[off : off+n : off+n]
	case []float32:
		w.data = s[off : off+n : off+n]
	case []float16.Float16:
		w.data = s[off : off+n : off+n]
	case []BF16:
		w.data = s[off : off+n : off+n]
	case []int8:
		w.data = s[off : off+n : off+n]
	case []int32:
		w.data = s[off : off+n : off+n]
	case []uint8:
		w.data = s[off : off+n : off+n]
	}
	return w
}

// SameShape reports whether t has exactly the given shape.
func (t *Tensor) SameShape(shape []int) bool {
	if len(t.Shape) != len(shape) {
		return false
	}
	for i := range shape {
		if t.Shape[i] != shape[i] {
			return false
		}
	}
	return true
}

// CopyFrom sets elements off, off+1, … of t to src's elements, bit for
// bit (both of one dtype), at memory speed: a kernel's in-place output
// starts as a copy of its input this way.
func (t *Tensor) CopyFrom(off int, src *Tensor) error {
	if t.DType != src.DType {
		return fmt.Errorf("copy of %s into %s: dtypes differ", src, t)
	}
	if n := src.Len(); off < 0 || off > t.Len()-n {
		return fmt.Errorf("copy of %s into %s at element %d: out of range", src, t, off)
	}
	size := t.DType.Size()
	copy(rawData(t)[off*size:], rawData(src))
	return nil
}

// rawData returns the memory of t's elements as bytes (bit patterns, in
// the host's byte order), nil when t has no data.
func rawData(t *Tensor) []byte {
	switch s := t.data.(type) {
	case []float64:
		return rawBytes(s, 8)
	case []float32:
		return rawBytes(s, 4)
	case []float16.Float16:
		return rawBytes(s, 2)
	case []BF16:
		return rawBytes(s, 2)
	case []int8:
		return rawBytes(s, 1)
	case []int32:
		return rawBytes(s, 4)
	case []uint8:
		return s
	}
	return nil
}

// String describes dtype and shape, e.g. "fp16[4 8]".
func (t *Tensor) String() string { return fmt.Sprintf("%s%v", t.DType, t.Shape) }
