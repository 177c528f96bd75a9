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

	// Two passes: the first finds scales so that sums of squares cannot
	// overflow for fp64 outputs.
	var scaleV, scaleE float64
	for i := 0; i < n; i++ {
		g, r := got.Float64(i), want.Ref[i]
		if classify(want.Alt[i], want.Ref[i], g) != classFinite {
			continue
		}
		scaleV = math.Max(scaleV, math.Max(math.Abs(g), math.Abs(r)))
		scaleE = math.Max(scaleE, math.Abs(g-r))
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
		sumMere += mr
		m.MARE = math.Max(m.MARE, mr)
		if scaleE > 0 {
			sumSq += float64((e / scaleE) * (e / scaleE))
		}
		if scaleV > 0 {
			gs, rs := g/scaleV, r/scaleV
			sgr += float64(gs * rs)
			sgg += float64(gs * gs)
			srr += float64(rs * rs)
		}
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
	if m.Compared > 0 {
		c := float64(m.Compared)
		m.MERE = sumMere / c
		m.RMSE = scaleE * math.Sqrt(sumSq/c)
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
			gotM, wantM := Compute(got, want), computeSerial(got, want)
			// %+v prints every float exactly (shortest round-trip form),
			// and a NaN as NaN, which reflect.DeepEqual would not equate.
			if fmt.Sprintf("%+v", gotM) != fmt.Sprintf("%+v", wantM) {
				t.Fatalf("verify Compute %s n=%d seed=%d: got %+v / want %+v", d, n, seed, gotM, wantM)
			}
		}
	}
}
