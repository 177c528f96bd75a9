package ops

import (
	"github.com/x448/float16"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
)

// TestKVUpdateExpectMatchesSerial holds kv_update's Expect (whole-cache
// loops on all cores through per-dtype lookup tables, the projection
// split over items) to the serial code it replaced, bit for bit, in
// every layout, cache dtype and dist, on a shape small enough for the
// direct paths and one large enough for the tables (fp16 cache > 2^18
// elements) and several items per core.
func TestKVUpdateExpectMatchesSerial(t *testing.T) {
	const seed = 31
	for _, dims := range []map[string]int{
		{"b": 7, "s": 5, "h": 3, "d": 8, "l": 12, "bs": 4},
		{"b": 9, "s": 8, "h": 4, "d": 64, "l": 160, "bs": 16},
	} {
		for _, layout := range []string{KVContiguous, KVPaged} {
			for _, dt := range []string{KVFP16, KVInt8} {
				for _, dist := range KVUpdate.Dists() {
					for _, num := range []tensor.Numerics{{}, {Subnormals: tensor.SubnormalFlush, Overflow: tensor.OverflowSaturate}} {
						p, err := KVUpdate.Validate(Params{"layout": layout, "cache_dtype": dt})
						if err != nil {
							t.Fatal(err)
						}
						in, err := KVUpdate.Generate(p, Gen{Dims: dims, Dist: dist, Seed: seed})
						if err != nil {
							t.Fatal(err)
						}
						got, err := KVUpdate.Expect(p, in, num)
						if err != nil {
							t.Fatal(err)
						}
						want, err := kvUpdateExpectSerial(p, in, num)
						if err != nil {
							t.Fatal(err)
						}
						if len(got) != len(want) {
							t.Fatalf("kv_update %s dist=%s dims=%v seed=%d: got %d outputs / want %d", p, dist, dims, seed, len(got), len(want))
						}
						for name, w := range want {
							if i := firstExpectedDiff(got[name], w); i >= 0 {
								t.Fatalf("kv_update %s dist=%s dims=%v num=%+v seed=%d: %s element %d: got %s / want %s", p, dist, dims, num, seed, name, i, expectedAt(got[name], i), expectedAt(w, i))
							}
						}
					}
				}
			}
		}
	}
}

// kvUpdateExpectSerial is kv_update's Expect as it was before the
// parallel version: one serial loop per output, bound.Output per element.
func kvUpdateExpectSerial(p Params, in map[string]*tensor.Tensor, num tensor.Numerics) (map[string]*bound.Expected, error) {
	op := KVUpdate
	if err := CheckInputs(op, p, in); err != nil {
		return nil, err
	}
	g, writes, err := KVUpdateWrites(p, in)
	if err != nil {
		return nil, err
	}
	b := in["x"].Shape[0]
	hd := g.H * g.D
	u32 := tensor.Float32.UnitRoundoff()
	gam := bound.Gamma(g.D, u32)
	out := map[string]*bound.Expected{}
	// Caches and scales start as their inputs: unwritten elements.
	for _, name := range []string{"k_cache", "v_cache", "k_scale", "v_scale", "seq_lens"} {
		t, ok := in[name]
		if !ok {
			continue
		}
		e := bound.NewExpected(t.Len())
		for i := range t.Len() {
			e.Ref[i], e.Bound[i], e.Alt[i] = bound.Output(t.Float64(i), 0, t.DType, num)
		}
		out[name] = e
	}
	wr := bound.NewExpected(b)
	lens := out["seq_lens"]
	for _, w := range writes {
		wr.Ref[w.B] = 1
		lens.Ref[w.Seq]++
	}
	out["written"] = wr
	padding := make([]bool, b)
	for i, s := range in["seq_ids"].I32() {
		padding[i] = s < 0
	}
	for _, kv := range []struct{ w, newName, cache, scale string }{
		{"w_k", "new_k", "k_cache", "k_scale"}, {"w_v", "new_v", "v_cache", "v_scale"},
	} {
		v, mag := reference.Project(in["x"].Float64s(), in[kv.w].Float64s(), b, g.H, g.D)
		e := bound.NewExpected(b * hd)
		for i := range v {
			if padding[i/hd] {
				continue // zero row, exactly
			}
			e.Ref[i], e.Bound[i], e.Alt[i] = bound.Output(v[i], gam*mag[i], tensor.Float16, num)
		}
		out[kv.newName] = e
		ce := out[kv.cache]
		for _, w := range writes {
			for h := range g.H {
				src := (w.B*g.H + h) * g.D
				dst := (w.Row*g.H + h) * g.D
				if !g.Int8 {
					for i := range g.D {
						ce.Ref[dst+i], ce.Bound[dst+i], ce.Alt[dst+i] = e.Ref[src+i], e.Bound[src+i], e.Alt[src+i]
					}
					continue
				}
				amax, bmax := 0.0, 0.0
				for i := range g.D {
					amax, bmax = math.Max(amax, math.Abs(v[src+i])), math.Max(bmax, e.Bound[src+i])
				}
				se := out[kv.scale]
				si := w.Row*g.H + h
				se.Ref[si], se.Bound[si], se.Alt[si] = bound.Output(amax/127, bmax/127, tensor.Float32, num)
				for i := range g.D {
					r, bq := 0.0, 127.0
					if amax > bmax {
						a := math.Abs(v[src+i])
						r = 127 * v[src+i] / amax
						bq = float64(127*((a+e.Bound[src+i])/(amax-bmax)-a/amax)) + float64(127*4*u32)
					}
					ce.Ref[dst+i], ce.Bound[dst+i], ce.Alt[dst+i] = bound.Output(r, math.Min(bq, 254), tensor.Int8, num)
					ce.Ref[dst+i] = math.Max(-127, math.Min(127, ce.Ref[dst+i]))
				}
			}
		}
	}
	return out, nil
}

// TestKVFillFromTableRuns holds kvFillFromTable's run filling to one
// bound.Output per element on fp16 and int8 data made of runs of equal
// bit patterns (lengths around kvRunMin, NaN, ±0 and ±Inf among them)
// split over sub-ranges that cut runs and stream blocks, with and without
// the non-temporal stores.
func TestKVFillFromTableRuns(t *testing.T) {
	const seed = 61
	rng := rand.New(rand.NewPCG(seed, 0))
	saved := kvUseNT
	defer func() { kvUseNT = saved }()
	for _, num := range []tensor.Numerics{{}, {Subnormals: tensor.SubnormalFlush, Overflow: tensor.OverflowSaturate}} {
		for _, dt := range []tensor.DType{tensor.Float16, tensor.Int8} {
			n := 5000
			x := tensor.MustNew(dt, n)
			pats := []float64{math.NaN(), 0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), 1.5, -3, 6e-8}
			for i := 0; i < n; {
				run := []int{1, 2, kvRunMin - 1, kvRunMin, kvRunMin + 1, 300}[rng.IntN(6)]
				v := pats[rng.IntN(len(pats))]
				if rng.IntN(3) == 0 {
					v = float64(2*rngFloat64(rng)) - 1
				}
				for ; run > 0 && i < n; run, i = run-1, i+1 {
					x.SetFloat64(i, v, tensor.Numerics{})
				}
			}
			tab := newKVOutputTable(dt, num)
			want := bound.NewExpected(n)
			for i := range n {
				want.Ref[i], want.Bound[i], want.Alt[i] = bound.Output(x.Float64(i), 0, dt, num)
			}
			for _, nt := range []bool{true, false} {
				kvUseNT = nt && saved
				got := bound.NewExpected(n)
				for lo := 0; lo < n; {
					hi := min(n, lo+1+rng.IntN(2*kvStreamBlock))
					if dt == tensor.Int8 {
						kvFillFromTable(got, lo, hi, x.I8()[lo:hi], tab)
					} else {
						kvFillFromTable(got, lo, hi, x.F16()[lo:hi], tab)
					}
					lo = hi
				}
				if i := firstExpectedDiff(got, want); i >= 0 {
					t.Fatalf("kvFillFromTable dtype=%s num=%+v useNT=%v seed=%d: element %d (bits %#x): got %s / want %s", dt, num, kvUseNT, seed, i, x.Bits(i), expectedAt(got, i), expectedAt(want, i))
				}
			}
		}
	}
}

// TestKVFirstChangedMatchesNaive holds kvFirstChanged (slice compares over
// runs of unwritten rows) to the element loop it replaced, on fp16, int8
// and fp32 tensors with random written rows and a few flipped bits (NaN
// payloads and the sign of zero included) in written and unwritten rows,
// on tensors small enough for one range and large enough for several.
func TestKVFirstChangedMatchesNaive(t *testing.T) {
	const seed = 67
	rng := rand.New(rand.NewPCG(seed, 0))
	for trial := range 200 {
		dt := []tensor.DType{tensor.Float16, tensor.Int8, tensor.Float32}[trial%3]
		rows, rowLen := 1+rng.IntN(40), 1+rng.IntN(20)
		if trial%10 == 0 { // several ranges over cores
			rows, rowLen = 40000+rng.IntN(1000), 1
		}
		want := tensor.MustNew(dt, rows*rowLen)
		for i := range want.Len() {
			want.SetFloat64(i, []float64{math.NaN(), 0, 1, -2}[rng.IntN(4)], tensor.Numerics{})
		}
		got := want.Clone()
		for range rng.IntN(3) {
			i := rng.IntN(got.Len())
			switch dt {
			case tensor.Float16:
				got.F16()[i] ^= float16.Frombits(1 << rng.IntN(16))
			case tensor.Int8:
				got.I8()[i] ^= int8(1 << rng.IntN(8))
			default:
				got.F32()[i] = math.Float32frombits(math.Float32bits(got.F32()[i]) ^ 1<<rng.IntN(32))
			}
		}
		written := make([]bool, rows)
		for r := range written {
			written[r] = rng.IntN(3) == 0
		}
		naive := -1
		for i := range want.Len() {
			if !written[i/rowLen] && got.Bits(i) != want.Bits(i) {
				naive = i
				break
			}
		}
		if g := kvFirstChanged(got, want, rowLen, written); g != naive {
			t.Fatalf("kvFirstChanged dtype=%s rows=%d rowLen=%d trial=%d seed=%d: got %d / want %d", dt, rows, rowLen, trial, seed, g, naive)
		}
	}
}
