package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/npuverify/npuverify/tensor"
)

// The input distributions shared by the operators. Each op lists the ones
// it accepts in Dists.
const (
	DistUniform = "uniform" // uniform in [−1, 1) (ints: the whole range)
	DistNormal  = "normal"  // standard normal (ints: σ = 32)
	DistLarge   = "large"   // magnitudes in [MaxFinite/4, MaxFinite] (ints: near the range ends)
	DistSpecial = "special" // ±0, ±Inf, NaN, subnormals, ±MaxFinite, mixed with normal values
	DistCancel  = "cancel"  // pairs with x ≈ −y: operands cancel to a few ulps
)

// generationNumerics rounds generated values: inputs are IEEE values
// whatever device profile later consumes them.
var generationNumerics = tensor.Numerics{}

// checkDist fails unless dist is one of the op's distributions.
func checkDist(op Op, dist string) error {
	if !slices.Contains(op.Dists(), dist) {
		return fmt.Errorf("%s: unknown distribution %q (want one of %v)", op.Name(), dist, op.Dists())
	}
	return nil
}

// specials returns the special values of dtype d, in a fixed order.
func specials(d tensor.DType) []float64 {
	f, ok := d.FloatFormat()
	if !ok {
		lo, hi := d.IntRange()
		return []float64{0, 1, -1, lo, hi, lo + 1, hi - 1}
	}
	max, tiny, norm := f.MaxFinite(), f.MinSubnormal(), f.MinNormal()
	return []float64{
		0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(),
		tiny, -tiny, norm - tiny, -(norm - tiny), norm, -norm,
		max, -max, max / 2, 1, -1,
	}
}

// sampler returns the draw of one value of distribution dist for dtype d
// (before rounding to d), with what the draw needs (the format, the
// range, the special values) worked out once rather than per element.
func sampler(dist string, d tensor.DType) func(*rand.Rand) float64 {
	f, isFloat := d.FloatFormat()
	if !isFloat {
		lo, hi := d.IntRange()
		switch dist {
		case DistNormal:
			return func(rng *rand.Rand) float64 { return math.Round(rng.NormFloat64() * 32) }
		case DistLarge:
			return func(rng *rand.Rand) float64 {
				if rng.IntN(2) == 0 {
					return hi - float64(rng.IntN(8))
				}
				return lo + float64(rng.IntN(8))
			}
		}
		span := int(hi-lo) + 1
		return func(rng *rand.Rand) float64 { return lo + float64(rng.IntN(span)) }
	}
	uniform := func(rng *rand.Rand) float64 { return float64(2*rngFloat64(rng)) - 1 }
	switch dist {
	case DistNormal:
		return func(rng *rand.Rand) float64 { return rng.NormFloat64() }
	case DistLarge:
		m := f.MaxFinite()
		if d == tensor.Float64 {
			m = 1e300
		}
		return func(rng *rand.Rand) float64 {
			v := float64(m/4) + float64(rngFloat64(rng)*(m*3/4))
			if rng.IntN(2) == 0 {
				v = -v
			}
			return v
		}
	case DistSpecial:
		s := specials(d)
		return func(rng *rand.Rand) float64 {
			if rng.IntN(2) == 0 {
				return s[rng.IntN(len(s))]
			}
			return uniform(rng)
		}
	}
	return uniform
}

// rngFloat64 is rng.Float64() with its value rounded before the caller
// uses it: math/rand/v2 computes it as a product (a 53-bit integer times
// 2^-53), and once inlined the compiler could fuse that product into the
// caller's add (arm64, GOAMD64=v3). The product is exact, so a fusion
// would not change the value, but the explicit conversion keeps every
// sum in the generators an ordinary one that fmacheck can see.
func rngFloat64(rng *rand.Rand) float64 {
	return float64(rng.Float64())
}

// Fill makes a tensor of dtype d and shape from distribution dist, drawing
// from rng in element order and rounding each value to d (IEEE rounding).
func Fill(rng *rand.Rand, dist string, d tensor.DType, shape ...int) (*tensor.Tensor, error) {
	t, err := tensor.New(d, shape...)
	if err != nil {
		return nil, err
	}
	// A block of values at a time: the draws stay in element order, and
	// the rounding and store run as one typed loop per block.
	draw := sampler(dist, d)
	var buf [fillBlock]float64
	for off, n := 0, t.Len(); off < n; off += fillBlock {
		vals := buf[:min(fillBlock, n-off)]
		for i := range vals {
			vals[i] = draw(rng)
		}
		t.SetFloat64s(off, vals, generationNumerics)
	}
	return t, nil
}

// fillBlock is how many values Fill draws before it stores them.
const fillBlock = 512

// Negate returns −x element-wise nudged by a few ulps of d, rounded to d:
// the partner of x in a cancellation pair.
func Negate(rng *rand.Rand, x *tensor.Tensor) *tensor.Tensor {
	y := tensor.MustNew(x.DType, x.Shape...)
	f, isFloat := x.DType.FloatFormat()
	for i := 0; i < x.Len(); i++ {
		v := -x.Float64(i)
		if isFloat {
			v += float64(float64(rng.IntN(7)-3) * f.Ulp(v))
		} else {
			v += float64(rng.IntN(3) - 1)
		}
		y.SetFloat64(i, v, generationNumerics)
	}
	return y
}
