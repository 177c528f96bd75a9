//go:build amd64 && !purego

package verify

import "golang.org/x/sys/cpu"

// useAVX2 is whether terms runs termsAVX2.
var useAVX2 = cpu.X86.HasAVX2

// termsAVX2 is termsGo on elements [0, n) (n a multiple of 4), four at a
// time, with the relative error's guard passed in: the same IEEE
// operations (subtraction, absolute value, addition, four divisions),
// each correctly rounded as the scalar ones are, and non-finite lanes
// masked to +0.
//
//go:noescape
func termsAVX2(gv, rv, mere, es, gs, rs *float64, n int, scaleE, scaleV, guard float64) (mare float64)

// terms is termsGo, the bulk of it by termsAVX2 where the CPU has AVX2.
func terms(g, r, mere, es, gs, rs []float64, scaleE, scaleV float64) float64 {
	n := len(g) &^ 3
	if !useAVX2 || n == 0 {
		return termsGo(g, r, mere, es, gs, rs, scaleE, scaleV)
	}
	r, mere, es, gs, rs = r[:len(g)], mere[:len(g)], es[:len(g)], gs[:len(g)], rs[:len(g)]
	mare := termsAVX2(&g[0], &r[0], &mere[0], &es[0], &gs[0], &rs[0], n, scaleE, scaleV, mereGuard)
	return maxNonNeg(mare, termsGo(g[n:], r[n:], mere[n:], es[n:], gs[n:], rs[n:], scaleE, scaleV))
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
