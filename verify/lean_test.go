package verify

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
)

// leanFault is one kind of element leanCase plants: an exact value and
// the got value an output holds for it.
type leanFault int

const (
	faultNaN          leanFault = iota // NaN exact value, got NaN
	faultInf                           // ±Inf exact value, got the same infinity
	faultZero                          // a zero of either sign, got the same bits
	faultZeroSign                      // a zero, got the other zero
	faultSubnormal                     // a subnormal of d, got the same bits
	faultSubnormalOff                  // a subnormal of d, got one ulp off
	faultOffByOne                      // a short-form value, got one ulp off its rounding
	faultWrong                         // a short-form value, got far off
	faultWrongClass                    // a short-form value, got NaN or ±Inf
	faultOverflow                      // an exact value past the overflow threshold, got its rounding
	faultMaxRel                        // a value of the largest relative error, 2^k·(1 + 2^-p), got its rounding
	faultBigTie                        // a large tie (larger than the normal values), got its rounding
	faultRoundsUp                      // the largest value, just below a power of two that it rounds up to, got its rounding
	leanFaults
)

// leanCase returns an output of dtype d with n elements whose exact
// values are sums x + y of two random values of d (vector_add's: ties,
// values rounding up and down; the compact Expected made by
// bound.NewExactSumFrom, with x and y) or, with isCopy, values of d
// themselves (e = 0 throughout, a copy's; bound.NewExactFrom, x and y
// nil), got the correct rounding of each, and elements replaced by
// planted ones (leanFault) one in about every rate (none for rate 0),
// and those of at at their indices.
func leanCase(d tensor.DType, num tensor.Numerics, n int, isCopy bool, rate int, seed uint64, at map[int]leanFault) (got *tensor.Tensor, want *bound.Expected, x, y *tensor.Tensor) {
	r := rand.New(rand.NewPCG(seed, 29))
	f, _ := d.FloatFormat()
	val := func() float64 {
		return tensor.Numerics{}.Round(r.NormFloat64()*math.Ldexp(1, r.IntN(4)-1), d)
	}
	xs, ys := make([]float64, n), make([]float64, n)
	gs := make([]float64, n)
	for i := range xs {
		planted := false // gs[i] set by the fault, else the rounding
		xs[i] = val()
		if !isCopy {
			ys[i] = val()
		}
		fault, forced := at[i]
		if forced || rate != 0 && r.IntN(rate) == 0 {
			sub := f.MinSubnormal() * float64(1+r.IntN(1<<(f.P-1)-1)) * float64(1-2*r.IntN(2))
			sign := float64(1 - 2*r.IntN(2))
			if !forced {
				fault = leanFault(r.IntN(int(leanFaults)))
			}
			switch fault {
			case faultNaN:
				xs[i] = math.NaN()
				gs[i], planted = math.NaN(), true
			case faultInf:
				xs[i] = math.Inf(int(sign))
			case faultZero:
				xs[i], ys[i] = math.Copysign(0, sign), math.Copysign(0, sign)
			case faultZeroSign:
				xs[i], ys[i] = math.Copysign(0, sign), math.Copysign(0, sign)
				gs[i], planted = -num.Round(xs[i]+ys[i], d), true
			case faultSubnormal:
				xs[i], ys[i] = sub, 0
			case faultSubnormalOff:
				xs[i], ys[i] = sub, 0
				gs[i], planted = sub+f.MinSubnormal(), true
			case faultOffByOne:
				v := num.Round(xs[i]+ys[i], d)
				gs[i], planted = v+sign*f.Ulp(v), true
			case faultWrong:
				gs[i], planted = num.Round(num.Round(xs[i]+ys[i], d)*1.5+1, d), true
			case faultWrongClass:
				gs[i], planted = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[r.IntN(3)], true
			case faultOverflow:
				xs[i] = sign * f.MaxFinite()
				ys[i] = sign * f.Ulp(f.MaxFinite()) * float64(r.IntN(3)) / 2
				if isCopy {
					xs[i], ys[i] = xs[i]+ys[i], 0 // past MaxFinite: its rounding, not itself
				}
			case faultMaxRel:
				k := r.IntN(6) - 3
				xs[i], ys[i] = sign*math.Ldexp(1, k), sign*math.Ldexp(1, k-f.P)
				if isCopy {
					xs[i], ys[i] = xs[i]+ys[i], 0
				}
			case faultRoundsUp: // 2^9 − ulp·2^-12: the largest |g| is above the largest |r|, in the next binade
				xs[i], ys[i] = sign*math.Ldexp(1, 9), -sign*math.Ldexp(1, 9-f.P-12)
				if isCopy {
					xs[i], ys[i] = xs[i]+ys[i], 0
				}
			case faultBigTie:
				b := math.Ldexp(1, 5+r.IntN(3))
				xs[i], ys[i] = sign*b, sign*f.Ulp(b)*float64(2*r.IntN(64)+1)/2
				if isCopy {
					xs[i], ys[i] = xs[i]+ys[i], 0
				}
			}
		}
		if !planted {
			gs[i] = num.Round(xs[i]+ys[i], d)
			if isCopy {
				gs[i] = num.Round(xs[i], d) // −0 + 0 would be +0
			}
		}
	}
	rs := make([]float64, n)
	for i := range rs {
		rs[i] = xs[i] + ys[i]
		if isCopy {
			rs[i] = xs[i]
		}
	}
	got = tensor.MustNew(d, n)
	for i, g := range gs {
		got.SetFloat64(i, g, tensor.Numerics{})
	}
	src := func(off int, dst []float64) { copy(dst, rs[off:off+len(dst)]) }
	if isCopy {
		return got, bound.NewExactFrom(n, d, num, src), nil, nil
	}
	x, y = tensor.MustNew(d, n), tensor.MustNew(d, n)
	for i := range xs {
		x.SetFloat64(i, xs[i], tensor.Numerics{})
		y.SetFloat64(i, ys[i], tensor.Numerics{})
	}
	return got, bound.NewExactSumFrom(x, y, d, num), x, y
}

// TestComputeLeanMatchesPerElement holds the lean path of the compact
// floating outputs (leanChunk: one pass per chunk, its element tests
// replaced by the part's limits and the chunk's maxima, its sums scaled
// at the end) to the per-element path it replaces (leanChunks off), on
// seeded random outputs: sums of two values (vector_add's) and copies,
// clean and with planted elements of every kind (NaN, ±Inf, zeros of
// both signs and of the wrong sign, subnormals right and one ulp off,
// values one ulp off and far off and of the wrong class, overflow,
// values of the largest relative error, ties larger than the rest, the
// largest value rounding up to a power of two) at
// rates from one in a few hundred to none, so that chunks go either way,
// over several chunks on one to three cores, under the default profile
// and saturate-and-flush. Every metric (the sums, the maxima, the
// histogram, the worst elements and the first rejected one), every
// chunk's sums and scales, and every policy's verdict must be the same,
// bit for bit; and the lean path must
// have taken chunks, fp16 sums (leanRunH16SumAVX2 where the CPU has F16C)
// and others, or the test would hold nothing.
func TestComputeLeanMatchesPerElement(t *testing.T) {
	defer func(v bool) { leanChunks = v }(leanChunks)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var pols []Policy
	for _, s := range []string{"bound", "ulp", "allclose", "ascend-thousandth", "ascend-mere", "ascend-mixed"} {
		p, err := ParsePolicy(s)
		if err != nil {
			t.Fatal(err)
		}
		pols = append(pols, p)
	}
	judged := func(got *tensor.Tensor, want *bound.Expected) string {
		res, err := Check(Subject{Op: "lean"}, map[string]*tensor.Tensor{"z": got}, map[string]*bound.Expected{"z": want}, nil, pols)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		// The chunks' sums too, with their scales: a wrong scale would
		// cancel in the totals (exact powers of two both ways).
		st := newStream(got, got.Len())
		st.add(want, got.Len())
		return fmt.Sprintf("%+v\n%s\n%+v", Compute(got, want), b, st.chunks)
	}
	taken := map[bool]int{} // chunks the lean path took: fp16 sums (vector_add's, widened and added in the pass), the others
	same := func(desc string, f16Sum bool, got *tensor.Tensor, want *bound.Expected) {
		leanChunks = false
		w := judged(got, want)
		leanChunks = true
		before := leanTaken.Load()
		g := judged(got, want)
		taken[f16Sum] += int(leanTaken.Load() - before)
		if g != w {
			t.Fatalf("%s: Compute and Check with the lean path: got %s / want (per element) %s", desc, g, w)
		}
	}
	for seed := uint64(1); seed <= 3; seed++ {
		runtime.GOMAXPROCS(int(seed))
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
			for _, num := range []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}} {
				for _, n := range []int{3, 4099, 6*sumChunk + 5} {
					for _, isCopy := range []bool{false, true} {
						for _, rate := range []int{0, 300, 9000} {
							got, want, _, _ := leanCase(d, num, n, isCopy, rate, seed, nil)
							same(fmt.Sprintf("seed=%d %s %v n=%d copy=%v rate=%d GOMAXPROCS=%d", seed, d, num, n, isCopy, rate, seed), d == tensor.Float16 && !isCopy, got, want)
						}
					}
				}
			}
			// A clean output whose limits come early (an element of the
			// largest relative error, large ties) and whose largest values, in later
			// chunks, round up to a power of two: chunks the lean path
			// takes where the largest |g| is not the largest |r|.
			at := map[int]leanFault{5: faultMaxRel, 6*sumChunk + 77: faultRoundsUp, 7*sumChunk + 1234: faultRoundsUp}
			for i := 6; i < 30; i++ {
				at[i] = faultBigTie // the worst list full of ties larger than the normal values' errors
			}
			got, want, _, _ := leanCase(d, tensor.Numerics{}, 8*sumChunk, false, 0, seed, at)
			same(fmt.Sprintf("seed=%d %s n=%d largest values rounding up in chunks 6 and 7 GOMAXPROCS=%d", seed, d, 8*sumChunk, seed), d == tensor.Float16, got, want)
		}
	}
	if taken[true] == 0 || taken[false] == 0 {
		t.Fatalf("seed=1…3: chunks the lean path took: fp16 sums %d, others %d / want some of each", taken[true], taken[false])
	}
	t.Logf("chunks the lean path took: fp16 sums %d, others %d", taken[true], taken[false])
}

// TestLeanRunMatchesPortable holds leanRunAVX2, and for fp16 its forms
// that widen the values themselves (leanRunH16AVX2 the got values,
// leanRunH16SumAVX2 also the addends of the exact values), to leanRunGo
// bit for bit on seeded random chunks (leanCase's values, clean and with
// planted elements, under either rule below the short form): where the
// vector loop stops (the group of four holding the first element
// leanRunGo stops at, or the end) and every lane of every figure of a run
// that passes.
func TestLeanRunMatchesPortable(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	for seed := uint64(1); seed <= 4; seed++ {
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
			sf, _ := bound.NewShortForm(d)
			for _, isCopy := range []bool{false, true} {
				for _, rate := range []int{0, 50, 2000} {
					flush := rate == 50
					got, want, x, y := leanCase(d, tensor.Numerics{}, 4096, isCopy, rate, seed, nil)
					src, _, _, _ := want.ExactSource()
					gv, rv := make([]float64, got.Len()), make([]float64, got.Len())
					got.Float64sFrom(0, gv)
					src(0, rv)
					for _, n := range []int{4, 36, 1024, 4096} {
						var w leanVec
						w.set(&sf, flush)
						okGo := leanRunGo(&w, gv[:n], rv[:n], 0)
						stop := n
						for j := range n {
							var one leanVec
							one.set(&sf, flush)
							if !leanRunGo(&one, gv[j:j+1], rv[j:j+1], 0) {
								stop = j &^ 3
								break
							}
						}
						forms := map[string]func(v *leanVec) int{
							"leanRunAVX2": func(v *leanVec) int { return leanRunAVX2(v, &gv[0], &rv[0], n) },
						}
						if useF16C && d == tensor.Float16 {
							forms["leanRunH16AVX2"] = func(v *leanVec) int { return leanRunH16AVX2(v, f16Ptr(got.F16()), &rv[0], n) }
							if x != nil {
								forms["leanRunH16SumAVX2"] = func(v *leanVec) int {
									return leanRunH16SumAVX2(v, f16Ptr(got.F16()), f16Ptr(x.F16()), f16Ptr(y.F16()), n)
								}
							}
						}
						for name, run := range forms {
							var v leanVec
							v.set(&sf, flush)
							k := run(&v)
							if k != stop || (k == n) != okGo {
								t.Fatalf("seed=%d %s copy=%v rate=%d n=%d: %s gathered %d (portable passes %v) / want %d", seed, d, isCopy, rate, n, name, k, okGo, stop)
							}
							if g, want := fmt.Sprintf("%#v", v), fmt.Sprintf("%#v", w); okGo && g != want {
								t.Fatalf("seed=%d %s copy=%v rate=%d n=%d: %s figures: got %s / want (leanRunGo) %s", seed, d, isCopy, rate, n, name, g, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestLeanScalable holds leanScalable to the formats the lean path meets
// (every short-form dtype), so that a format added with a wider range
// shows here rather than as a chunk silently judged per element, and
// leanRelStar to the relative error of its element, computed apart.
func TestLeanScalable(t *testing.T) {
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
		f, _ := d.FloatFormat()
		if !leanScalable(f) {
			t.Errorf("%s: leanScalable = false / want true", d)
		}
		u := f.UnitRoundoffValue()
		if got, want := leanRelStar(f), u/(1+u); got != want {
			t.Errorf("%s: leanRelStar = %g / want %g", d, got, want)
		}
	}
	if f, _ := tensor.Float64.FloatFormat(); leanScalable(f) {
		t.Errorf("fp64: leanScalable = true / want false")
	}
}

// TestLeanH16SumTestIsExact holds leanRunH16SumAVX2's eight-at-a-time
// test (got bit for bit x + y rounded to fp32 and then to fp16, and
// finite) to the short form's: for each x, fp16 pairs (x, y) whose got
// is that double rounding, computed here by Go's float32 addition and
// float16's rounding to nearest even. Where the double rounding were not
// the correct rounding of x + y (it is, p = 24 ≥ 2·11 + 2: Figueroa's
// condition), leanRunGo would refuse an element the loop's test takes.
// The loop must take every pair whose got is finite, with leanRunGo's
// figures bit for bit, and stop at every other. y runs over 96 values (zeros, subnormals, the
// ends of the normal range, random ones) for every one of the 65536 x,
// and over all 65536 with NPUVERIFY_EXHAUSTIVE=1 (2^32 pairs).
func TestLeanH16SumTestIsExact(t *testing.T) {
	if !useF16C {
		t.Skip("no F16C")
	}
	ys := []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x0002, 0x03ff, 0x83ff, 0x0400, 0x8400, 0x0401,
		0x3bff, 0x3c00, 0xbc00, 0x3c01, 0x7bfe, 0x7bff, 0xfbff, 0x77ff, 0x7800}
	r := rand.New(rand.NewPCG(1, 31))
	for len(ys) < 96 {
		ys = append(ys, uint16(r.Uint32()))
	}
	if os.Getenv("NPUVERIFY_EXHAUSTIVE") != "" {
		ys = make([]uint16, 1<<16)
		for i := range ys {
			ys[i] = uint16(i)
		}
	}
	sf, _ := bound.NewShortForm(tensor.Float16)
	xs := make([]uint16, 1<<16)
	for i := range xs {
		xs[i] = uint16(i)
	}
	// The x are split over the cores; a failure names the first x.
	var (
		mu     sync.Mutex
		failed []string
	)
	parallel.For(len(xs), 256, func(i0, i1 int) {
		n := len(ys) + 8
		xh, yh, gh := make([]float16.Float16, 0, n), make([]float16.Float16, 0, n), make([]float16.Float16, 0, n)
		gv, rv := make([]float64, 0, n), make([]float64, 0, n)
		for _, xb := range xs[i0:i1] {
			x := float16.Frombits(xb)
			xh, yh, gh, gv, rv = xh[:0], yh[:0], gh[:0], gv[:0], rv[:0]
			for _, yb := range ys {
				y := float16.Frombits(yb)
				g := float16.Fromfloat32(x.Float32() + y.Float32())
				if g.IsNaN() || g.IsInf(0) {
					// Never taken, here after four copies (0 + 0 = +0).
					var bx, by, bg [8]float16.Float16
					bx[7], by[7], bg[7] = x, y, g
					var v leanVec
					v.set(&sf, false)
					if k := leanRunH16SumAVX2(&v, f16Ptr(bg[:]), f16Ptr(bx[:]), f16Ptr(by[:]), 8); k != 4 {
						mu.Lock()
						failed = append(failed, fmt.Sprintf("fp16 x=%#04x y=%#04x (seed 1): got %#04x after four copies: leanRunH16SumAVX2 gathered %d / want 4", xb, yb, g.Bits(), k))
						mu.Unlock()
					}
					continue
				}
				xh, yh, gh = append(xh, x), append(yh, y), append(gh, g)
				gv, rv = append(gv, float64(g.Float32())), append(rv, float64(x.Float32())+float64(y.Float32()))
			}
			for len(gh)%8 != 0 { // 0 + 0 = +0, an exact copy
				xh, yh, gh = append(xh, 0), append(yh, 0), append(gh, 0)
				gv, rv = append(gv, 0), append(rv, 0)
			}
			if len(gh) == 0 { // x NaN or ±Inf
				continue
			}
			var v, w leanVec
			v.set(&sf, false)
			w.set(&sf, false)
			k := leanRunH16SumAVX2(&v, f16Ptr(gh), f16Ptr(xh), f16Ptr(yh), len(gh))
			okGo := leanRunGo(&w, gv, rv, 0)
			if k != len(gh) || !okGo || v != w {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("fp16 x=%#04x, %d y (seed 1): leanRunH16SumAVX2 gathered %d, figures %+v / want %d, leanRunGo's (passes %v) %+v", xb, len(gh), k, v, len(gh), okGo, w))
				mu.Unlock()
			}
		}
	})
	if len(failed) > 0 {
		t.Fatalf("%d checks fail; the first: %s", len(failed), failed[0])
	}
}
