package npu

import (
	"math"

	"github.com/npuverify/npuverify/tensor"
)

// Exact rounding helpers of the cube: the accumulator steps of the
// accumulate models round the exact value of acc + Σ products once, which
// plain float64 arithmetic cannot always represent. They work on the
// exact value hi + lo (lo the error of the float64 sum hi, or of a
// renormalised expansion): RN_f(hi + lo) = RN_f(hi) unless hi is exactly
// halfway between two neighbours of f and lo ≠ 0, in which case lo's sign
// picks the neighbour. (Midpoints of a format narrower than float64 are
// float64 values, so a value within one float64 ulp of hi cannot cross
// one unless it sits on it.)

// twoSum returns s = RN64(a+b) and the exact error e = a + b − s.
// Its steps must each round on their own: callers pass products written
// float64(x*y), so that the compiler cannot fuse one into the inlined sum
// (the Go spec allows x*y + z to round once unless the product is
// explicitly converted).
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

const (
	f32Thr = 0x1.ffffffp127 // fp32 overflow threshold MaxFloat32 + ulp/2 (a midpoint: ties round to Inf)
)

var (
	fp16Format, _ = tensor.Float16.FloatFormat()
	fp16Thr       = fp16Format.MaxFinite() + float64(fp16Format.Ulp(fp16Format.MaxFinite())/2) // /2 compiles to ·0.5: converted so it is not fused
)

// roundHiLo32 returns RN32(hi + lo) for |lo| below one float64 ulp of hi
// (as produced by twoSum or expansion renormalisation).
func roundHiLo32(hi, lo float64) float32 {
	r := float32(hi)
	if lo == 0 || float64(r) == hi {
		return r
	}
	if math.IsInf(float64(r), 0) {
		if math.Abs(hi) == f32Thr && (lo < 0) != (hi < 0) {
			return float32(math.Copysign(math.MaxFloat32, hi))
		}
		return r
	}
	if math.IsNaN(hi) || math.IsInf(hi, 0) {
		return r
	}
	// The neighbour of r on hi's side.
	toward := float32(math.Inf(1))
	if hi < float64(r) {
		toward = float32(math.Inf(-1))
	}
	other := math.Nextafter32(r, toward)
	if float64(other)-hi != hi-float64(r) { // exact: all three are within a few fp32 ulps
		return r // hi is not a midpoint
	}
	if (lo > 0) == (float64(other) > hi) {
		return other
	}
	return r
}

// roundHiLo16 returns RN16(hi + lo) as a float64 (fp16 value), under the
// same conditions as roundHiLo32.
func roundHiLo16(hi, lo float64) float64 {
	r := fp16Format.RoundNearestEven(hi)
	if lo == 0 || r == hi || math.IsNaN(hi) || math.IsInf(hi, 0) {
		return r
	}
	if math.IsInf(r, 0) {
		if math.Abs(hi) == fp16Thr && (lo < 0) != (hi < 0) {
			return math.Copysign(fp16Format.MaxFinite(), hi)
		}
		return r
	}
	d := hi - r               // exact
	other, e := twoSum(hi, d) // 2hi − r: the other neighbour iff hi is a midpoint
	if e != 0 || other == r || fp16Format.RoundNearestEven(other) != other {
		return r
	}
	if (lo > 0) == (other > hi) {
		return other
	}
	return r
}

// roundAcc rounds the exact hi + lo to the accumulator format acc (Float32
// or Float16), returned as float32 (fp16 values are exact in fp32). A NaN
// (an invalid operation, or a NaN operand or accumulator) is the default
// NaN (nan.go), whatever payload the host's float64 arithmetic left: the
// fp32 default NaN is also fp16's, widened.
func roundAcc(acc tensor.DType, hi, lo float64) float32 {
	if hi != hi {
		return defaultNaN32
	}
	if acc == tensor.Float16 {
		return float32(roundHiLo16(hi, lo))
	}
	return roundHiLo32(hi, lo)
}

// fmaRound returns RN_acc(c + a·b) with a single rounding (a·b exact in
// float64 for fp32, fp16 and bf16 operands); a NaN result is the default
// NaN (roundAcc).
func fmaRound(acc tensor.DType, c, a, b float32) float32 {
	// Converted so that no fused multiply-add takes the place of twoSum's
	// sum (the product is exact, but the error-free transformation is
	// only proved for separately rounded steps).
	p := float64(float64(a) * float64(b))
	s, e := twoSum(float64(c), p)
	if math.IsNaN(e) || math.IsInf(s, 0) {
		// Non-finite operands or sum: IEEE gives the same in any rounding.
		return roundAcc(acc, float64(c)+p, 0)
	}
	return roundAcc(acc, s, e)
}

// sumRound returns RN_acc(Σ xs) with a single rounding of the exact sum
// (a NaN sum is the default NaN: roundAcc). It first tries the float64 sum with
// error-free transformations; if any step was inexact it builds the exact
// sum as a non-overlapping expansion (Shewchuk's grow-expansion, as in
// Python's math.fsum) and renormalises it from the top. scratch is reused
// storage for the expansion.
func sumRound(acc tensor.DType, xs []float64, scratch *[]float64) float32 {
	if len(xs) == 0 {
		return 0
	}
	// Start from xs[0], not +0, so that an all −0 sum stays −0 (IEEE).
	s, err := xs[0], 0.0
	exact := true
	for _, x := range xs[1:] {
		var e float64
		s, e = twoSum(s, x)
		if e != 0 {
			exact = false
		}
		err += e
	}
	if math.IsNaN(s) || math.IsInf(s, 0) || math.IsNaN(err) {
		t := xs[0]
		for _, x := range xs[1:] {
			t += x
		}
		return roundAcc(acc, t, 0)
	}
	if exact {
		return roundAcc(acc, s, 0)
	}
	parts := (*scratch)[:0]
	for _, x := range xs {
		i := 0
		for _, y := range parts {
			if math.Abs(x) < math.Abs(y) {
				x, y = y, x
			}
			hi := x + y
			lo := y - (hi - x)
			if lo != 0 {
				parts[i] = lo
				i++
			}
			x = hi
		}
		parts = append(parts[:i], x)
	}
	*scratch = parts
	n := len(parts)
	if n == 0 {
		return 0
	}
	hi, lo := parts[n-1], 0.0
	for j := n - 2; j >= 0; j-- {
		x, y := hi, parts[j]
		hi = x + y
		lo = y - (hi - x)
		if lo != 0 {
			break
		}
	}
	return roundAcc(acc, hi, lo)
}

// fmaRound16 is fmaRound(Float16, c, a, b), fast in the common case: when
// the float64 sum of c and the (exact) product is exact, the model's
// value is that sum rounded once to fp16 (rn16). Otherwise (an inexact
// sum, Inf or NaN) it is fmaRound itself.
func fmaRound16(c, a, b float32) float32 {
	p := float64(float64(a) * float64(b)) // converted: see fmaRound
	s, e := twoSum(float64(c), p)
	if e != 0 {
		return fmaRound(tensor.Float16, c, a, b)
	}
	return float32(rn16(s))
}

// rn16 rounds a finite float64 to fp16, ties to even, overflowing to ±Inf:
// fp16Format.RoundNearestEven without the generic format's arithmetic.
// Normal range: round the float64 bits to 11 significant bits in place (a
// carry steps the exponent). Below 2^-14 the quantum is 2^-24, which is
// float64's own quantum in [2^28, 2^29): adding and subtracting 1.5·2^28
// rounds there, ties to even; the sign is put back for a zero result.
func rn16(x float64) float64 {
	b := math.Float64bits(x)
	if int(b>>52&0x7FF)-1023 >= -14 {
		const shift = 52 - 10
		b += 1<<(shift-1) - 1 + b>>shift&1
		r := math.Float64frombits(b &^ (1<<shift - 1))
		if math.Abs(r) > 65504 {
			return math.Copysign(math.Inf(1), x)
		}
		return r
	}
	const magic = 0x1.8p28
	return math.Copysign((x+magic)-magic, x)
}
