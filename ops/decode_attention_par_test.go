package ops

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// TestDecodeExpectMatchesSerial holds decode_attention's Expect, split
// over (batch entry, kv head) items on all cores with reused buffers, to
// the serial per-head evaluation it replaced (rows read element by
// element, reference.Attention, the bound's loops in their original
// order), bit for bit, in every layout, cache dtype and dist, on shapes
// with several items per core and grouped query heads.
func TestDecodeExpectMatchesSerial(t *testing.T) {
	const seed = 23
	// The second shape's sequences span several of Expect's chunks of
	// positions, with partial last chunks.
	for _, dims := range []map[string]int{
		{"b": 7, "s": 8, "hq": 6, "h": 3, "d": 24, "l": 40, "bs": 8},
		{"b": 5, "s": 6, "hq": 4, "h": 2, "d": 8, "l": 3*decodeChunk + 7, "bs": 16},
	} {
		testDecodeExpectMatchesSerial(t, dims, seed)
	}
}

func testDecodeExpectMatchesSerial(t *testing.T, dims map[string]int, seed uint64) {
	for _, layout := range []string{KVContiguous, KVPaged} {
		for _, dt := range []string{KVFP16, KVInt8} {
			for _, dist := range DecodeAttention.Dists() {
				p, err := DecodeAttention.Validate(Params{"layout": layout, "cache_dtype": dt})
				if err != nil {
					t.Fatal(err)
				}
				in, err := DecodeAttention.Generate(p, Gen{Dims: dims, Dist: dist, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				num := tensor.Numerics{}
				got, err := DecodeAttention.Expect(p, in, num)
				if err != nil {
					t.Fatal(err)
				}
				want := decodeExpectSerial(t, p, in, num)
				if i := firstExpectedDiff(got["out"], want); i >= 0 {
					t.Fatalf("decode_attention %s dist=%s dims=%v seed=%d: element %d: got %s / want %s", p, dist, dims, seed, i, expectedAt(got["out"], i), expectedAt(want, i))
				}
			}
		}
	}
}

// decodeExpectSerial is decode_attention's Expect as one serial loop over
// batch entries and heads, each head's rows and buffers freshly made.
func decodeExpectSerial(t *testing.T, p Params, in map[string]*tensor.Tensor, num tensor.Numerics) *bound.Expected {
	t.Helper()
	g, b, hq, err := decodeGeom(DecodeAttention, p, in)
	if err != nil {
		t.Fatal(err)
	}
	var bt []int32
	if g.Paged {
		bt = in["block_tables"].I32()
	}
	rowsOf := func(cache, scale string, s, n, h int) [][]float64 {
		c := in[cache]
		rows := make([][]float64, n)
		for pos := range n {
			r := g.Row(bt, s, pos)
			off := (r*g.H + h) * g.D
			row := make([]float64, g.D)
			sc := 1.0
			if g.Int8 {
				sc = in[scale].Float64(r*g.H + h)
			}
			for i := range row {
				row[i] = c.Float64(off+i) * sc
			}
			rows[pos] = row
		}
		return rows
	}
	sigma := DecodeScale(p, g.D)
	grp := hq / g.H
	lens, ids := in["seq_lens"].I32(), in["seq_ids"].I32()
	e := bound.NewExpected(b * hq * g.D)
	qv := in["q"].Float64s()
	for bb, s := range ids {
		if s < 0 || lens[s] == 0 {
			continue
		}
		n := int(lens[s])
		for h := range g.H {
			k := rowsOf("k_cache", "k_scale", int(s), n, h)
			v := rowsOf("v_cache", "v_scale", int(s), n, h)
			for hh := h * grp; hh < (h+1)*grp; hh++ {
				off := (bb*hq + hh) * g.D
				o, sc, pr, mag := reference.Attention(qv[off:off+g.D], k, v, sigma)
				bnd := decodeBoundSerial(g, o, sc, pr, mag, v)
				for i := range g.D {
					e.Ref[off+i], e.Bound[off+i], e.Alt[off+i] = bound.Output(o[i], bnd[i], tensor.Float16, num)
				}
			}
		}
	}
	return e
}

// decodeBoundSerial is decodeAttentionBound with an element-outer loop.
// Its products are rounded on their own (float64(…)), as Expect's are,
// so no fusion the compiler may do (arm64, GOAMD64=v3) makes them differ.
func decodeBoundSerial(g KVGeom, o, s, p, mag []float64, v [][]float64) []float64 {
	u := tensor.Float32.UnitRoundoff()
	n := len(s)
	extra := 0
	if g.Int8 {
		extra = 1
	}
	gs := bound.Gamma(g.D+2+extra, u)
	m := math.Inf(-1)
	delta := 0.0
	for j := range n {
		m = math.Max(m, s[j])
		delta = math.Max(delta, gs*mag[j])
	}
	rj := make([]float64, n)
	rmax := 0.0
	for j := range n {
		hj := float64(gs*mag[j]) + float64(2*u*(math.Abs(s[j]-m)+2*delta))
		rj[j] = float64(math.Exp(hj)*math.Pow(1+DecodeExpRelErr, 2)*math.Pow(1+u, 2)) - 1
		rmax = math.Max(rmax, rj[j])
	}
	gn := bound.Gamma(n+4+extra, u)
	out := make([]float64, len(o))
	if rmax >= 1 || gn >= 1 {
		for i := range out {
			out[i] = math.Inf(1)
		}
		return out
	}
	for i := range o {
		var t3, a float64
		for j := range n {
			t3 += float64(p[j] * rj[j] * math.Abs(v[j][i]-o[i]))
			a += float64(p[j] * math.Abs(v[j][i]))
		}
		t := (t3 + 2*gn/(1-gn)*a*(1+rmax)/(1-rmax)) / (1 - rmax)
		out[i] = (t + float64(u*(math.Abs(o[i])+t))) * (1 + 0x1p-40)
	}
	return out
}

// TestF16ToF64: the field-moving conversion agrees with float16's on
// every bit pattern (NaNs by bits).
func TestF16ToF64(t *testing.T) {
	for b := range 1 << 16 {
		x := float16.Frombits(uint16(b))
		got, want := f16ToF64(x), float64(x.Float32())
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("f16ToF64 bits=%#04x: got %g (%#x) / want %g (%#x)", b, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

// TestDecodeExpectSpecialsMatchSerial holds Expect to the serial
// evaluation with both the assembly kernels (where available) and the
// portable ones, on random shapes (head sizes off the kernels' 4- and
// 16-wide blocks, group sizes off the four-head lanes) whose q and read
// cache values include ±Inf, NaN, fp16's largest values and, for int8,
// zero, infinite and NaN scales. Elements agree bit for bit, a NaN
// reference matching any NaN.
func TestDecodeExpectSpecialsMatchSerial(t *testing.T) {
	const seed = 57
	rng := rand.New(rand.NewPCG(seed, 0))
	saved := daUseAsm
	defer func() { daUseAsm = saved }()
	for trial := range 24 {
		h := 1 + rng.IntN(3)
		dims := map[string]int{"b": 1 + rng.IntN(6), "s": 3 + rng.IntN(5), "h": h, "hq": h * (1 + rng.IntN(5)),
			"d": []int{1, 5, 16, 20, 33, 64}[rng.IntN(6)], "l": 1 + rng.IntN(150), "bs": 1 + rng.IntN(20)}
		layout := []string{KVContiguous, KVPaged}[trial%2]
		dt := []string{KVFP16, KVInt8}[trial/2%2]
		dist := DecodeAttention.Dists()[rng.IntN(len(DecodeAttention.Dists()))]
		p, err := DecodeAttention.Validate(Params{"layout": layout, "cache_dtype": dt})
		if err != nil {
			t.Fatal(err)
		}
		in, err := DecodeAttention.Generate(p, Gen{Dims: dims, Dist: dist, Seed: seed + uint64(trial)})
		if err != nil {
			t.Fatalf("decode_attention %s dims=%v seed=%d: %v", p, dims, seed+uint64(trial), err)
		}
		specials := []float64{math.Inf(1), math.Inf(-1), math.NaN(), 65504, -65504, math.Copysign(0, -1)}
		for _, name := range []string{"q", "k_cache", "v_cache", "k_scale", "v_scale"} {
			x, ok := in[name]
			if !ok || x.DType == tensor.Int8 {
				continue
			}
			for range 1 + x.Len()/200 {
				v := specials[rng.IntN(len(specials))]
				if name == "k_scale" || name == "v_scale" {
					v = []float64{0, math.Inf(1), math.NaN()}[rng.IntN(3)]
				}
				x.SetFloat64(rng.IntN(x.Len()), v, tensor.Numerics{})
			}
		}
		want := decodeExpectSerial(t, p, in, tensor.Numerics{})
		for _, asm := range []bool{true, false} {
			daUseAsm = asm && saved
			got, err := DecodeAttention.Expect(p, in, tensor.Numerics{})
			if err != nil {
				t.Fatalf("decode_attention %s dist=%s dims=%v seed=%d: %v", p, dist, dims, seed+uint64(trial), err)
			}
			if i := firstExpectedDiffNaN(got["out"], want); i >= 0 {
				t.Fatalf("decode_attention %s dist=%s dims=%v seed=%d useAsm=%v: element %d: got %s / want %s", p, dist, dims, seed+uint64(trial), daUseAsm, i, expectedAt(got["out"], i), expectedAt(want, i))
			}
		}
	}
}

// firstExpectedDiffNaN is firstExpectedDiff with any NaN reference or
// bound matching any NaN (payloads depend on operand order in hardware).
func firstExpectedDiffNaN(a, b *bound.Expected) int {
	if a.Len() != b.Len() {
		return 0
	}
	for i := range a.Len() {
		if !sameF64(a.Ref[i], b.Ref[i]) || !sameF64(a.Bound[i], b.Bound[i]) || a.Alt[i] != b.Alt[i] {
			return i
		}
	}
	return -1
}
