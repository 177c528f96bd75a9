package ops

import (
	"unsafe"

	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
)

// gatherBits sets y's element i to x's element idx[i] bit for bit, for
// every i with idx[i] ≥ 0 (the others are left as they are): transdata's
// expected output from the reference's index map. It is the loop
// `y.SetBits(i, x.Bits(idx[i]))` (TestGatherBitsMatchesLoop), typed for
// each element size and on all cores, where that loop's dtype switches
// per element made transdata's Expect slower than its kernel.
func gatherBits(y, x *tensor.Tensor, idx []int) {
	switch {
	case y.DType != x.DType || y.Len() != len(idx):
		gatherBitsLoop(y, x, idx)
	case y.F16() != nil:
		gather(halfBits(y.F16()), halfBits(x.F16()), idx)
	case y.BF16s() != nil:
		gather(halfBits(y.BF16s()), halfBits(x.BF16s()), idx)
	case y.F32() != nil:
		gather(y.F32(), x.F32(), idx)
	case y.I8() != nil:
		gather(y.I8(), x.I8(), idx)
	default:
		gatherBitsLoop(y, x, idx)
	}
}

// gatherBitsLoop is gatherBits one element at a time, any dtype.
func gatherBitsLoop(y, x *tensor.Tensor, idx []int) {
	for i, j := range idx {
		if j >= 0 {
			y.SetBits(i, x.Bits(j))
		}
	}
}

// halfBits views a slice of 16-bit values as their bit patterns.
func halfBits[T ~uint16](s []T) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// gather sets dst[i] = src[idx[i]] for idx[i] ≥ 0, the cores taking equal
// shares of i. A copy of the value (a float32's too: no arithmetic) keeps
// its bits, a NaN's payload included.
func gather[T any](dst, src []T, idx []int) {
	parallel.For(len(idx), 1<<14, func(lo, hi int) {
		for i, j := range idx[lo:hi] {
			if j >= 0 {
				dst[lo+i] = src[j]
			}
		}
	})
}

// gatherToNC1HWC0 is gatherBits(y, x, reference.NCHWToNC1HWC0(n, c, h, w,
// c0, nhwc)) without the index map (TestGatherToNC1HWC0MatchesMap): the
// map is an int per output element, and building it took most of
// transdata's Expect (about 12 of 17 ms for 3.2 million fp16 elements,
// against 14–17 ms of kernel). It reports false, doing nothing, for a
// dtype it has no typed form for. y is [n, c1, h, w, c0], each (i, q)
// block of it taken by one core; a padding lane (channel ≥ c) is left
// as it is, as gatherBits leaves an index −1.
func gatherToNC1HWC0(y, x *tensor.Tensor, n, c, h, w, c0 int, nhwc bool) bool {
	switch {
	case y.DType != x.DType:
		return false
	case y.F16() != nil:
		toNC1HWC0(halfBits(y.F16()), halfBits(x.F16()), n, c, h, w, c0, nhwc)
	case y.BF16s() != nil:
		toNC1HWC0(halfBits(y.BF16s()), halfBits(x.BF16s()), n, c, h, w, c0, nhwc)
	case y.F32() != nil:
		toNC1HWC0(y.F32(), x.F32(), n, c, h, w, c0, nhwc)
	case y.I8() != nil:
		toNC1HWC0(y.I8(), x.I8(), n, c, h, w, c0, nhwc)
	default:
		return false
	}
	return true
}

// toNC1HWC0 is gatherToNC1HWC0 on the element slices.
func toNC1HWC0[T any](dst, src []T, n, c, h, w, c0 int, nhwc bool) {
	c1 := (c + c0 - 1) / c0
	plane := h * w * c0
	parallel.For(n*c1, max(1, (1<<14)/max(plane, 1)), func(lo, hi int) {
		for blk := lo; blk < hi; blk++ {
			i, q := blk/c1, blk%c1
			out := dst[blk*plane : (blk+1)*plane]
			lanes := min(c0, c-q*c0) // the rest are padding
			for yy := 0; yy < h; yy++ {
				for xx := 0; xx < w; xx++ {
					o := out[(yy*w+xx)*c0:][:lanes]
					if nhwc {
						base := ((i*h+yy)*w+xx)*c + q*c0
						copy(o, src[base:base+lanes])
						continue
					}
					for j := range o {
						o[j] = src[((i*c+q*c0+j)*h+yy)*w+xx]
					}
				}
			}
		}
	})
}
