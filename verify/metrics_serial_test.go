package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// computeSerial is Compute as the single loop it was before the work was
// split over cores: TestComputeMatchesSerial holds the split one to it.
func computeSerial(got *tensor.Tensor, want *bound.Expected) Metrics {
	m := Metrics{UlpHist: map[string]int{}, Cosine: 1, FirstBad: -1}
	bad := func(i int) {
		if m.FirstBad < 0 {
			m.FirstBad = i
		}
	}
	if got == nil {
		return m
	}
	if want == nil {
		m.N = got.Len()
		return m
	}
	if want.Compact() { // the single loop reads the arrays
		w := *want
		w.Materialize()
		want = &w
	}
	n := min(got.Len(), len(want.Ref), len(want.Bound), len(want.Alt))
	m.N = n
	worst := newRanked(WorstCount)

	// The sums (sums.go): per chunk of sumChunk elements, each term
	// scaled by the chunk's own powers of two (2^x ≤ the chunk's largest
	// error, value < 2^(x+1)), added in index order to the lane of the
	// element's index mod 4, the lanes folded as (0 + 1) + (2 + 3); then
	// the chunks, brought to the largest scale, added in chunk order.
	type chunk struct {
		mere, sq, gr, gg, rr [4]float64
		se, sv               float64 // the chunk's scales; 0 when all its errors (values) are 0
	}
	fold := func(l [4]float64) float64 { return (l[0] + l[1]) + (l[2] + l[3]) }
	chunks := make([]chunk, (n+sumChunk-1)/sumChunk)
	for c := range chunks {
		var maxE, maxV float64
		for i := c * sumChunk; i < min((c+1)*sumChunk, n); i++ {
			g, r := got.Float64(i), want.Ref[i]
			if classify(want.Alt[i], want.Ref[i], g) != classFinite {
				continue
			}
			maxE = math.Max(maxE, math.Abs(g-r))
			maxV = math.Max(maxV, math.Max(math.Abs(g), math.Abs(r)))
		}
		chunks[c].se, chunks[c].sv = pow2Floor(maxE), pow2Floor(maxV)
	}
	nonZero := func(x float64) float64 {
		if x == 0 {
			return 1
		}
		return x
	}

	var sumMere, sumSq, sgr, sgg, srr float64
	var over1e3, over5e3 int
	for i := 0; i < n; i++ {
		g, r, b := got.Float64(i), want.Ref[i], want.Bound[i]
		amb := want.Ambiguous(i)
		if amb {
			m.Ambiguous++
		}
		switch classify(want.Alt[i], want.Ref[i], g) {
		case classMismatch:
			m.UlpHist["nonfinite"]++
			m.NonFiniteMismatch++
			bad(i)
			worst.add(Element{Index: i, Got: g, Ref: r, Bound: b, Alt: want.Alt[i], Note: mismatchNote(want.Alt[i], want.Ref[i], g)},
				math.Inf(1), math.Inf(1))
			continue
		case classNonFinite:
			m.UlpHist["nonfinite"]++
			if amb {
				m.AmbiguousTaken++
			}
			if want.IsExact(i) && !bound.Identical(g, want.Rounded[i]) {
				m.NotRounded++
				bad(i)
				worst.add(notRoundedElement(got.DType, i, g, r, b, want.Alt[i], want.Rounded[i]), notRoundedRank, math.Inf(1))
			}
			continue
		}
		m.Compared++
		e := math.Abs(g - r)
		m.MaxAbs = math.Max(m.MaxAbs, e)
		rel := relErr(g, r)
		m.MaxRel = math.Max(m.MaxRel, rel)
		if rel > 1e-3 {
			over1e3++
		}
		if rel > 5e-3 {
			over5e3++
		}
		mr := e / (math.Abs(r) + mereGuard)
		m.MARE = math.Max(m.MARE, mr)
		ch, lane := &chunks[i/sumChunk], i%4 // sumChunk is a multiple of 4
		ch.mere[lane] += mr
		es := e / nonZero(ch.se)
		ch.sq[lane] += float64(es * es)
		gs, rs := g/nonZero(ch.sv), r/nonZero(ch.sv)
		ch.gr[lane] += float64(gs * rs)
		ch.gg[lane] += float64(gs * gs)
		ch.rr[lane] += float64(rs * rs)
		m.UlpHist[ulpBucket(e/ulpOf(got.DType, r))]++
		t := ratio(e, b)
		m.Tightness = math.Max(m.Tightness, t)
		out := !(e <= b)
		switch {
		case out:
			m.OutOfBound++
			bad(i)
			worst.add(Element{Index: i, Got: g, Ref: r, Bound: b, Alt: want.Alt[i]}, t, e)
		case want.IsExact(i) && !bound.Identical(g, want.Rounded[i]):
			m.NotRounded++
			bad(i)
			worst.add(notRoundedElement(got.DType, i, g, r, b, want.Alt[i], want.Rounded[i]), notRoundedRank, e)
		case e > 0:
			worst.add(Element{Index: i, Got: g, Ref: r, Bound: b, Alt: want.Alt[i]}, t, e)
		}
	}
	var scaleE, scaleV float64
	for _, ch := range chunks {
		scaleE, scaleV = math.Max(scaleE, ch.se), math.Max(scaleV, ch.sv)
	}
	for _, ch := range chunks {
		sumMere += fold(ch.mere)
		if ch.se > 0 {
			f := float64((ch.se / scaleE) * (ch.se / scaleE))
			sumSq += float64(fold(ch.sq) * f)
		}
		if ch.sv > 0 {
			f := float64((ch.sv / scaleV) * (ch.sv / scaleV))
			sgr += float64(fold(ch.gr) * f)
			sgg += float64(fold(ch.gg) * f)
			srr += float64(fold(ch.rr) * f)
		}
	}
	if m.Compared > 0 {
		c := float64(m.Compared)
		m.MERE = sumMere / c
		m.RMSE = nonZero(scaleE) * math.Sqrt(sumSq/c)
		m.ErrRatio1e3 = float64(over1e3) / c
		m.ErrRatio5e3 = float64(over5e3) / c
		switch {
		case sgg == 0 && srr == 0:
			m.Cosine = 1
		case sgg == 0 || srr == 0:
			m.Cosine = 0
		default:
			m.Cosine = math.Max(-1, math.Min(1, sgr/math.Sqrt(sgg*srr)))
		}
	}
	m.Worst = worst.elements()
	return m
}

// pow2Floor returns the largest power of two ≤ x, 0 for x = 0: by
// halving and doubling, independently of sums.go's pow2Below.
func pow2Floor(x float64) float64 {
	if x == 0 {
		return 0
	}
	p := 1.0
	for p > x {
		p /= 2
	}
	for p*2 <= x && !math.IsInf(p*2, 1) {
		p *= 2
	}
	return p
}

// TestComputeMatchesSerial holds the split Compute to the single loop
// (every field, the sums' last bits included) on outputs large enough to
// be split, with errors of a few ulps, values out of bound, exact
// elements rounded the wrong way, NaN and Inf in got and in the
// reference, ambiguous elements and zeros.
func TestComputeMatchesSerial(t *testing.T) {
	const seed = 21
	r := rand.New(rand.NewPCG(seed, 0))
	for _, d := range []tensor.DType{tensor.Float16, tensor.Float32, tensor.Float64, tensor.Int8} {
		for _, n := range []int{0, 1, 1000, 100003} {
			got, want := mixedCase(r, d, n)
			gotM, wantM := Compute(got, want), computeSerial(got, want)
			// %+v prints every float exactly (shortest round-trip form),
			// and a NaN as NaN, which reflect.DeepEqual would not equate.
			if fmt.Sprintf("%+v", gotM) != fmt.Sprintf("%+v", wantM) {
				t.Fatalf("verify Compute %s n=%d seed=%d: got %+v / want %+v", d, n, seed, gotM, wantM)
			}
		}
	}
}

// mixedCase draws from r an output of n elements of dtype d and its
// Expected: errors of a few ulps, values out of bound, exact elements
// rounded the wrong way, NaN and Inf in got and in the reference,
// ambiguous elements and zeros.
func mixedCase(r *rand.Rand, d tensor.DType, n int) (*tensor.Tensor, *bound.Expected) {
	got := tensor.MustNew(d, n)
	want := bound.NewExpected(n)
	for i := range n {
		ref := tensor.Numerics{}.Round(r.NormFloat64()*100, d)
		g := ref
		switch k := r.IntN(40); {
		case k < 20:
			g = ref + float64(float64(r.IntN(5)-2)*math.Max(1e-3, math.Abs(ref)*1e-3))
		case k == 20:
			g = math.NaN()
		case k == 21:
			ref = math.Inf(1)
		case k == 22:
			want.Alt[i] = bound.PosInf
			g = math.Inf(1)
		case k == 23:
			want.SetExact(i, ref, d, tensor.Numerics{})
			g = ref + 1
		case k == 24:
			ref, g = 0, 0
		}
		got.SetFloat64(i, g, tensor.Numerics{})
		if !want.IsExact(i) {
			want.Ref[i] = ref
			want.Bound[i] = math.Abs(ref) * 2e-3
		}
	}
	return got, want
}
