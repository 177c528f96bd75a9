package ops

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
	"github.com/x448/float16"
)

// sparse24PruneExpectSerial is sparse24_prune's Expect in its plain
// serial form: the float64 reference (reference.Prune24) one group at a
// time, both outputs ordinary Expected sets whose every element is exact
// (SetExact): values a copy of the kept w under the default profile
// (IEEE overflow, subnormals kept, which round an fp16 value to itself),
// whatever the run's profile, meta the byte.
func sparse24PruneExpectSerial(m, k int, w []float64, num tensor.Numerics) (vals, meta *bound.Expected) {
	keep := reference.Prune24(w, m, k)
	vals, meta = bound.NewExpected(m*k/2), bound.NewExpected(m*k/4)
	for g := 0; g < m*k/4; g++ {
		for t := 0; t < 2; t++ {
			vals.SetExact(2*g+t, w[4*g+keep[2*g+t]], tensor.Float16, tensor.Numerics{})
		}
		meta.SetExact(g, float64(EncodeMeta24(keep[2*g], keep[2*g+1])), tensor.Uint8, num)
	}
	return vals, meta
}

// prune24Bits fills w with fp16 values that make the selection's corner
// cases common: every group drawn from a small pool of patterns holding
// ±0, equal magnitudes of both signs, subnormals, MaxFinite, ±Inf and
// NaNs of several payloads and signs, or else random bit patterns.
func prune24Bits(r *rand.Rand, w *tensor.Tensor) {
	pool := []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3800, 0xB800,
		0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7FFF, 0xFD55}
	bits := w.F16()
	for g := 0; g < len(bits)/4; g++ {
		random := r.IntN(4) == 0
		for i := range 4 {
			b := pool[r.IntN(len(pool))]
			if random {
				b = uint16(r.Uint32())
			}
			bits[4*g+i] = float16.Frombits(b)
		}
	}
}

// TestSparse24PruneExpectMatchesReference holds Expect to the serial
// float64 form (sparse24PruneExpectSerial): both outputs compact and,
// materialized, the serial Ref, Bound, Alt and Rounded bit for bit with
// every element exact; and,
// on outputs that are the reference's with random elements changed
// (another value of the group, the sign flipped, ±0 swapped, NaN, an
// ulp off, another or a malformed meta byte), verify's metrics and every
// policy's verdict the same from either Expected. Shapes cover one
// group, odd rows, rows of one block and a parallel split; inputs every
// dist and corner-case bits; profiles the default and flush+saturate.
func TestSparse24PruneExpectMatchesReference(t *testing.T) {
	var pols []verify.Policy
	for _, s := range []string{"bound", "exact", "allclose", "ulp", "ascend-thousandth", "ascend-mere", "ascend-mixed", "ascend-dual"} {
		pols = append(pols, verify.MustParsePolicy(s))
	}
	p, err := Sparse24Prune.Validate(Params{})
	if err != nil {
		t.Fatal(err)
	}
	dists := append(Sparse24Prune.Dists(), "bits")
	seed := uint64(0)
	for _, sh := range [][2]int{{1, 4}, {3, 8}, {7, 36}, {2, 4100}, {20, 2048}} {
		m, k := sh[0], sh[1]
		for _, dist := range dists {
			for _, num := range []tensor.Numerics{{}, {Subnormals: tensor.SubnormalFlush, Overflow: tensor.OverflowSaturate}} {
				seed++
				gd := dist
				if dist == "bits" {
					gd = DistUniform
				}
				in, err := Sparse24Prune.Generate(p, Gen{Dims: map[string]int{"m": m, "k": k}, Dist: gd, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(seed, 24))
				if dist == "bits" {
					prune24Bits(r, in["w"])
				}
				ctx := fmt.Sprintf("sparse24_prune %s m=%d k=%d dist=%s num=%v seed=%d", p, m, k, dist, num, seed)
				want, err := Sparse24Prune.Expect(p, in, num)
				if err != nil {
					t.Fatalf("%s: %v", ctx, err)
				}
				sv, sm := sparse24PruneExpectSerial(m, k, in["w"].Float64s(), num)
				for _, o := range []struct {
					name string
					want *bound.Expected
				}{{"values", sv}, {"meta", sm}} {
					if !want[o.name].Compact() {
						t.Fatalf("%s: %s: Expected is not compact", ctx, o.name)
					}
					full := *want[o.name]
					full.Materialize()
					if msg := sameExpectedBits(&full, o.want); msg != "" {
						t.Fatalf("%s: %s: %s", ctx, o.name, msg)
					}
				}
				golden := prune24Outputs(t, m, k, sv, sm)
				for trial := range 6 {
					got := map[string]*tensor.Tensor{"values": golden["values"].Clone(), "meta": golden["meta"].Clone()}
					if trial > 0 {
						corruptPrune24(r, in["w"], got, 1+r.IntN(6))
					}
					s := verify.Subject{Op: "sparse24_prune", Params: p.String(), Seed: seed}
					sameJudgement(t, ctx, trial, s, got, want, map[string]*bound.Expected{"values": sv, "meta": sm}, golden, pols)
				}
			}
		}
	}
}

// sameExpectedBits describes the first difference between got and want
// bit for bit in Ref, Bound, Alt, the exact mark and, at an exact
// element, Rounded ("" when none).
func sameExpectedBits(got, want *bound.Expected) string {
	if got.Len() != want.Len() {
		return fmt.Sprintf("%d elements, want %d", got.Len(), want.Len())
	}
	for i := range want.Len() {
		gr, gb, ga := got.RefAt(i), got.BoundAt(i), got.AltAt(i)
		wr, wb, wa := want.RefAt(i), want.BoundAt(i), want.AltAt(i)
		if math.Float64bits(gr) != math.Float64bits(wr) || math.Float64bits(gb) != math.Float64bits(wb) || ga != wa {
			return fmt.Sprintf("element %d: got ref=%v bound=%v alt=%v, want ref=%v bound=%v alt=%v", i, gr, gb, ga, wr, wb, wa)
		}
		if got.IsExact(i) != want.IsExact(i) {
			return fmt.Sprintf("element %d: got exact=%v, want exact=%v", i, got.IsExact(i), want.IsExact(i))
		}
		if g, w := got.RoundedAt(i), want.RoundedAt(i); math.Float64bits(g) != math.Float64bits(w) {
			return fmt.Sprintf("element %d: got rounded=%v, want %v", i, g, w)
		}
	}
	return ""
}

// prune24Outputs returns the outputs the serial Expected sets describe:
// values the kept w (bit for bit: the Refs are fp16 values), meta the
// bytes.
func prune24Outputs(t *testing.T, m, k int, vals, meta *bound.Expected) map[string]*tensor.Tensor {
	t.Helper()
	v := tensor.MustNew(tensor.Float16, m, k/2)
	mt := tensor.MustNew(tensor.Uint8, m, k/4)
	for i, x := range vals.Ref {
		v.SetFloat64(i, x, tensor.Numerics{})
	}
	for i, x := range meta.Ref {
		mt.U8()[i] = uint8(x)
	}
	return map[string]*tensor.Tensor{"values": v, "meta": mt}
}

// corruptPrune24 changes n random elements of the outputs: a value to
// another of its group, its negation, the other zero, a NaN or an ulp
// away; a meta byte to another valid or a malformed one.
func corruptPrune24(r *rand.Rand, w *tensor.Tensor, out map[string]*tensor.Tensor, n int) {
	vals, meta := out["values"].F16(), out["meta"].U8()
	wb := w.F16()
	for range n {
		if r.IntN(3) == 0 {
			meta[r.IntN(len(meta))] = uint8(r.IntN(32))
			continue
		}
		i := r.IntN(len(vals))
		b := vals[i].Bits()
		switch r.IntN(5) {
		case 0:
			b = wb[4*(i/2)+r.IntN(4)].Bits()
		case 1:
			b ^= 0x8000
		case 2:
			if b&0x7FFF == 0 {
				b ^= 0x8000
			}
		case 3:
			b = 0x7E00
		default:
			b++
		}
		vals[i] = float16.Frombits(b)
	}
}
