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

// sparseCompressExpectSerial is sparse_compress's ExpectGiven in its
// plain serial form, all four outputs ordinary Expected sets: the
// selection as ExpectGiven makes it (the returned one when CheckSelection
// accepts it, else reference.SelectTopK), k_out and v_out every element
// exact (SetExact) at its copied element under the default profile
// (which rounds an fp16 value to itself), whatever the run's profile;
// indices and mask as they were before they became compact, Ref the
// integer and Bound 0, not exact.
func sparseCompressExpectSerial(p Params, in, out map[string]*tensor.Tensor) map[string]*bound.Expected {
	cfg, _ := ParseSparseCompress(p)
	k, v := in["k"], in["v"]
	h, l, d := k.Shape[0], k.Shape[1], k.Shape[2]
	keep := reference.KeepCount(l, cfg.KeepRatio, cfg.Sinks)
	kOut, vOut := bound.NewExpected(h*keep*d), bound.NewExpected(h*keep*d)
	indices, mask := bound.NewExpected(h*keep), bound.NewExpected(h*l)
	for hh := range h {
		// The selection is not what this model is for (the Expected
		// forms are): both resolve it with compressSelection.
		for t, i := range compressSelection(k, hh, cfg.Sinks, keep, out["indices"]) {
			indices.Ref[hh*keep+t] = float64(i)
			mask.Ref[hh*l+i] = 1
			for j := range d {
				kOut.SetExact((hh*keep+t)*d+j, k.Float64((hh*l+i)*d+j), tensor.Float16, tensor.Numerics{})
				vOut.SetExact((hh*keep+t)*d+j, v.Float64((hh*l+i)*d+j), tensor.Float16, tensor.Numerics{})
			}
		}
	}
	return map[string]*bound.Expected{"k_out": kOut, "v_out": vOut, "indices": indices, "mask": mask}
}

// sparseCompressOutputs returns the outputs a serial Expected set
// describes: the rows and integers at their Refs, bit for bit.
func sparseCompressOutputs(p Params, in map[string]*tensor.Tensor, e map[string]*bound.Expected) map[string]*tensor.Tensor {
	specs, _ := SparseCompress.Outputs(p, in)
	out := map[string]*tensor.Tensor{}
	for _, s := range specs {
		t := tensor.MustNew(s.DType, s.Shape...)
		for i, x := range e[s.Name].Ref {
			t.SetFloat64(i, x, tensor.Numerics{})
		}
		out[s.Name] = t
	}
	return out
}

// corruptSparseCompress changes n random elements of the outputs: a row
// element to the other zero, a NaN of another payload, an ulp away or
// another row's element; an index to another token (which may make
// another acceptable selection, or none); a mask byte flipped.
func corruptSparseCompress(r *rand.Rand, out map[string]*tensor.Tensor, n int) {
	for range n {
		switch r.IntN(4) {
		case 0, 1:
			x := out[[]string{"k_out", "v_out"}[r.IntN(2)]].F16()
			if len(x) == 0 {
				continue
			}
			i := r.IntN(len(x))
			b := x[i].Bits()
			switch r.IntN(4) {
			case 0:
				b ^= 0x8000
			case 1:
				b = 0x7E00 | uint16(r.IntN(0x200))
			case 2:
				b++
			default:
				b = x[r.IntN(len(x))].Bits()
			}
			x[i] = float16.Frombits(b)
		case 2:
			if x := out["indices"].I32(); len(x) > 0 {
				x[r.IntN(len(x))] += int32(r.IntN(5) - 2)
			}
		default:
			if x := out["mask"].U8(); len(x) > 0 {
				x[r.IntN(len(x))] ^= 1
			}
		}
	}
}

// TestSparseCompressExpectMatchesSerial holds ExpectGiven to the serial
// form (sparseCompressExpectSerial): every output compact and,
// materialized, k_out and v_out the serial Ref, Bound, Alt and Rounded bit
// for bit with every element exact, indices and mask the serial Ref,
// Bound and Alt with every element exact at its Ref (an integer exact
// element accepts what Bound 0 does); and, on the reference's outputs
// with random elements changed (corruptSparseCompress: the other zero,
// another NaN, an ulp off, another index, a mask flipped), verify's
// metrics and every policy's verdict the same from either. Every dist,
// zeros of both signs and NaNs of several payloads planted in v, shapes
// with sinks past L and an empty L, profiles the default and
// flush+saturate.
func TestSparseCompressExpectMatchesSerial(t *testing.T) {
	var pols []verify.Policy
	for _, s := range []string{"bound", "exact", "allclose", "ulp", "ascend-thousandth", "ascend-mere", "ascend-mixed"} {
		pols = append(pols, verify.MustParsePolicy(s))
	}
	type shape struct {
		h, l, d      int
		ratio, sinks string
	}
	seed := uint64(100)
	for _, sh := range []shape{{2, 16, 8, "0.5", "2"}, {3, 33, 4, "0.3", "0"}, {1, 3, 8, "0.5", "5"}, {2, 0, 4, "0.5", "2"}, {4, 40, 1, "0.7", "1"}} {
		p, err := SparseCompress.Validate(Params{"keep_ratio": sh.ratio, "sinks": sh.sinks})
		if err != nil {
			t.Fatal(err)
		}
		for _, dist := range SparseCompress.Dists() {
			for _, num := range []tensor.Numerics{{}, {Subnormals: tensor.SubnormalFlush, Overflow: tensor.OverflowSaturate}} {
				seed++
				ctx := fmt.Sprintf("sparse_compress %s h=%d l=%d d=%d dist=%s num=%v seed=%d", p, sh.h, sh.l, sh.d, dist, num, seed)
				in, err := SparseCompress.Generate(p, Gen{Dims: map[string]int{"h": sh.h, "l": sh.l, "d": sh.d}, Dist: dist, Seed: seed})
				if err != nil {
					t.Fatalf("%s: %v", ctx, err)
				}
				r := rand.New(rand.NewPCG(seed, 7))
				vb := in["v"].F16()
				for i := range vb {
					if r.IntN(4) == 0 {
						vb[i] = float16.Frombits([]uint16{0x0000, 0x8000, 0x7E00, 0xFE01, 0x0001}[r.IntN(5)])
					}
				}
				ref := sparseCompressExpectSerial(p, in, nil)
				golden := sparseCompressOutputs(p, in, ref)
				for trial := range 8 {
					got := map[string]*tensor.Tensor{}
					for n, x := range golden {
						got[n] = x.Clone()
					}
					if trial > 0 {
						corruptSparseCompress(r, got, 1+r.IntN(4))
					}
					want, err := ExpectFor(SparseCompress, p, in, got, num)
					if err != nil {
						t.Fatalf("%s trial=%d: %v", ctx, trial, err)
					}
					serial := sparseCompressExpectSerial(p, in, got)
					for name, w := range serial {
						if !want[name].Compact() {
							t.Fatalf("%s trial=%d: %s: Expected is not compact", ctx, trial, name)
						}
						full := *want[name]
						full.Materialize()
						if msg := sameExpectedBitsInt(&full, w); msg != "" {
							t.Fatalf("%s trial=%d: %s: %s", ctx, trial, name, msg)
						}
					}
					s := verify.Subject{Op: "sparse_compress", Params: p.String(), Seed: seed}
					sameJudgement(t, ctx, trial, s, got, want, serial, golden, pols)
				}
			}
		}
	}
}

// sameExpectedBitsInt is sameExpectedBits where want's integer outputs
// are ordinary at Bound 0: got's element must then be exact with Rounded
// its Ref (what an integer exact element is), the rest bit for bit.
func sameExpectedBitsInt(got, want *bound.Expected) string {
	if want.Exact != nil {
		return sameExpectedBits(got, want)
	}
	w := bound.NewExpected(want.Len())
	for i := range want.Len() {
		if want.Bound[i] != 0 || want.Alt[i] != 0 || math.IsNaN(want.Ref[i]) {
			return fmt.Sprintf("element %d: want ref=%v bound=%v alt=%v, not an exact integer", i, want.Ref[i], want.Bound[i], want.Alt[i])
		}
		w.SetExact(i, want.Ref[i], tensor.Int32, tensor.Numerics{})
	}
	return sameExpectedBits(got, w)
}
