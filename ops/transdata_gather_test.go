package ops

import (
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// TestGatherBitsMatchesLoop: gatherBits sets the same bits as the loop
// one element at a time, on every transdata dtype, random bit patterns
// (NaNs with payloads, −0, subnormals among them), padding entries (−1)
// left as they were, and lengths from empty to several cores' shares.
func TestGatherBitsMatchesLoop(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 1))
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
		for _, n := range []int{0, 1, 7, 1000, 1<<15 + 3, 1 << 17} {
			x := tensor.MustNew(d, n+5)
			mask := uint64(1)<<(8*d.Size()) - 1
			for i := range x.Len() {
				x.SetBits(i, r.Uint64()&mask)
			}
			idx := make([]int, n)
			for i := range idx {
				idx[i] = r.IntN(x.Len()+1) - 1 // -1: padding
			}
			got, want := tensor.MustNew(d, n), tensor.MustNew(d, n)
			for i := range n { // what padding leaves: the destination's own bits
				b := r.Uint64() & mask
				got.SetBits(i, b)
				want.SetBits(i, b)
			}
			gatherBits(got, x, idx)
			gatherBitsLoop(want, x, idx)
			if ok, i := tensor.BitsEqual(got, want); !ok {
				t.Fatalf("%s n=%d: element %d: gatherBits %#x, the loop %#x", d, n, i, got.Bits(i), want.Bits(i))
			}
		}
	}
}

// TestGatherToNC1HWC0MatchesMap: the gather without the index map sets
// the bits the map's gather sets (reference.NCHWToNC1HWC0), NCHW and
// NHWC, on every transdata dtype and its C0, with C a multiple of C0 and
// not (padding lanes), one to several cores' blocks.
func TestGatherToNC1HWC0MatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 2))
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
		c0 := TransDataC0(d)
		for _, sh := range [][4]int{{1, 1, 1, 1}, {1, 3, 2, 5}, {2, c0, 3, 3}, {2, c0 + 1, 4, 7}, {3, 2*c0 - 1, 17, 9}, {4, 3 * c0, 32, 33}} {
			n, c, h, w := sh[0], sh[1], sh[2], sh[3]
			for _, nhwc := range []bool{false, true} {
				shape := []int{n, c, h, w}
				if nhwc {
					shape = []int{n, h, w, c}
				}
				x := tensor.MustNew(d, shape...)
				mask := uint64(1)<<(8*d.Size()) - 1
				for i := range x.Len() {
					x.SetBits(i, r.Uint64()&mask)
				}
				c1 := (c + c0 - 1) / c0
				got, want := tensor.MustNew(d, n, c1, h, w, c0), tensor.MustNew(d, n, c1, h, w, c0)
				if !gatherToNC1HWC0(got, x, n, c, h, w, c0, nhwc) {
					t.Fatalf("%s: gatherToNC1HWC0 declined", d)
				}
				gatherBitsLoop(want, x, reference.NCHWToNC1HWC0(n, c, h, w, c0, nhwc))
				if ok, i := tensor.BitsEqual(got, want); !ok {
					t.Fatalf("%s %v nhwc=%v: element %d: %#x, the map's gather %#x", d, shape, nhwc, i, got.Bits(i), want.Bits(i))
				}
			}
		}
	}
}
