package verify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/tensor"
)

// acceptedCase is one output and its Expected, from one of the generators
// the metrics are tested on.
type acceptedCase struct {
	name string
	got  *tensor.Tensor
	want *bound.Expected
}

// acceptedCases returns outputs of every form of Expected (ordinary,
// compact, compact over an unchanged base, each with its materialized
// twin) with every kind of rejected element the metrics tests generate.
func acceptedCases(t *testing.T) []acceptedCase {
	var cs []acceptedCase
	add := func(name string, got *tensor.Tensor, ws ...*bound.Expected) {
		for k, w := range ws {
			cs = append(cs, acceptedCase{fmt.Sprintf("%s/form%d", name, k), got, w})
		}
	}
	mixed := rand.New(rand.NewPCG(81, 0))
	nums := []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}}
	for _, n := range []int{1, 7, 2049, 4099} {
		for _, d := range []tensor.DType{tensor.Float16, tensor.Float32, tensor.Float64, tensor.Int8} {
			got, want := mixedCase(mixed, d, n)
			add(fmt.Sprintf("mixed %s n=%d seed=81", d, n), got, want)
		}
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Float64, tensor.Int32} {
			for _, mix := range []ordinaryMix{mixNone, mixTies, mixAll} {
				got, want := ordinaryCase(d, n, 82, mix)
				add(fmt.Sprintf("ordinary %s n=%d mix=%d seed=82", d, n, mix), got, want)
			}
		}
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
			for _, num := range nums {
				got, compact, full := compactCase(d, num, n, 83)
				add(fmt.Sprintf("compact %s %v n=%d seed=83", d, num, n), got, compact, full)
				got, compact, full = periodicCase(d, num, n, 17, 2, 84)
				add(fmt.Sprintf("periodic %s %v n=%d seed=84", d, num, n), got, compact, full)
			}
		}
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8, tensor.Int32} {
			for _, num := range nums {
				got, compact, full := unchangedCase(t, d, num, n, 85)
				add(fmt.Sprintf("unchanged %s %v n=%d seed=85", d, num, n), got, compact, full)
			}
		}
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
			got, compact, full := cleanCase(d, tensor.Numerics{}, n, 86, true)
			add(fmt.Sprintf("clean ties %s n=%d seed=86", d, n), got, compact, full)
		}
	}
	return cs
}

// rejected is the number of elements the bound policy rejects, by the
// single loop.
func rejected(got *tensor.Tensor, want *bound.Expected) int {
	m := computeSerial(got, want)
	return m.NonFiniteMismatch + m.OutOfBound + m.NotRounded
}

// mend returns c's output with every element its Expected does not
// accept set to its rounding where it is exact, else its reference, and
// the indices it set (some stay rejected: a NaN bound accepts nothing).
func mend(c acceptedCase) (ok *tensor.Tensor, out []int) {
	ok = c.got.Clone()
	for i := range ok.Len() {
		if c.want.Accepts(i, ok.Float64(i)) {
			continue
		}
		out = append(out, i)
		v := c.want.RefAt(i)
		if c.want.IsExact(i) {
			v = c.want.RoundedAt(i)
		}
		ok.SetFloat64(i, v, tensor.Numerics{})
	}
	return ok, out
}

// TestAcceptedMatchesCompute holds Accepted to the single loop's counts of
// rejected elements on every generated output, on that output with every
// rejected element mended (each set to its rounding where it is exact,
// else its reference), and on the mended output with one rejected element
// put back: the first, the last and a few between, so that a fault is
// found wherever it sits in a block.
func TestAcceptedMatchesCompute(t *testing.T) {
	vec := useAVX2
	defer func() { useAVX2 = vec }()
	for _, v := range []bool{false, true} {
		if v && !vec {
			continue
		}
		useAVX2 = v
		t.Run(fmt.Sprintf("avx2=%v", v), testAcceptedMatchesCompute)
	}
}

func testAcceptedMatchesCompute(t *testing.T) {
	var mended, faults int
	for _, c := range acceptedCases(t) {
		n := c.got.Len()
		bad := rejected(c.got, c.want)
		if got := Accepted(c.got, c.want); got != (bad == 0) {
			t.Errorf("verify Accepted %s: Accepted = %v, want %v (%d elements rejected by the single loop)", c.name, got, bad == 0, bad)
		}
		if !c.want.Compact() && n <= 2049 {
			// Element by element, alone: an element the mending cannot
			// mend (a NaN bound) is otherwise never the only rejected one.
			for i := range n {
				got := tensor.MustNew(c.got.DType, 1)
				got.SetBits(0, c.got.Bits(i))
				w := c.want.Window(i, 1)
				if a, bad := Accepted(got, w), rejected(got, w); a != (bad == 0) {
					t.Errorf("verify Accepted %s element %d alone (got %v, ref %v, bound %v): Accepted = %v, want %v",
						c.name, i, got.Float64(0), w.Ref[0], w.Bound[0], a, bad == 0)
				}
			}
		}
		ok, out := mend(c)
		if bad := rejected(ok, c.want); bad == 0 {
			mended++
			if !Accepted(ok, c.want) {
				t.Errorf("verify Accepted %s (mended): Accepted = false, want true (no element rejected by the single loop)", c.name)
			}
		}
		if len(out) == 0 {
			continue
		}
		picks := []int{out[0], out[len(out)-1], out[len(out)/2], out[len(out)/3]}
		for _, i := range picks {
			one := ok.Clone()
			one.SetBits(i, c.got.Bits(i))
			bad := rejected(one, c.want)
			if bad > 0 {
				faults++
			}
			if got := Accepted(one, c.want); got != (bad == 0) {
				t.Errorf("verify Accepted %s (mended but element %d = %v): Accepted = %v, want %v (%d rejected by the single loop)",
					c.name, i, one.Float64(i), got, bad == 0, bad)
			}
		}
	}
	// The generators must give both verdicts, or the test shows nothing.
	if mended == 0 || faults == 0 {
		t.Fatalf("verify Accepted: %d mended outputs accepted, %d single faults: want both > 0", mended, faults)
	}
}

// TestAcceptedNil: no output or no Expected is nothing to reject, as
// Compute counts nothing for them.
func TestAcceptedNil(t *testing.T) {
	got := tensor.MustNew(tensor.Float16, 3)
	if !Accepted(nil, bound.NewExpected(3)) || !Accepted(got, nil) {
		t.Fatal("verify Accepted(nil, want) or Accepted(got, nil) = false, want true")
	}
}

// TestCheckVerdictsMatchesCheck holds CheckVerdicts to Check: the same
// result, every field, wherever the bound rejects an output or another
// policy judges; the same verdicts, and metrics of N alone, where every
// output is accepted.
func TestCheckVerdictsMatchesCheck(t *testing.T) {
	s := Subject{Op: "accepted"}
	allclose, err := ParsePolicy("allclose")
	if err != nil {
		t.Fatal(err)
	}
	var accepted, rejectedOutputs int
	for _, c := range acceptedCases(t) {
		ok, _ := mend(c)
		for _, got := range []*tensor.Tensor{c.got, ok} {
			// Two outputs, the other always accepted: one rejected output
			// is enough for the metrics of both.
			outs := map[string]*tensor.Tensor{"a": got, "b": ok}
			wants := map[string]*bound.Expected{"a": c.want, "b": c.want}
			for _, pols := range [][]Policy{nil, {DefaultPolicy()}, {DefaultPolicy(), allclose}} {
				want, err1 := Check(s, outs, wants, nil, pols)
				res, err2 := CheckVerdicts(s, outs, wants, nil, pols)
				if err1 != nil || err2 != nil {
					t.Fatalf("verify CheckVerdicts %s: errors %v, %v", c.name, err2, err1)
				}
				if len(pols) < 2 && Accepted(got, c.want) && Accepted(ok, c.want) {
					accepted++
					if !res.Pass || !want.Pass || len(res.Outputs) != 2 {
						t.Fatalf("verify CheckVerdicts %s: accepted outputs: got pass %v / want pass %v (Check)", c.name, res.Pass, want.Pass)
					}
					for k, o := range res.Outputs {
						w := want.Outputs[k]
						if o.Name != w.Name || o.Metrics.N != w.Metrics.N || len(o.Verdicts) != 1 || !o.Verdicts[0].Pass || o.Verdicts[0].Policy != "bound" {
							t.Fatalf("verify CheckVerdicts %s: output %s = %+v, want the verdict of %+v", c.name, o.Name, o, w)
						}
					}
					continue
				}
				if !want.Pass {
					rejectedOutputs++
				}
				if g, w := fmt.Sprintf("%+v", res), fmt.Sprintf("%+v", want); g != w {
					t.Fatalf("verify CheckVerdicts %s policies %v: got %s / want (Check) %s", c.name, pols, g, w)
				}
			}
		}
	}
	if accepted == 0 || rejectedOutputs == 0 {
		t.Fatalf("verify CheckVerdicts: %d accepted, %d rejected results: want both > 0", accepted, rejectedOutputs)
	}
	// Arguments Check refuses: CheckVerdicts refuses them with its words.
	got := tensor.MustNew(tensor.Float16, 3)
	short := map[string]*bound.Expected{"a": bound.NewExpected(2)}
	for _, tt := range []struct {
		name string
		got  map[string]*tensor.Tensor
		want map[string]*bound.Expected
		pols []Policy
	}{
		{"length mismatch", map[string]*tensor.Tensor{"a": got}, short, nil},
		{"missing output", map[string]*tensor.Tensor{}, short, nil},
		{"nil policy", map[string]*tensor.Tensor{"a": got}, map[string]*bound.Expected{"a": bound.NewExpected(3)}, []Policy{nil}},
	} {
		_, err1 := Check(s, tt.got, tt.want, nil, tt.pols)
		_, err2 := CheckVerdicts(s, tt.got, tt.want, nil, tt.pols)
		if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
			t.Errorf("verify CheckVerdicts (%s): error %v, want Check's %v", tt.name, err2, err1)
		}
	}
}

// TestAcceptedSpecialGrid judges every pairing of a special exact value
// (NaN, ±Inf, zeros of either sign, the overflow threshold and past it,
// subnormals, the smallest normal, a tie) with a special got (the same
// and NaN, ±Inf, zeros, ±MaxFinite, the rounding and its neighbour), one
// element at a time, under both overflow and subnormal profiles, against
// a compact Expected: Accepted must agree with the single loop on the
// materialized one for each.
func TestAcceptedSpecialGrid(t *testing.T) {
	nums := []tensor.Numerics{{}, {Overflow: tensor.OverflowSaturate}, {Subnormals: tensor.SubnormalFlush},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush}}
	var accepted, rejectedN int
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
		f, _ := d.FloatFormat()
		mf := f.MaxFinite()
		half := float64(f.Ulp(mf) / 2)
		// The float64 values either side of the overflow threshold (the
		// largest that rounds to MaxFinite, the smallest beyond it), and
		// FuzzCompute's special values.
		thr := mf + half
		rs := []float64{mf + 3*half, 1.5, math.Nextafter(thr, 0), -math.Nextafter(thr, 0), math.Nextafter(thr, math.Inf(1))}
		for k := range byte(computeSpecials) {
			rs = append(rs, computeSpecial(d, k))
		}
		for _, num := range nums {
			for _, r := range rs {
				rnd := num.Round(r, d)
				gs := []float64{r, rnd, math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), mf, -mf}
				if !math.IsNaN(rnd) && !math.IsInf(rnd, 0) {
					gs = append(gs, tensor.Numerics{}.Round(rnd+float64(f.Ulp(rnd)), d))
				}
				for _, g := range gs {
					src := func(off int, dst []float64) { dst[0] = r }
					compact := bound.NewExactFrom(1, d, num, src)
					full := bound.NewExpected(1)
					full.SetExact(0, r, d, num)
					got := tensor.MustNew(d, 1)
					got.SetFloat64(0, g, tensor.Numerics{})
					bad := rejected(got, full)
					if bad == 0 {
						accepted++
					} else {
						rejectedN++
					}
					if a := Accepted(got, compact); a != (bad == 0) {
						t.Errorf("verify Accepted %s %v exact %v got %v: Accepted = %v, want %v", d, num, r, got.Float64(0), a, bad == 0)
					}
				}
			}
		}
	}
	if accepted == 0 || rejectedN == 0 {
		t.Fatalf("verify Accepted grid: %d accepted, %d rejected: want both > 0", accepted, rejectedN)
	}
}

// TestAcceptRunMatchesGo holds acceptRun's vector loop to its Go loop on
// exact values of every class (short-form values and ties, zeros,
// subnormals, the overflow threshold, NaN, ±Inf) with gots their
// roundings, but for one element (a neighbour, the other zero, a NaN)
// at every position of runs up to 67 long, and on the same with every
// got a rounding: the same count, and from the vector loop alone, the
// whole groups of four before the Go loop's stop.
func TestAcceptRunMatchesGo(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2")
	}
	const seed = 91
	r := rand.New(rand.NewPCG(seed, 0))
	for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
		f, _ := d.FloatFormat()
		sf, _ := bound.NewShortForm(d)
		var vec exactRunVec
		vec.set(&sf, 0, 0, 0, 0)
		special := []float64{0, math.Copysign(0, -1), f.MinSubnormal(), f.MinNormal(), f.MaxFinite(),
			f.MaxFinite() + float64(f.Ulp(f.MaxFinite())/2), math.Inf(1), math.Inf(-1), math.NaN(), math.Float64frombits(0x7ff4000000000001), 1 + float64(f.Ulp(1)/2)}
		for _, inf := range []bool{false, true} {
			for n := range 68 {
				for bad := -1; bad < n; bad++ {
					gv, rv := make([]float64, n), make([]float64, n)
					for i := range n {
						v := tensor.Numerics{}.Round(r.NormFloat64()*math.Ldexp(1, r.IntN(20)-10), d) + float64(f.Ulp(1)/4)*float64(r.IntN(3))
						if r.IntN(16) == 0 {
							v = special[r.IntN(len(special))]
						}
						rv[i], gv[i] = v, tensor.Numerics{}.Round(v, d)
						if r.IntN(4) == 0 && (v == 0 || math.IsNaN(v) || math.IsInf(v, 0)) {
							gv[i] = v // its own bits, where Round may have changed them
						}
					}
					if bad >= 0 {
						switch r.IntN(3) {
						case 0:
							gv[bad] = tensor.Numerics{}.Round(gv[bad]+float64(f.Ulp(gv[bad])), d)
						case 1:
							gv[bad] = -gv[bad]
						default:
							gv[bad] = math.NaN()
						}
					}
					if got, want := acceptRun(&vec, &sf, inf, gv, rv), acceptRunGo(&sf, inf, gv, rv); got != want {
						t.Fatalf("verify acceptRun %s inf=%v n=%d bad=%d seed=%d: got %d / want (Go loop) %d", d, inf, n, bad, seed, got, want)
					}
					// The vector loop alone takes the whole groups of four
					// before the first element the Go loop stops at: a loop
					// that stopped early would pass the check above, the Go
					// loop taking the rest.
					if n >= 4 {
						m := uint64(0)
						if inf {
							m = ^m
						}
						got, want := acceptRunAVX2(&vec, &gv[0], &rv[0], n&^3, m), min(acceptRunGo(&sf, inf, gv, rv), n)&^3
						if got != want {
							t.Fatalf("verify acceptRunAVX2 %s inf=%v n=%d bad=%d seed=%d: got %d / want (whole groups the Go loop takes) %d", d, inf, n, bad, seed, got, want)
						}
					}
				}
			}
		}
	}
}
