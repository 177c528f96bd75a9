package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// TestGEMMStoreDotsMatchesFastElement holds bound.OutputMap.StoreDots, the
// row loop of gemm's fast path, to fastElement, its per-element
// definition, bit for bit: every element StoreDots sets has fastElement's
// outcome, and it stops exactly where fastElement declines. Values cover
// zeros, float64 and output subnormals, the output's overflow threshold
// from both sides (for the overflow-ambiguous and the Output branches),
// magnitudes at the accumulator's threshold, Inf and NaN, in every float
// mode under every numerics profile and for both magnitude factors.
func TestGEMMStoreDotsMatchesFastElement(t *testing.T) {
	const seed = 31
	r := rand.New(rand.NewPCG(seed, 7))
	for _, mode := range GEMMModes() {
		if mode.Int8() {
			continue
		}
		for _, num := range []tensor.Numerics{
			{},
			{Overflow: tensor.OverflowSaturate},
			{Subnormals: tensor.SubnormalFlush},
			{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush},
		} {
			for _, k := range []int{1, 3, 1024, 4096, 1 << 20} {
				p, err := GEMM.Validate(Params{"mode": mode.Name})
				if err != nil {
					t.Fatal(err)
				}
				ev, err := newGEMMEval(gemmConfig(p), k, num)
				if err != nil {
					t.Fatal(err)
				}
				if gemmMagFP32(mode.In, k) && r.IntN(2) == 0 {
					ev.magUp = gemmMagUpFactor32(k)
				}
				of, _ := mode.Out.FloatFormat()
				af, _ := mode.Acc.FloatFormat()
				value := func() float64 {
					switch r.IntN(10) {
					case 0:
						return 0
					case 1:
						return []float64{math.Inf(1), math.Inf(-1), math.NaN(), 0x1p-1074, -0x1p-1060}[r.IntN(5)]
					case 2: // around the output's overflow threshold
						x := of.MaxFinite() + float64(of.Ulp(of.MaxFinite())/2)
						return x * (1 + float64(float64(r.IntN(41)-20)*0x1p-12))
					case 3: // around the accumulator's
						return af.MaxFinite() * (1 + float64(float64(r.IntN(41)-20)*0x1p-10))
					case 4: // output subnormals
						return of.MinNormal() * r.Float64()
					}
					return math.Ldexp(r.NormFloat64(), r.IntN(40)-20)
				}
				const n0 = 4000
				d, s := make([]float64, n0), make([]float64, n0)
				for i := range d {
					d[i], s[i] = value(), math.Abs(value())
					if r.IntN(3) == 0 { // a magnitude of the dot product's order
						s[i] = math.Abs(d[i]) * (1 + rngFloat64(r))
					}
				}
				// Sweeps a float64 ulp at a time across the two thresholds,
				// where a strict and a non-strict comparison differ:
				// (1+G)·S + Eta against the accumulator's, and |d| ± err
				// against the output's.
				acc := (ev.dot.Threshold - ev.dot.Eta) / (1 + ev.dot.G) / ev.magUp
				out := of.MaxFinite() + float64(of.Ulp(of.MaxFinite())/2)
				for q := -40; q <= 40; q++ {
					d = append(d, 1, out, -out)
					s = append(s, nudge(acc, q), 0, 0)
					d[len(d)-2], d[len(d)-1] = nudge(out, q), -nudge(out, q)
					// err of about 2^-40·out: |d| + err meets the threshold
					// for some q, |d| − err for others.
					s = append(s[:len(s)-2], math.Abs(nudge(out, q))*0x1p-40/(1+ev.dot.G+ev.dot.RefErr)/ev.magUp, 0x1p-40*out/ev.magUp)
				}
				n := len(d)
				ref, bnd, alt := make([]float64, n), make([]float64, n), make([]bound.Special, n)
				for i := 0; i < n; i++ {
					got := ev.out.StoreDots(&ev.dot, d[i:], s[i:], ev.magUp, ref[i:], bnd[i:], alt[i:])
					for j := i; j < i+got; j++ {
						wr, wb, wa, ok := ev.fastElement(d[j], s[j])
						if !ok || math.Float64bits(ref[j]) != math.Float64bits(wr) || math.Float64bits(bnd[j]) != math.Float64bits(wb) || alt[j] != wa {
							t.Fatalf("gemm mode=%s num=%s K=%d seed=%d: element %d (d=%v s=%v): got StoreDots ref=%v bound=%v alt=%s / want fastElement ref=%v bound=%v alt=%s ok=%v",
								mode.Name, num, k, seed, j, d[j], s[j], ref[j], bnd[j], alt[j], wr, wb, wa, ok)
						}
					}
					i += got
					if i < n {
						if _, _, _, ok := ev.fastElement(d[i], s[i]); ok {
							t.Fatalf("gemm mode=%s num=%s K=%d seed=%d: element %d (d=%v s=%v): got StoreDots stop / want fastElement's outcome (it takes the element)",
								mode.Name, num, k, seed, i, d[i], s[i])
						}
					}
				}
			}
		}
	}
}

// nudge returns x moved q float64 ulps (q < 0 towards zero).
func nudge(x float64, q int) float64 {
	return math.Float64frombits(uint64(int64(math.Float64bits(x)) + int64(q)))
}
