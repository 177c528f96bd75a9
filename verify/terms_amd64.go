//go:build amd64 && !purego

package verify

import "golang.org/x/sys/cpu"

// useAVX2 is whether the vector forms (termSumsAVX2, chunkMaxAVX2,
// exactRunAVX2, …) run.
var useAVX2 = cpu.X86.HasAVX2

// termSumsAVX2 is termSumsGo on elements [0, n) (n a multiple of 4), four
// at a time, one to each lane of l, with the relative error's guard
// passed in and the scales as their reciprocals invE = 1/scaleE and
// invV = 1/scaleV: the same IEEE operations (subtraction, absolute value,
// addition, a division, the products and the additions to the lanes),
// each correctly rounded as the scalar ones are, non-finite lanes' terms
// masked to +0, and x·inv for x/scale. The product and the quotient are
// the same real number, rounded once, when the reciprocal is exact, as it
// is for a scale that is a normal power of two (pow2Recip): a division
// costs a vector unit several times a multiplication.
//
//go:noescape
func termSumsAVX2(gv, rv *float64, n int, invE, invV, guard float64, l *laneSums) (mare float64)

// termSumsFiniteAVX2 is termSumsAVX2 for values that are all finite: the
// masks of the non-finite lanes, all zero, are left out (ten of the
// loop's instructions in twenty-seven).
//
//go:noescape
func termSumsFiniteAVX2(gv, rv *float64, n int, invE, invV, guard float64, l *laneSums) (mare float64)

// termSums is termSumsGo, the bulk of it by termSumsAVX2 where the CPU has
// AVX2 and both scales have normal reciprocals (pow2Recip; Compute's
// always do, but for a chunk whose largest error or value is below
// 2^-1022 or at least 2^1023), by termSumsFiniteAVX2 when the caller
// knows every g and r to be finite.
func termSums(g, r []float64, scaleE, scaleV float64, finite bool, l *laneSums) float64 {
	n := len(g) &^ 3
	invE, okE := pow2Recip(scaleE)
	invV, okV := pow2Recip(scaleV)
	if !useAVX2 || n == 0 || !okE || !okV {
		return termSumsGo(g, r, scaleE, scaleV, l)
	}
	r = r[:len(g)]
	f := termSumsAVX2
	if finite {
		f = termSumsFiniteAVX2
	}
	mare := f(&g[0], &r[0], n, invE, invV, mereGuard, l)
	return maxNonNeg(mare, termSumsGo(g[n:], r[n:], scaleE, scaleV, l))
}

// exactRunAVX2 is exactRun.runGo on elements [0, n) of gv and rv (n a
// multiple of 4), four at a time, stopping at the first group of four
// that holds an element runGo would stop at: the same integer and IEEE
// operations on each lane (the bit tests of the short form, |g − r|,
// relSkip·|r| and e·2^-k, each correctly rounded as the scalar ones are),
// the counts and maxima gathered per lane into v. It returns how many
// elements it gathered.
//
//go:noescape
func exactRunAVX2(v *exactRunVec, gv, rv *float64, n int) int

// acceptRunAVX2 is acceptRunGo on elements [0, n) of gv and rv (n a
// multiple of 4), four at a time, stopping at the first group of four
// that holds an element acceptRunGo would stop at (the same bit tests on
// each lane, inf all ones for acceptRunGo's inf true, 0 for false), with
// the short form's constants from v (exactRunVec.set; the limits are not
// read). It returns how many elements passed.
//
//go:noescape
func acceptRunAVX2(v *exactRunVec, gv, rv *float64, n int, inf uint64) int

// chunkMaxAVX2 is chunkMaxGo on elements [0, n) (n a multiple of 4),
// four at a time: the maxima of non-negative values masked to +0 in the
// lanes where g or r is non-finite, which VMAXPD takes as the scalar
// comparison does (no NaN reaches it: g − r of finite g and r is never
// NaN).
//
//go:noescape
func chunkMaxAVX2(gv, rv *float64, n int) (maxE, maxV float64)

// chunkMax is chunkMaxGo, the bulk of it by chunkMaxAVX2 where the CPU
// has AVX2.
func chunkMax(g, r []float64) (maxE, maxV float64) {
	n := len(g) &^ 3
	if !useAVX2 || n == 0 {
		return chunkMaxGo(g, r)
	}
	r = r[:len(g)]
	maxE, maxV = chunkMaxAVX2(&g[0], &r[0], n)
	e, v := chunkMaxGo(g[n:], r[n:])
	return maxNonNeg(maxE, e), maxNonNeg(maxV, v)
}

// sameRun16AVX2 is sameRun16's word loop on elements [0, n) of got and base
// (16-bit values, n a multiple of 16), sixteen at a time: it stops at the
// first group of sixteen that holds a value whose bits differ from the
// base's, or a non-finite base value (magnitude at least inf) unless
// nonFinite, and returns how many elements it gathered before it and how
// many of those are non-finite.
//
//go:noescape
func sameRun16AVX2(got, base *byte, n int, inf uint16, nonFinite bool) (j, nonFin int)

// sumSquares4AVX2 adds (r_j·inv[i])² for j in [0, n) (n a multiple of 4)
// of the four chunks at r0…r3 to lane j mod 4 of l[i]: sumSquaresGo on
// four chunks at once, each product rounded before it is added.
//
//go:noescape
func sumSquares4AVX2(r0, r1, r2, r3 *float64, n int, inv *[4]float64, l *[4][4]float64)

// sumSquares4F16AVX2 is sumSquaresF16Go on the four fp16 chunks at
// b0…b3, elements [0, n) (n a multiple of 4), lanes l[i] and mx[i]: each
// value widened exactly, its magnitude zeroed where not finite, the
// largest kept and its square, rounded, added to lane j mod 4.
//
//go:noescape
func sumSquares4F16AVX2(b0, b1, b2, b3 *uint16, n int, l, mx *[4][4]float64)

// maxAbsAVX2 is the largest |x| of the n finite values at r (n a multiple
// of 8), two vectors of maxima at a time.
//
//go:noescape
func maxAbsAVX2(r *float64, n int) float64

// leanRunAVX2 is leanRunGo on elements [0, n) of gv and rv (n a multiple
// of 4), four at a time, one to each lane of v, stopping at the first
// group of four that holds an element leanRunGo would stop at: the same
// integer and IEEE operations on each lane (the short form's bit tests,
// |g − r|, the division, the products and the additions to the lanes,
// each correctly rounded as the scalar ones are). It returns how many
// elements it gathered.
//
//go:noescape
func leanRunAVX2(v *leanVec, gv, rv *float64, n int) int

// useF16C is whether the lean path widens fp16 values itself, by the
// CPU's F16C instructions (exact, as tensor's conversions are:
// TestLeanRunMatchesPortable).
var useF16C = useAVX2 && cpu.X86.HasF16C

// leanRunH16AVX2 is leanRunAVX2 with the got values read as the n fp16
// values at got, each widened exactly (VCVTPH2PS, VCVTPS2PD) in the loop
// rather than by a pass of its own into a buffer it would read back.
//
//go:noescape
func leanRunH16AVX2(v *leanVec, got *uint16, rv *float64, n int) int

// leanRunH16SumAVX2 is leanRunH16AVX2 with the exact values the sums
// x[j] + y[j] of the fp16 values at x and y, each widened exactly and
// added in one VADDPD, x's first (bound.NewExactSumFrom's values):
// vector_add's whole judgement of a chunk in one pass over its three
// fp16 arrays.
//
// Unless v is set for flush, it tests eight elements at a time by fp16
// bits in place of the short form's tests on float64 bits, a third of
// the loop's instructions: got must be, bit for bit, x + y rounded to
// fp32 (VADDPS) and then to fp16 (VCVTPS2PH, ties to even), and finite.
// That is the short form's test: the double rounding is the correct
// rounding of x + y (p = 24 ≥ 2·11 + 2, Figueroa's condition for an
// addition; and every sum below MinNormal, a multiple of 2^-24 under
// 2^-14, is exact in both), and x + y rounds to a finite fp16 value
// exactly when it is below the short form's threshold. A group that
// fails it takes the short form's tests four at a time, so the loop
// stops where leanRunH16AVX2 would (TestLeanH16SumTestIsExact, on all
// 2^32 pairs with NPUVERIFY_EXHAUSTIVE=1).
//
// Such a group's e·e, g·r and g·g are exact in float64, so each is a
// fused multiply-add that rounds as the product and then the sum do: g
// and e = g − r (the rounding error of an fp16 addition, itself an fp16
// value) have at most 11 significant bits; r = x + y is a multiple of
// 2^-24 below 2^17, at most 41 bits, and g·r at most 52.
//
//go:noescape
func leanRunH16SumAVX2(v *leanVec, got, x, y *uint16, n int) int
