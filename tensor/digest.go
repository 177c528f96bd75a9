package tensor

import (
	"hash/maphash"
	"slices"
)

// DigestBlock is how many elements one hash of a Digest covers.
const DigestBlock = 1024

// Digest is a fingerprint of a tensor's elements: its dtype, its shape
// and a 64-bit hash of the bit patterns of every block of DigestBlock
// elements. It tells later whether the tensor changed, and in which
// block first, without a copy of it: 8 bytes per block instead of the
// block's 1–8 KiB. The hashes are seeded at random per Digest, so a
// change goes unnoticed with a chance of 2^-64 per block, whatever
// wrote it.
type Digest struct {
	dtype DType
	shape []int
	seed  maphash.Seed
	sums  []uint64
}

// NewDigest takes the digest of t's current elements.
func NewDigest(t *Tensor) *Digest {
	d := &Digest{dtype: t.DType, shape: slices.Clone(t.Shape), seed: maphash.MakeSeed()}
	d.sums = d.hashes(t, nil)
	return d
}

// hashes appends the block hashes of t's elements to dst.
func (d *Digest) hashes(t *Tensor, dst []uint64) []uint64 {
	raw := rawData(t)
	step := DigestBlock * t.DType.Size()
	for lo := 0; lo < len(raw); lo += step {
		dst = append(dst, maphash.Bytes(d.seed, raw[lo:min(lo+step, len(raw))]))
	}
	return dst
}

// Changed reports whether t differs from the tensor the digest was
// taken of: another dtype or shape (lo = −1), or elements of other bits,
// the first changed block being elements [lo, hi).
func (d *Digest) Changed(t *Tensor) (changed bool, lo, hi int) {
	if t.DType != d.dtype || !t.SameShape(d.shape) {
		return true, -1, -1
	}
	raw := rawData(t)
	if len(raw) != t.Len()*t.DType.Size() { // elements that do not match the shape
		return true, -1, -1
	}
	step := DigestBlock * t.DType.Size()
	for b, sum := range d.sums {
		off := b * step
		if maphash.Bytes(d.seed, raw[off:min(off+step, len(raw))]) != sum {
			return true, b * DigestBlock, min((b+1)*DigestBlock, t.Len())
		}
	}
	return false, 0, 0
}
