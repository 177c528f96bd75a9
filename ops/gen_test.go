package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// fillEach is Fill's obvious form: one draw (sample), one rounding and
// one store per element, in element order.
func fillEach(rng *rand.Rand, dist string, d tensor.DType, n int) *tensor.Tensor {
	t := tensor.MustNew(d, n)
	for i := range n {
		t.SetFloat64(i, sample(rng, dist, d), generationNumerics)
	}
	return t
}

// TestFillMatchesEach: Fill draws and rounds exactly as the per-element
// loop does (recipe inputs, and so every golden case, depend on its bits),
// for every dtype and distribution, at lengths around its block.
func TestFillMatchesEach(t *testing.T) {
	dists := []string{DistUniform, DistNormal, DistLarge, DistSpecial, DistCancel}
	for _, d := range tensor.DTypes() {
		for _, dist := range dists {
			for _, n := range []int{0, 1, fillBlock - 1, fillBlock, fillBlock + 1, 3*fillBlock + 17} {
				seed := uint64(n)*31 + uint64(d)
				got, err := Fill(rand.New(rand.NewPCG(seed, 1)), dist, d, n)
				if err != nil {
					t.Fatalf("Fill(seed=%d, %s, %s, %d): %v", seed, dist, d, n, err)
				}
				want := fillEach(rand.New(rand.NewPCG(seed, 1)), dist, d, n)
				if ok, i := tensor.BitsEqual(got, want); !ok {
					t.Errorf("Fill(seed=%d, %s, %s, %d)[%d] = bits %#x, want %#x (one element at a time)", seed, dist, d, n, i, got.Bits(i), want.Bits(i))
				}
			}
		}
	}
}

// sample draws one value of distribution dist for dtype d (before
// rounding to d): sampler's draws as one function, everything worked out
// per call.
func sample(rng *rand.Rand, dist string, d tensor.DType) float64 {
	f, isFloat := d.FloatFormat()
	if !isFloat {
		lo, hi := d.IntRange()
		switch dist {
		case DistNormal:
			return math.Round(rng.NormFloat64() * 32)
		case DistLarge:
			if rng.IntN(2) == 0 {
				return hi - float64(rng.IntN(8))
			}
			return lo + float64(rng.IntN(8))
		}
		return lo + float64(rng.IntN(int(hi-lo)+1))
	}
	switch dist {
	case DistNormal:
		return rng.NormFloat64()
	case DistLarge:
		m := f.MaxFinite()
		if d == tensor.Float64 {
			m = 1e300
		}
		v := float64(m/4) + float64(rngFloat64(rng)*(m*3/4))
		if rng.IntN(2) == 0 {
			v = -v
		}
		return v
	case DistSpecial:
		if rng.IntN(2) == 0 {
			s := specials(d)
			return s[rng.IntN(len(s))]
		}
	}
	return float64(2*rngFloat64(rng)) - 1
}
