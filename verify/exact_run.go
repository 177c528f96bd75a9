package verify

import (
	"math"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// The compact-Expected path of computePart: the elements of an all-exact
// output (bound.NewExactFrom) whose got is bit for bit their rounded exact
// value are gathered inline, four at a time where the CPU allows.

// addExactBlock is addBlock for elements b0, b0+1, … of a compact
// Expected (every element exact, bound.Expected.ExactSource) of dtype d,
// the output's own, whose got values are gv and exact values rv. An
// element in the short form (bound.ShortForm) whose got is bit for bit
// its Rounded, what almost every element of a correct output is, is
// gathered inline: from Rounded = RN(r), e ≤ b = ulp(r)/2, so it is
// within bound, correctly rounded, in ulp bucket "0" (e = 0) or "1", and
// e/b = e·2^-k with b = 2^k. Any other element goes through addBlock with
// its expected values from bound.ExactElement. The figures of the inline
// elements are kept apart and merged at the end (counts and maxima, so
// the order does not matter); the relative-error skip and the worst
// elements' floor are those of addBlock.
//
// With keep, each rv[j] is left as its reference, what
// bound.Expected.Refs returns for the element (Compute's fused sums):
// Refs keeps an exact value in the short form, a zero, and under
// overflow=inf a NaN or ±Inf, as they are, which are the elements
// gathered inline; any other takes the reference of ExactElement.
//
// With vm, it also raises vm's maxima to those of the elements' finite
// got values and references (what chunkMax finds in them afterwards, so
// that the sums need not pass over them for it): the inline elements'
// from the run, the others' here; and notes an element whose got or
// reference is not finite (an inline element's are both finite).
func (p *metricsPart) addExactBlock(d tensor.DType, f tensor.Format, num tensor.Numerics, sf *bound.ShortForm, gv, rv []float64, b0 int, keep bool, vm *valueMax) {
	rv = rv[:len(gv)]
	var acc exactRun
	var memo exactMemo
	var outE, outV float64 // the maxima of the elements outside the run
	outNonFinite := false  // one of them has a non-finite g or r
	for j := 0; j < len(gv); j++ {
		// An exact value outside the short form would end the run at
		// once: go straight to the element.
		if sf.Takes(rv[j]) {
			floor, floor2 := p.worstFloor()
			relMax := math.Min(p.maxRel, 1e-3)
			if j += acc.run(sf, gv[j:], rv[j:], floor, floor2, relMax*(1-0x1p-50), relMax); j == len(gv) {
				break
			}
		}
		// Element j needs more than run does. A zero, or under
		// overflow=inf a NaN or ±Inf, whose got is its rounding (the same
		// bits; any NaN) is gathered here: as addBlock would, a zero
		// counts as compared with e = 0 (its bound a power of two, e/b =
		// 0, and nothing else moves), a non-finite value of an accepted
		// class (its own) only in the "nonfinite" bucket. Random bit
		// patterns, a fuzzer's, make a few percent of the sums NaN or Inf.
		// Any other element goes through addBlock.
		if g, r := gv[j], rv[j]; zeroAsRounded(g, r) {
			acc.compared++
			acc.zeros++
			continue
		} else if num.Overflow != tensor.OverflowSaturate && nonFiniteAsRounded(g, r) {
			p.hist[nonFiniteBucket]++
			outNonFinite = true
			continue
		}
		ref, bnd, alt, rounded := memo.element(rv[j], d, num)
		if keep {
			rv[j] = ref
		}
		if g := gv[j]; isFinite(g) && isFinite(ref) {
			outE = maxNonNeg(outE, math.Abs(g-ref))
			outV = maxNonNeg(outV, maxNonNeg(math.Abs(g), math.Abs(ref)))
		} else {
			outNonFinite = true
		}
		// A finite got that is bit for bit the rounding and equal to the
		// reference (under saturation, NaN as 0 and ±Inf or an overflow
		// as ±max: a fuzzer's outputs hold a few percent of these) is
		// gathered here too: in addBlock it would count as compared with
		// e = 0, so in ulp bucket "0", with relative error 0 and e/b = 0
		// (b finite).
		if g := gv[j]; alt == 0 && math.Float64bits(g) == math.Float64bits(rounded) && g == ref && isFinite(g) && isFinite(bnd) {
			acc.compared++
			acc.zeros++
			continue
		}
		refs, bnds, alts, exact, rnd := [1]float64{ref}, [1]float64{bnd}, [1]bound.Special{alt}, [1]bool{true}, [1]float64{rounded}
		v := bound.View{Ref: refs[:], Bound: bnds[:], Alt: alts[:], Exact: exact[:], Rounded: rnd[:]}
		p.addBlock(d, f, true, gv[j:j+1], &v, b0+j)
	}
	zeros, maxAbs, tight, maxV := acc.merged()
	if vm != nil {
		vm.e = maxNonNeg(vm.e, maxNonNeg(maxAbs, outE))
		vm.v = maxNonNeg(vm.v, maxNonNeg(maxV, outV))
		vm.nonFinite = vm.nonFinite || outNonFinite
	}
	p.compared += acc.compared
	p.hist[0] += zeros
	p.hist[1] += acc.compared - zeros
	p.maxAbs = maxNonNeg(p.maxAbs, maxAbs)
	p.tightness = maxNonNeg(p.tightness, tight)
}

// exactRun holds what addExactBlock gathers inline: counts, and maxima
// of non-negative floats as their bits, whose order as integers is theirs
// as values (so the maxima compile to conditional moves, not branches).
type exactRun struct {
	compared, zeros     int
	maxAbs, tight, maxV uint64 // maxV: the largest |g| and |r|
	vec                 exactRunVec
	vecSet              bool // vec is set: the short form (the same for every call) and the limits in it
}

// exactRunVec is what exactRunAVX2 reads (the short form's constants
// and the run's limits, each in four lanes) and gathers (four lanes of
// each figure, merged by exactRun.merged), laid out for it.
type exactRunVec struct {
	min, span, half, mask, halfUlp [4]uint64  // 0, 32, 64, 96, 128
	relSkip                        [4]float64 // 160
	floor, floor2                  [4]uint64  // 192, 224
	shift                          uint64     // 256
	_                              [3]uint64
	maxAbs, tight                  [4]float64 // 288, 320
	zeros                          [4]int64   // 352
	relMax                         [4]float64 // 384
	maxV                           [4]float64 // 416: the largest |g| and |r|
}

// set loads the constants of sf and the limits into v.
func (v *exactRunVec) set(sf *bound.ShortForm, floor, floor2 uint64, relSkip, relMax float64) {
	min, span, shift, half, mask, halfUlp := sf.Bits()
	for k := range 4 {
		v.min[k], v.span[k], v.half[k], v.mask[k], v.halfUlp[k] = min, span, half, mask, halfUlp
		v.relSkip[k], v.floor[k], v.floor2[k], v.relMax[k] = relSkip, floor, floor2, relMax
	}
	v.shift = shift
}

// merged returns a's figures with the vector lanes folded in.
func (a *exactRun) merged() (zeros int, maxAbs, tight, maxV float64) {
	zeros = a.zeros
	maxAbs, tight, maxV = math.Float64frombits(a.maxAbs), math.Float64frombits(a.tight), math.Float64frombits(a.maxV)
	for k := range 4 {
		zeros += int(a.vec.zeros[k])
		maxAbs = maxNonNeg(maxAbs, a.vec.maxAbs[k])
		tight = maxNonNeg(tight, a.vec.tight[k])
		maxV = maxNonNeg(maxV, a.vec.maxV[k])
	}
	return zeros, maxAbs, tight, maxV
}

// run gathers elements 0, 1, … of gv (got) and rv (exact values) inline
// while they need nothing more than counts and maxima: the exact value in
// the short form and the got its Rounded; the relative error e/|r| at
// most M = relMax = min(MaxRel, 1e-3), so it changes neither MaxRel nor
// the counts (addBlock's test; e = 0, or e ≤ relSkip·|r| with relSkip =
// M·(1 − 2^-50), shows it without the division, see addBlock: e = 0 is
// tested apart because while every element so far is exact, a copy's
// are, M is 0 and so is relSkip·|r|, below the guard); and the element
// cannot enter the worst ones (e = 0, or its keys below floor, floor2,
// the bits of the last held, 0 and 0 while there is room; equal keys do
// not enter either, the index of the one held being lower). It returns
// how many it gathered: the next one, if any, is not such an element.
//
// Where the CPU has AVX2, exactRunAVX2 gathers four elements at a time as
// long as all four pass its tests, the same as runGo's (it divides too,
// four lanes at once, where the cheap test fails); a group of four that
// does not goes through runGo, and the vector loop resumes after it. A
// fuzzer's outputs repeat a short pattern, so the element of the largest
// relative error recurs every few elements: without the division each
// recurrence would leave the inline path (in a fuzzer's execs, before
// the vector loop divided, that was the commonest test an element failed
// in runGo: 1.7M of 3.4M failed tests, the short form 1.2M).
func (a *exactRun) run(sf *bound.ShortForm, gv, rv []float64, floor, floor2 uint64, relSkip, relMax float64) int {
	j := 0
	if useAVX2 && len(gv) >= 4 {
		// A block calls run again after each element it cannot
		// gather (a fuzzer's outputs hold many), mostly with the
		// same limits: load them only when they changed. (They only
		// rise, so a stale set would not be wrong, only slower: more
		// elements would leave the vector loop.)
		if !a.vecSet || a.vec.floor[0] != floor || a.vec.floor2[0] != floor2 || a.vec.relSkip[0] != relSkip || a.vec.relMax[0] != relMax {
			a.vec.set(sf, floor, floor2, relSkip, relMax)
			a.vecSet = true
		}
		for len(gv)-j >= 4 {
			k := exactRunAVX2(&a.vec, &gv[j], &rv[j], (len(gv)-j)&^3)
			a.compared += k
			if j += k; len(gv)-j < 4 {
				break
			}
			k = a.runGo(sf, gv[j:j+4], rv[j:j+4], floor, floor2, relSkip, relMax)
			if j += k; k < 4 {
				return j
			}
		}
	}
	return j + a.runGo(sf, gv[j:], rv[j:], floor, floor2, relSkip, relMax)
}

// runGo is run one element at a time, the portable form. It calls
// nothing, so that its loop keeps its figures in registers.
func (a *exactRun) runGo(sfp *bound.ShortForm, gv, rv []float64, floor, floor2 uint64, relSkip, relMax float64) int {
	sf := *sfp
	rv = rv[:len(gv)]
	compared, zeros := a.compared, a.zeros
	maxAbs, tight, maxV := a.maxAbs, a.tight, a.maxV
	j := 0
	for ; j < len(gv); j++ {
		g, r := gv[j], rv[j]
		rb, gb := math.Float64bits(r), math.Float64bits(g)
		if !sf.Takes(r) || gb != math.Float64bits(sf.Rounded(r)) {
			break
		}
		e := math.Abs(g - r)
		eb := math.Float64bits(e)
		ar := math.Float64frombits(rb &^ (1 << 63))
		if q := relSkip * ar; eb != 0 && !(e <= q && q >= 0x1p-1020) && !(e/ar <= relMax) { // |r| ≥ MinNormal > 0
			break
		}
		// e/b = e·2^-k for b = 2^k.
		t := math.Float64bits(e * math.Float64frombits((2046-math.Float64bits(sf.Bound(r))>>52)<<52))
		if eb != 0 && (t > floor || t == floor && eb > floor2) {
			break
		}
		compared++
		zeros += b2i(eb == 0)
		maxAbs = max(maxAbs, eb)
		tight = max(tight, t)
		maxV = max(maxV, rb&^(1<<63), gb&^(1<<63))
	}
	a.compared, a.zeros = compared, zeros
	a.maxAbs, a.tight, a.maxV = maxAbs, tight, maxV
	return j
}

// addExactIntBlock is addBlock for elements b0, b0+1, … of a compact
// Expected of integer dtype d, the output's own (every element exact,
// bound.Expected.ExactSource), whose got values are gv and exact values
// rv. An element's Ref and Rounded are both num's rounding of r into d
// and its Bound 0 (bound.Output of an exact integer value). A got g is a
// value of d, an integer in d's range [lo, hi], so where g = clamp(r) =
// max(lo, min(hi, r)) (false for a NaN r), either r = g, an integer of
// the range whose rounding is r itself (+0 for a zero, as g is), or r ≥
// hi = g, whose rounding (either rule) saturates to hi, or r ≤ lo = g,
// likewise: the rounding is g. Such an element, what every element of a
// correct output is, is gathered inline. Its e
// = 0 leaves the error figures, the relative error and the worst
// elements alone (ratio(0, 0) = 0); it counts as compared, in ulp bucket
// "0". Any other element goes through
// addBlock with its expected values from bound.ExactElement.
//
// With keep, each rv[j] is left as its reference, what
// bound.Expected.Refs returns for the element (Compute's fused sums): the
// reference of ExactElement, the profile's rounding and saturation (an
// integer of the range as itself, a zero as +0). An element gathered
// inline has it in g: g = clamp(r) is an integer, so r is one of the
// range, equal to g (which a tensor never holds as −0), or beyond the
// range, where the rounding saturates to g.
func (p *metricsPart) addExactIntBlock(d tensor.DType, f tensor.Format, num tensor.Numerics, gv, rv []float64, b0 int, keep bool) {
	rv = rv[:len(gv)]
	lo, hi := d.IntRange()
	compared := 0
	var memo exactMemo
	for j := 0; j < len(gv); j++ {
		k := intRun(gv[j:], rv[j:], lo, hi, keep)
		compared += k
		if j += k; j == len(gv) {
			break
		}
		ref, bnd, alt, rounded := memo.element(rv[j], d, num)
		if keep {
			rv[j] = ref
		}
		refs, bnds, alts, exact, rnd := [1]float64{ref}, [1]float64{bnd}, [1]bound.Special{alt}, [1]bool{true}, [1]float64{rounded}
		v := bound.View{Ref: refs[:], Bound: bnds[:], Alt: alts[:], Exact: exact[:], Rounded: rnd[:]}
		p.addBlock(d, f, false, gv[j:j+1], &v, b0+j)
	}
	p.compared += compared
	p.hist[0] += compared
}

// intRun gathers elements 0, 1, … of gv (got) and rv (exact values)
// while they are addExactIntBlock's inline elements (g = clamp(r); g = r
// is the common case, an integer of the range, whose clamp is itself),
// with keep leaving g in rv, and returns how many. It calls nothing, so that its loop keeps its figures in
// registers (with addBlock's call in the loop they lived on the stack).
func intRun(gv, rv []float64, lo, hi float64, keep bool) (n int) {
	rv = rv[:len(gv)]
	for ; n < len(gv); n++ {
		g, r := gv[n], rv[n]
		if g != r && g != max(lo, min(hi, r)) {
			break
		}
		if keep {
			rv[n] = g
		}
	}
	return n
}

// zeroAsRounded reports whether exact value r is a zero and got g has its
// bits: a zero's rounding is itself, so g is exactly the rounding, at
// error 0.
func zeroAsRounded(g, r float64) bool {
	return math.Float64bits(g) == math.Float64bits(r) && r == 0
}

// nonFiniteAsRounded reports whether exact value r is a NaN and g is one
// too, or r is ±Inf and g is the same infinity: under a profile that does
// not saturate, such an r rounds to itself, and g is of its class (any
// NaN).
func nonFiniteAsRounded(g, r float64) bool {
	return g != g && r != r || math.IsInf(r, 0) && g == r
}

// exactMemo remembers bound.ExactElement's outcomes by the bits of the
// exact value, for the elements of one block call (one dtype, one
// numerics profile), where the outcome is a function of those bits alone.
// The elements that leave the inline run (NaN, ±Inf, overflow, subnormal
// exact values, and rejected ones) are few in a real output but in a
// fuzzer's many, and recur: its inputs cycle through a few dozen bytes,
// and coverage guidance keeps the inputs rich in special values.
// Direct-mapped: a slot holds the last value hashed to it.
type exactMemo struct {
	held uint64 // bit i: slot i holds an outcome
	keys [1 << exactMemoBits]uint64
	outs [1 << exactMemoBits]exactOutcome
}

// exactMemoBits is log2 of the memo's slots: at most 6, one bit of held
// each.
const exactMemoBits = 6

// exactOutcome is one exact value's bound.ExactElement, and whether the
// bound policy accepts its rounding there (Accepted).
type exactOutcome struct {
	ref, bnd, rounded float64
	alt               bound.Special
	accepted          bool
}

// element is bound.ExactElement(r, d, num), from the memo when r's bits
// are in it.
func (m *exactMemo) element(r float64, d tensor.DType, num tensor.Numerics) (ref, bnd float64, alt bound.Special, rounded float64) {
	b, i := memoSlot(r)
	if o := &m.outs[i]; m.held&(1<<i) != 0 && m.keys[i] == b {
		return o.ref, o.bnd, o.alt, o.rounded
	}
	ref, bnd, alt, rounded = bound.ExactElement(r, d, num)
	m.keys[i], m.outs[i] = b, exactOutcome{ref: ref, bnd: bnd, rounded: rounded, alt: alt,
		accepted: acceptsElement(rounded, ref, bnd, alt, true, rounded)}
	m.held |= 1 << i
	return ref, bnd, alt, rounded
}

// memoSlot returns r's bits and the memo slot they hash to (Fibonacci
// hashing).
func memoSlot(r float64) (b, i uint64) {
	b = math.Float64bits(r)
	return b, (b * 0x9E3779B97F4A7C15) >> (64 - exactMemoBits)
}

// accepts reports whether the bound policy accepts got g at an exact
// element of exact value r: acceptsElement of the element's outcome. An
// exact element accepts only a g Identical to its rounding, and such a g
// is of the rounding's class at the rounding's error, so it is accepted
// exactly when the rounding is, which the memo holds.
func (m *exactMemo) accepts(g, r float64, d tensor.DType, num tensor.Numerics) bool {
	b, i := memoSlot(r)
	if m.held&(1<<i) == 0 || m.keys[i] != b {
		m.element(r, d, num) // fills slot i
	}
	o := &m.outs[i]
	return o.accepted && (math.Float64bits(g) == math.Float64bits(o.rounded) || g != g && o.rounded != o.rounded)
}
