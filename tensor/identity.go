package tensor

import (
	"bytes"
	"hash/maphash"
	"math"

	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/x448/float16"
)

// Bit identity: whether a tensor is the same, element for element, bit
// for bit, as another (BitsEqual) or as it was before (Hash), without
// reading its values.

// Hash returns a 64-bit hash under seed of t's dtype, shape and element
// bit patterns (hash/maphash). Equal tensors hash equal; a tensor changed
// in any way hashes differently but with probability about 2^-63. It
// lets a caller check that a large tensor came back unchanged without
// keeping a copy of it.
//
// Data of more than hashChunk bytes is hashed a chunk at a time on all
// cores, and the chunks' hashes in order then stand for it: a change
// makes its chunk's hash collide with probability 2^-64, and the
// sequence's, once a chunk's differs, again 2^-64. (A harness hashes a
// kernel's inputs before and after every run; hashed whole, on one core,
// that was 8% of the samples of a decode-shaped GEMM's run.)
func (t *Tensor) Hash(seed maphash.Seed) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteByte(byte(t.DType))
	maphash.WriteComparable(&h, len(t.Shape))
	for _, d := range t.Shape {
		maphash.WriteComparable(&h, d)
	}
	data := rawData(t)
	if len(data) <= hashChunk {
		h.Write(data)
		return h.Sum64()
	}
	sums := make([]uint64, (len(data)+hashChunk-1)/hashChunk)
	parallel.For(len(sums), 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			sums[c] = maphash.Bytes(seed, data[c*hashChunk:min((c+1)*hashChunk, len(data))])
		}
	})
	for _, c := range sums {
		maphash.WriteComparable(&h, c)
	}
	return h.Sum64()
}

// hashChunk is how many bytes of a tensor's data Hash hashes on one core
// at a time (a variable for the test that cuts small tensors into
// chunks).
var hashChunk = 1 << 22

// BitsEqual reports whether a and b have the same dtype, shape and bit
// patterns, and returns the first differing element index otherwise
// (-1 when dtype or shape differ).
func BitsEqual(a, b *Tensor) (bool, int) {
	if a.DType != b.DType || !a.SameShape(b.Shape) {
		return false, -1
	}
	if ra, rb := rawData(a), rawData(b); ra != nil && rb != nil && bytes.Equal(ra, rb) {
		return true, 0 // the common case, at memory speed; else find where
	}
	i := -1
	switch x := a.data.(type) {
	case []float64:
		y := b.data.([]float64)
		i = firstDiffBy(x, y, math.Float64bits)
	case []float32:
		y := b.data.([]float32)
		i = firstDiffBy(x, y, math.Float32bits)
	case []float16.Float16: // integer-backed types: == compares the bits
		i = firstDiff(x, b.data.([]float16.Float16))
	case []BF16:
		i = firstDiff(x, b.data.([]BF16))
	case []int8:
		i = firstDiff(x, b.data.([]int8))
	case []int32:
		i = firstDiff(x, b.data.([]int32))
	case []uint8:
		i = firstDiff(x, b.data.([]uint8))
	}
	if i >= 0 {
		return false, i
	}
	return true, 0
}

// BitsEqualRange reports whether elements [lo, hi) of a and b have the
// same bit patterns, comparing their bytes at memory speed: false when
// the dtypes differ or either tensor has fewer than hi elements, true for
// an empty range of both.
func BitsEqualRange(a, b *Tensor, lo, hi int) bool {
	if a.DType != b.DType || lo < 0 || hi < lo || hi > a.Len() || hi > b.Len() {
		return false
	}
	size := a.DType.Size()
	ra, rb := rawData(a), rawData(b)
	return bytes.Equal(ra[lo*size:hi*size], rb[lo*size:hi*size])
}

// firstDiff returns the first index where x and y (same length) differ, or −1.
func firstDiff[T comparable](x, y []T) int {
	y = y[:len(x)]
	for i := range x {
		if x[i] != y[i] {
			return i
		}
	}
	return -1
}

// firstDiffBy is firstDiff comparing bits(x[i]) with bits(y[i]).
func firstDiffBy[T any, B comparable](x, y []T, bits func(T) B) int {
	y = y[:len(x)]
	for i := range x {
		if bits(x[i]) != bits(y[i]) {
			return i
		}
	}
	return -1
}
