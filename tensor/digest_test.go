package tensor

import "testing"

// TestDigest: a digest sees no change in an untouched tensor, and sees a
// one-bit change of any element of any dtype, naming the block that
// holds it; another dtype or shape is a change with lo = −1.
func TestDigest(t *testing.T) {
	for _, d := range DTypes() {
		for _, n := range []int{0, 1, DigestBlock - 1, DigestBlock, 3*DigestBlock + 5} {
			x := MustNew(d, n)
			fillPatterns(x)
			dg := NewDigest(x)
			if ch, lo, hi := dg.Changed(x); ch {
				t.Errorf("Digest(%v).Changed(itself) = true, [%d, %d), want false", x, lo, hi)
			}
			for _, i := range []int{0, n / 2, n - 1} {
				if i < 0 || i >= n {
					continue
				}
				old := x.Bits(i)
				x.SetBits(i, old^1)
				ch, lo, hi := dg.Changed(x)
				if wlo := i / DigestBlock * DigestBlock; !ch || lo != wlo || hi != min(wlo+DigestBlock, n) {
					t.Errorf("Digest(%v).Changed after element %d flipped = %v, [%d, %d), want true, [%d, %d)", x, i, ch, lo, hi, wlo, min(wlo+DigestBlock, n))
				}
				x.SetBits(i, old)
			}
			if ch, lo, _ := dg.Changed(MustNew(d, n+1)); !ch || lo != -1 {
				t.Errorf("Digest(%v).Changed(%s[%d]) = %v, lo %d, want true, −1", x, d, n+1, ch, lo)
			}
			other := Float32
			if d == Float32 {
				other = Float64
			}
			if ch, lo, _ := dg.Changed(MustNew(other, n)); !ch || lo != -1 {
				t.Errorf("Digest(%v).Changed(%s[%d]) = %v, lo %d, want true, −1", x, other, n, ch, lo)
			}
		}
	}
}
