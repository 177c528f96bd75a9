package verify

import (
	"encoding/binary"
	"math"
	"unsafe"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// Copied chunks. An output that stores a large input back with a few rows
// written (a KV cache after an update) is mostly elements its Expected
// describes as the input copied (bound.NewUnchanged), which a correct
// kernel leaves bit for bit (some may be NaN, such as a cache's positions
// past a sequence's length). Nothing here knows which op made them. For a
// chunk of such elements whose got has the base's bits, chunkOf's sums
// follow from the base alone:
//
//   - a non-finite element is not compared: its terms are +0, which
//     leave every sum as it was, and chunkMax passes it by, so it counts
//     as a 0 here, and a chunk of nothing else (a run of a cache's unread
//     tail) has sums of +0 and no scale, chunkSums' zero value (when the
//     profile saturates, its reference is another value than the base's,
//     and such a chunk is not taken);
//   - for every finite element g = r, so e = |g − r| = +0: every relative
//     error and error term is +0 (maxE = 0: scale 1, x 0, no error sums),
//     and MERE's and RMSE's sums stay +0;
//   - the value terms g/s and r/s are equal, so Σgr, Σgg and Σrr are one
//     and the same sum of (r/s)², s the chunk's power of two below max |r|.
//
// Which chunks are copied is what the metrics' own pass over the output
// finds (computeUnchanged gathers exactly such elements inline), so
// Stream.addCopied judges a chunk's metrics and then, while its values
// are still in the core's caches, its sums: one pass over got and the
// base where a pass for the metrics and another for the sums (comparing
// them again) read each twice from memory.
//
// copiedChunks.sums takes that one sum in chunkOf's four lanes
// (sumSquares), up to four chunks a call. r/s is taken as r·(1/s): both are the exact quotient rounded
// once, as 1/s is exact (s is 2^x with x in [−133, 127] for fp16 and
// bf16 values). The bits are chunkOf's (TestCopiedChunksMatchChunkOf).

// fastCopied lets Stream take copied chunks by addCopied; the tests turn
// it off to compare with the metrics and every chunk's chunkOf apart.
var fastCopied = true

// copiedChunks is what Stream.addCopied needs to take the copied chunks
// of got, judged against want.
type copiedChunks struct {
	base  *tensor.Tensor
	b     []byte            // the base's bits, two bytes an element
	f16   []float16.Float16 // the base's values when it is fp16, else nil
	spans []bound.Span
	num   tensor.Numerics
	inf   uint16 // the first non-finite pattern of the dtype, sign cleared
}

// newCopiedChunks returns the copied-chunk taker for got against want,
// or nil when want is not an unchanged form of got's own 16-bit floating
// dtype covering all of got.
func newCopiedChunks(got *tensor.Tensor, want *bound.Expected) *copiedChunks {
	if !fastCopied {
		return nil
	}
	base, num, spans, ok := want.UnchangedBase()
	if !ok || base.DType != got.DType || base.Len() != got.Len() || want.Span() != got.Len() {
		return nil
	}
	c := &copiedChunks{base: base, spans: spans, num: num}
	switch got.DType {
	case tensor.Float16:
		c.f16 = base.F16()
		c.b, c.inf = bits16(c.f16), 0x7C00
	case tensor.BFloat16:
		c.b, c.inf = bits16(base.BF16s()), 0x7F80
	default:
		return nil
	}
	return c
}

// bits16 is the memory of a slice of 16-bit values.
func bits16[T ~uint16](s []T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))
}

// copiedOf says, from what computeUnchanged gathered inline (acc) of a
// chunk of k elements, whether the chunk is copied (a full chunk, every
// element gathered inline: outside every span, got's bits the base's,
// and finite unless non-finite values keep their class), and whether its
// values are all finite, or all non-finite.
func copiedOf(acc sameAcc, k int) (ok, finite, noneFinite bool) {
	if k != sumChunk || acc.compared+acc.nonFinite != k {
		return false, false, false
	}
	return true, acc.nonFinite == 0, acc.compared == 0
}

// addCopied judges the whole output (Compute, or a Stream given one
// block) against want, an unchanged form of it (cc), a chunk at a time
// on each core: the chunk's metrics (computeUnchanged), then its sums,
// a copied chunk's from the base (copiedChunks.sums, four chunks at a
// time), any other's by chunkOf. The metrics and sums are those of add
// (TestCopiedChunksMatchChunkOf).
func (s *Stream) addCopied(want *bound.Expected, cc *copiedChunks) {
	s.byChunks(func(p *metricsPart, c0, c1 int) {
		bp := blockBufs.Get().(*[2 * block]float64)
		defer blockBufs.Put(bp)
		var group [4]copiedChunk
		n := 0
		flush := func() {
			if n > 0 {
				tb := termBufs.Get()
				cc.sums(group[:n], *tb)
				termBufs.Put(tb)
				n = 0
			}
		}
		for c := c0; c < c1; c++ {
			a := c * sumChunk
			k := min(sumChunk, s.n-a)
			acc := p.computeUnchanged(s.got, want, cc.base, cc.num, cc.spans, a, a+k, bp[:block])
			switch ok, finite, none := copiedOf(acc, k); {
			case ok && none:
				s.chunks[c] = chunkSums{}
			case ok:
				group[n], n = copiedChunk{a: a, finite: finite, out: &s.chunks[c]}, n+1
				if n == len(group) {
					flush()
				}
			default:
				s.chunks[c] = chunkAt(s.got, a, k, func(rb []float64) []float64 { return want.Refs(a, rb) })
			}
		}
		flush()
	})
}

// laneSigns are the sign bits of four 16-bit lanes of a word.
const laneSigns = 0x8000_8000_8000_8000

// nonFiniteLanes returns the word w of four 16-bit values with bit 15 of
// each lane set where the value's magnitude is at least inf (non-finite),
// and every other bit clear. With the sign cleared a lane is below
// 0x8000, and adding 0x8000 − inf carries into its bit 15 exactly when it
// is at least inf, never out of the lane. (npu's scanF16 adds the same
// constant for fp16, but ORs the sums and masks once at the end: calling
// this from its loop measured 19% slower there, so the two stay apart.)
func nonFiniteLanes(w uint64, inf uint16) uint64 {
	return (w&^laneSigns + uint64(0x8000-inf)*0x0001_0001_0001_0001) & laneSigns
}

// zeroNonFinite sets r[j] to 0 where the 16-bit value j of b (r's
// source, little-endian) is non-finite, looking at four at a time.
func zeroNonFinite(r []float64, b []byte, inf uint16) {
	r = r[:len(b)/2]
	j := 0
	for ; j+4 <= len(r); j += 4 {
		switch nf := nonFiniteLanes(binary.LittleEndian.Uint64(b[2*j:]), inf); nf {
		case 0:
		case laneSigns: // a run of NaN, a cache's unread tail
			*(*[4]float64)(r[j:]) = [4]float64{}
		default:
			for l := 0; nf != 0; l, nf = l+1, nf>>16 {
				if nf&0x8000 != 0 {
					r[j+l] = 0
				}
			}
		}
	}
	for ; j < len(r); j++ {
		if binary.LittleEndian.Uint16(b[2*j:])&0x7FFF >= inf {
			r[j] = 0
		}
	}
}

// copiedChunk is a copied chunk of sumChunk elements waiting for its sums.
type copiedChunk struct {
	a      int        // its first element
	finite bool       // all its values finite
	out    *chunkSums // where its sums go
}

// sums sets the sums of up to four copied chunks, with buf (4·sumChunk
// float64s at least) as scratch.
func (c *copiedChunks) sums(chunks []copiedChunk, buf []float64) {
	if c.f16 != nil && len(chunks) == 4 && useF16C {
		c.sumsF16(chunks)
		return
	}
	const k = sumChunk
	var rv [4][]float64
	var inv [4]float64
	for i, ch := range chunks {
		r := buf[i*k : (i+1)*k : (i+1)*k]
		c.base.Float64sFrom(ch.a, r)
		if !ch.finite {
			zeroNonFinite(r, c.b[2*ch.a:2*(ch.a+k)], c.inf)
		}
		maxV := maxAbs(r) // chunkMax(r, r)'s: every value is finite now
		scale, xv := pow2Below(maxV)
		rv[i], inv[i] = r, 1/scale
		*ch.out = chunkSums{xv: xv, hasV: maxV > 0}
	}
	var s [4]float64
	if len(chunks) == 4 {
		s = sumSquares4(rv, inv)
	} else {
		for i := range chunks {
			s[i] = sumSquares(rv[i], inv[i])
		}
	}
	for i, ch := range chunks {
		ch.out.gr, ch.out.gg, ch.out.rr = s[i], s[i], s[i]
	}
}

// sumsF16 is sums on four chunks of an fp16 base in one pass over its
// values (sumSquares4F16AVX2), where sums widens them into buf, finds
// their largest magnitude and then adds their scaled squares: each
// chunk's lanes take the unscaled squares, and the folded sum is scaled
// by (1/s)² once. The bits are sums': (r·(1/s))² is r²·(1/s)² rounded
// once, and multiplying by a power of two commutes with the rounding of
// each product and addition while neither side leaves float64's normal
// range, which an fp16 chunk's never does (squares of nonzero values in
// [2^-48, 2^32], lane sums below 2^45, 1/s in [2^-15, 2^24], so scaled
// terms at least 2^-78).
func (c *copiedChunks) sumsF16(chunks []copiedChunk) {
	var l, mx [4][4]float64
	at := func(i int) *uint16 { return (*uint16)(unsafe.Pointer(&c.f16[chunks[i].a])) }
	sumSquares4F16AVX2(at(0), at(1), at(2), at(3), sumChunk, &l, &mx)
	for i, ch := range chunks {
		m := mx[i]
		maxV := maxNonNeg(maxNonNeg(m[0], m[1]), maxNonNeg(m[2], m[3]))
		scale, xv := pow2Below(maxV)
		inv := 1 / scale
		sq := fold(l[i]) * (inv * inv)
		*ch.out = chunkSums{xv: xv, hasV: maxV > 0, gr: sq, gg: sq, rr: sq}
	}
}

// sumSquaresF16Go adds, for each value j of the fp16 values b (a chunk,
// or its part from a multiple of 4 on), its magnitude, +0 where it is not
// finite, to the maximum in lane j mod 4 of mx and its square, rounded,
// to that lane of l: the portable form of sumSquares4F16AVX2
// (TestSumSquares4F16MatchesPortable).
func sumSquaresF16Go(b []float16.Float16, l, mx *[4]float64) {
	for j, h := range b {
		x := math.Abs(float64(h.Float32()))
		if !(x < math.Inf(1)) {
			x = 0
		}
		k := j & 3
		mx[k] = maxNonNeg(mx[k], x)
		l[k] += float64(x * x)
	}
}

// sumSquares is Σ (r_j·inv)² in chunkOf's four lanes (lane j mod 4 in
// index order from +0, then folded), each product rounded before it is
// added (as termSumsGo: no fused multiply-add).
func sumSquares(r []float64, inv float64) float64 {
	var l [4]float64
	sumSquaresGo(r, inv, &l)
	return fold(l)
}

// sumSquaresGo adds (r_j·inv)² to lane j mod 4 of l (r a whole chunk, or
// its part from a multiple of 4 on): the portable form of sumSquares4's
// vector loop (TestSumSquares4MatchesPortable).
func sumSquaresGo(r []float64, inv float64, l *[4]float64) {
	// The lanes in locals: as an array's elements they live in memory,
	// and each addition waits for the store of the one before.
	l0, l1, l2, l3 := l[0], l[1], l[2], l[3]
	j := 0
	for ; j+4 <= len(r); j += 4 {
		v := r[j : j+4 : j+4]
		v0, v1, v2, v3 := v[0]*inv, v[1]*inv, v[2]*inv, v[3]*inv
		l0 += float64(v0 * v0)
		l1 += float64(v1 * v1)
		l2 += float64(v2 * v2)
		l3 += float64(v3 * v3)
	}
	l[0], l[1], l[2], l[3] = l0, l1, l2, l3
	for ; j < len(r); j++ {
		v := r[j] * inv
		l[j&3] += float64(v * v)
	}
}

// sumSquares4 is sumSquares on four chunks of one length, inv[i] the
// reciprocal for chunk i: with AVX2 the four at once, a vector of lanes
// each, so that four chains of additions are in flight where one chunk's
// lanes, one vector, would wait out an addition's latency every four
// values.
func sumSquares4(r [4][]float64, inv [4]float64) (s [4]float64) {
	n := len(r[0])
	for i := range r {
		r[i] = r[i][:n]
	}
	var l [4][4]float64
	v := 0
	if useAVX2 {
		if v = n &^ 3; v > 0 {
			sumSquares4AVX2(&r[0][0], &r[1][0], &r[2][0], &r[3][0], v, &inv, &l)
		}
	}
	for i := range r {
		sumSquaresGo(r[i][v:], inv[i], &l[i])
		s[i] = fold(l[i])
	}
	return s
}

// maxAbs is the largest |x| of r, all of whose values are finite (+0
// for none): chunkMax(r, r)'s maxV, the four-at-a-time maximum of
// maxAbsAVX2 where the CPU has AVX2 (the maximum of non-negative
// non-NaN values is the same in any order).
func maxAbs(r []float64) float64 {
	n := 0
	m := 0.0
	if useAVX2 {
		if n = len(r) &^ 7; n > 0 {
			m = maxAbsAVX2(&r[0], n)
		}
	}
	for _, x := range r[n:] {
		m = maxNonNeg(m, math.Abs(x))
	}
	return m
}
