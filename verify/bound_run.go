package verify

import (
	"math"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// The ordinary-Expected path of computePart: the elements of a window of
// Ref, Bound and Alt arrays (no exact element) that a correct output is
// made of, a gemm's for one, are gathered inline, four at a time where
// the CPU allows; addBlock takes the others.

// boundRunFallback is the most elements addBoundBlock hands addBlock at
// a time.
const boundRunFallback = 32

// addWindow is addBlock, through addBoundBlock where it applies (a float
// output other than fp64, a window without exact elements).
func (p *metricsPart) addWindow(d tensor.DType, f tensor.Format, isFloat bool, gv []float64, v *bound.View, b0 int) {
	if v.Exact == nil && isFloat && d != tensor.Float64 {
		p.addBoundBlock(d, f, gv, v, b0)
		return
	}
	p.addBlock(d, f, isFloat, gv, v, b0)
}

// addBoundBlock is addBlock for a window v without exact elements
// (v.Exact nil) of a float output of dtype d other than fp64 (format f),
// elements b0, b0+1, … with got values gv. An element that
// boundRun.run takes, what almost every element of a correct output is,
// is gathered inline; at the first one it does not, addBlock takes a few
// elements, one at first and more while the run keeps stopping soon
// (an output failing throughout goes through addBlock in windows of
// boundRunFallback), and the run resumes. The run's figures are counts,
// maxima and histogram counts, merged at the end, so the order does not
// matter; its tests read the part's MaxRel and worst elements, which
// only addBlock changes, afresh after each addBlock.
func (p *metricsPart) addBoundBlock(d tensor.DType, f tensor.Format, gv []float64, v *bound.View, b0 int) {
	n := len(gv)
	refs, bnds, alts := v.Ref[:n], v.Bound[:n], v.Alt[:n]
	var acc boundRun
	acc.init(f)
	step := 1
	for j := 0; j < n; {
		floor, floor2 := p.worstFloor()
		relMax := math.Min(p.maxRel, 1e-3)
		k := acc.run(gv[j:], refs[j:], bnds[j:], alts[j:], floor, floor2, relMax*(1-0x1p-50), relMax)
		if j += k; j == n {
			break
		}
		if k >= 4*boundRunFallback { // a long run: the exceptions are rare
			step = 1
		}
		end := min(j+step, n)
		w := bound.View{Ref: refs[j:end], Bound: bnds[j:end], Alt: alts[j:end]}
		p.addBlock(d, f, true, gv[j:end], &w, b0+j)
		j = end
		step = min(2*step, boundRunFallback)
	}
	compared, hist, maxAbs, tight := acc.merged()
	p.compared += compared
	for k, c := range hist {
		p.hist[k] += c
	}
	p.maxAbs = maxNonNeg(p.maxAbs, maxAbs)
	p.tightness = maxNonNeg(p.tightness, tight)
}

// boundRun holds what addBoundBlock gathers inline: counts, the ulp
// histogram's first seven buckets, and maxima of non-negative floats as
// their bits, whose order as integers is theirs as values (so the maxima
// compile to conditional moves, not branches).
type boundRun struct {
	emin, emax, p int
	compared      int
	hist          [7]int
	maxAbs, tight uint64
	vec           boundRunVec
}

// boundRunVec is what boundRunAVX2 reads (the run's limits and the
// format's ulp constants, each in four lanes) and gathers (four lanes of
// each figure, merged by boundRun.merged), laid out for it. The counts
// are in 32-bit halves of the lanes: zero errors and errors above u, 2u,
// 4u, 8u and 16u (u the ulp at the reference), in pairs.
type boundRunVec struct {
	relSkip            [4]float64   // 0
	floor, floor2      [4]uint64    // 32, 64
	umin, umax, uscale [4]float64   // 96, 128, 160: 2^Emin, 2^Emax, 2^(1−P)
	maxAbs, tight      [4]float64   // 192, 224
	counts             [3][4]uint64 // 256, 288, 320: (zero, >u), (>2u, >4u), (>8u, >16u)
	compared           int          // 352
}

// init sets a up for a run over an output of format f.
func (a *boundRun) init(f tensor.Format) {
	a.emin, a.emax, a.p = f.Emin, f.Emax, f.P
	for k := range 4 {
		a.vec.umin[k], a.vec.umax[k], a.vec.uscale[k] = math.Ldexp(1, f.Emin), math.Ldexp(1, f.Emax), math.Ldexp(1, 1-f.P)
	}
}

// merged returns a's figures with the vector lanes folded in: the
// vector counts are of errors above thresholds that nest (0 < u < 2u <
// … < 16u), so a bucket's count is the difference of two of them.
func (a *boundRun) merged() (compared int, hist [7]int, maxAbs, tight float64) {
	compared, hist = a.compared+a.vec.compared, a.hist
	maxAbs, tight = math.Float64frombits(a.maxAbs), math.Float64frombits(a.tight)
	var above [6]int // above[0]: zeros; above[k]: errors above 2^(k−1)·u
	for k := range 4 {
		for c := range 3 {
			above[2*c] += int(a.vec.counts[c][k] & (1<<32 - 1))
			above[2*c+1] += int(a.vec.counts[c][k] >> 32)
		}
		maxAbs = maxNonNeg(maxAbs, a.vec.maxAbs[k])
		tight = maxNonNeg(tight, a.vec.tight[k])
	}
	hist[0] += above[0]
	hist[1] += a.vec.compared - above[0] - above[1]
	for k := 2; k < 6; k++ {
		hist[k] += above[k-1] - above[k]
	}
	hist[6] += above[5]
	return compared, hist, maxAbs, tight
}

// run gathers elements 0, 1, … of gv (got), rv, bv and av (the window's
// Ref, Bound and Alt) inline while they need nothing more than counts,
// maxima and the histogram: no alternatives; got and reference finite;
// within bound (e = |g − r| ≤ b); a relative error that changes neither
// MaxRel nor the counts (at most M = relMax = min(MaxRel, 1e-3): e ≤
// relSkip·|r| with relSkip = M·(1 − 2^-50), addBlock's test without the
// division, or the division itself, or e = 0); and the element cannot
// enter the worst ones (e = 0, or its keys t = e/b and e below floor,
// floor2, the bits of the last held, 0 and 0 while there is room; equal
// keys do not enter either, the index of the one held being lower). t is
// addBlock's: e/b, 0 for e = 0 (ratio's 0/0 = 0; e·2^-k where b = 2^k is
// the same real number rounded once the same way, e/b). It returns how
// many it gathered: the next one, if any, is not such an element.
//
// Where the CPU has AVX2, boundRunAVX2 gathers four elements at a time as
// long as all four pass its tests, which skip the relative error's
// division; a group of four that does not goes through runGo, and the
// vector loop resumes after it.
func (a *boundRun) run(gv, rv, bv []float64, av []bound.Special, floor, floor2 uint64, relSkip, relMax float64) int {
	j := 0
	if useAVX2 && len(gv) >= 4 {
		for k := range 4 {
			a.vec.relSkip[k], a.vec.floor[k], a.vec.floor2[k] = relSkip, floor, floor2
		}
		for len(gv)-j >= 4 {
			k := boundRunAVX2(&a.vec, &gv[j], &rv[j], &bv[j], &av[j], (len(gv)-j)&^3)
			a.vec.compared += k
			if j += k; len(gv)-j < 4 {
				break
			}
			k = a.runGo(gv[j:j+4], rv[j:j+4], bv[j:j+4], av[j:j+4], floor, floor2, relSkip, relMax)
			if j += k; k < 4 {
				return j
			}
		}
	}
	return j + a.runGo(gv[j:], rv[j:], bv[j:], av[j:], floor, floor2, relSkip, relMax)
}

// runGo is run one element at a time, the portable form. It calls
// nothing, so that its loop keeps its figures in registers.
func (a *boundRun) runGo(gv, rv, bv []float64, av []bound.Special, floor, floor2 uint64, relSkip, relMax float64) int {
	n := len(gv)
	rv, bv, av = rv[:n], bv[:n], av[:n]
	emin, emax, pp := a.emin, a.emax, a.p
	compared, hist := a.compared, a.hist
	maxAbs, tight := a.maxAbs, a.tight
	j := 0
	for ; j < n; j++ {
		g, r, b := gv[j], rv[j], bv[j]
		if av[j] != 0 || !isFinite(g) || !isFinite(r) {
			break
		}
		e := math.Abs(g - r)
		if !(e <= b) {
			break
		}
		ar := math.Abs(r)
		if q := relSkip * ar; !(e <= q && q >= 0x1p-1020) && e != 0 {
			rel := e
			if r != 0 {
				rel = e / ar
			}
			if !(rel <= relMax) {
				break
			}
		}
		var t float64
		if e != 0 {
			t = e / b
		}
		eb, tb := math.Float64bits(e), math.Float64bits(t)
		if eb != 0 && (tb > floor || tb == floor && eb > floor2) {
			break
		}
		compared++
		// addBlock's ulp and bucket.
		ue := min(max(int(math.Float64bits(r)>>52&0x7FF)-1023, emin), emax) - pp + 1
		u := math.Float64frombits(uint64(ue+1023) << 52)
		hist[b2i(e > 0)+b2i(e > u)+b2i(e > 2*u)+b2i(e > 4*u)+b2i(e > 8*u)+b2i(e > 16*u)]++
		maxAbs = max(maxAbs, eb)
		tight = max(tight, tb)
	}
	a.compared, a.hist = compared, hist
	a.maxAbs, a.tight = maxAbs, tight
	return j
}
