package ops

import (
	"math"
	"math/rand/v2"

	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// kv_update's ties distribution (DistTies): rows of x built so that the
// int8 quantiser meets rounding ties the contract decides, and weights
// that leave those rows exact.
//
// w_k[h] and w_v[h] are signed permutation matrices (one ±1 per row and
// column), so every element of new_k and new_v is ± one element of x: one
// exact product, the rest zeros, the same in every summation order and
// exact in fp16. A row of new_k is then the row of x permuted and signed,
// with the same max|v| and the same ties, fixed by the contract bit for
// bit.
//
// Rows alternate between two kinds:
//   - exact ties: max|v| = 127·2^-e, so scale = 2^-e exactly, and about
//     half of the other elements are (k+½)·2^-e: the quotient, exact and
//     RN32 alike, is k+½, where half-even and half-away rounding give
//     different codes for every even k ≥ 0 (and odd k < 0);
//   - double-rounding ties: a max|v| and one element found by a seeded
//     search, where RN32(v/scale) is k+½ but v/scale is not, and the two
//     codes differ under half-even rounding.
//
// The other elements are uniform in (−max|v|, max|v|).

// kvTieRows fills x [B,H,D] with tie rows (see above) and returns the
// signed-permutation weights for w_k and w_v.
func kvTieRows(rng *rand.Rand, x *tensor.Tensor, h, d int) (wk, wv *tensor.Tensor) {
	rows := x.Len() / max(d, 1)
	row := make([]float64, d)
	for r := range rows {
		if r%2 == 0 {
			kvExactTieRow(rng, row)
		} else {
			kvDoubleTieRow(rng, row)
		}
		x.SetFloat64s(r*d, row, generationNumerics)
	}
	return kvSignedPermutations(rng, h, d), kvSignedPermutations(rng, h, d)
}

// kvExactTieRow: max|v| = 127·2^-e at one element, ties (k+½)·2^-e at
// about half of the others.
func kvExactTieRow(rng *rand.Rand, row []float64) {
	if len(row) == 0 {
		return
	}
	unit := math.Ldexp(1, -(5 + rng.IntN(4))) // scale 2^-5 … 2^-8
	amax := 127 * unit
	for i := range row {
		if rng.IntN(2) == 0 {
			row[i] = (float64(rng.IntN(254)-127) + 0.5) * unit // k+½, k in −127…126
		} else {
			row[i] = kvRoundF16((2*rngFloat64(rng) - 1) * amax)
		}
	}
	row[rng.IntN(len(row))] = math.Copysign(amax, float64(rng.IntN(2))-0.5)
}

// kvDoubleTieRow: one element at max|v| and one at a double-rounding tie
// for it (found by kvDoubleTie), the rest uniform. With fewer than two
// elements it is an exact-tie row.
func kvDoubleTieRow(rng *rand.Rand, row []float64) {
	if len(row) < 2 {
		kvExactTieRow(rng, row)
		return
	}
	amax, v := kvDoubleTie(rng)
	for i := range row {
		row[i] = kvRoundF16((2*rngFloat64(rng) - 1) * amax)
	}
	i := rng.IntN(len(row))
	j := (i + 1 + rng.IntN(len(row)-1)) % len(row)
	row[i] = math.Copysign(amax, float64(rng.IntN(2))-0.5)
	row[j] = math.Copysign(v, float64(rng.IntN(2))-0.5)
}

// kvDoubleTie searches for fp16 values amax in [1, 2) and v < amax where
// RN32(v/scale), scale = RN32(amax/127), is k+½ but v/scale is not, and
// half-even rounding of RN32(v/scale) gives another code than the exact
// quotient. For each random amax it tries the fp16 values nearest
// (k+½)·scale for every k; a few percent of amax values hold one, so the
// search ends after tens of draws (it is a pure function of rng).
func kvDoubleTie(rng *rand.Rand) (amax, v float64) {
	even := func(x float64) float64 { return math.RoundToEven(x) }
	for {
		amax = kvRoundF16(1 + rngFloat64(rng))
		scale := float64(float32(amax / 127))
		for k := range 127 {
			v = kvRoundF16((float64(k) + 0.5) * scale)
			if v >= amax {
				break
			}
			if tie, exact := reference.QuotientTie(v, scale); !tie || exact {
				continue
			}
			q, alt, _ := reference.QuantizeRowTies([]float64{amax, v}, even)
			if q[1] != alt[1] {
				return amax, v
			}
		}
	}
}

// kvSignedPermutations returns h signed permutation matrices [h,D,D] in
// fp16.
func kvSignedPermutations(rng *rand.Rand, h, d int) *tensor.Tensor {
	w := tensor.MustNew(tensor.Float16, h, d, d)
	for hh := range h {
		for i, j := range rng.Perm(d) {
			w.SetFloat64((hh*d+i)*d+j, float64(2*rng.IntN(2)-1), generationNumerics)
		}
	}
	return w
}

// kvRoundF16 rounds x to fp16 (IEEE).
func kvRoundF16(x float64) float64 { return generationNumerics.Round(x, tensor.Float16) }
