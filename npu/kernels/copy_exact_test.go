package kernels

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
	"github.com/x448/float16"
)

// copyProfiles are the numerics profiles the copy tests judge under: a
// copy moves bits, so the profile's flush and saturation must not change
// what a copied subnormal, ±Inf or NaN is expected to be.
var copyProfiles = []tensor.Numerics{{}, {Subnormals: tensor.SubnormalFlush, Overflow: tensor.OverflowSaturate}}

// checkCopyOutput holds the bound policy to output name of out, the
// emulator's correct outputs, whose elements are copies of input
// elements: out passes; a zero of either sign turned into the other
// zero fails that output alone, the failure naming the element and the
// sign of zero; a NaN with another payload or sign passes (the bound
// policy takes a copied NaN as any NaN, bound.Identical; payloads are
// the exact policy's, against a golden); a NaN turned into +Inf fails,
// naming the element. out[name] must hold +0, −0 and a NaN. ctx names the
// case (op, params, seed, profile).
func checkCopyOutput(t *testing.T, ctx string, s verify.Subject, out map[string]*tensor.Tensor, want map[string]*bound.Expected, name string) {
	t.Helper()
	pols := []verify.Policy{verify.MustParsePolicy("bound")}
	judge := func(got map[string]*tensor.Tensor) *verify.Result {
		t.Helper()
		r, err := verify.Check(s, got, want, nil, pols)
		if err != nil {
			t.Fatalf("%s: %v", ctx, err)
		}
		return r
	}
	if r := judge(out); !r.Pass {
		t.Fatalf("%s: the emulator's outputs fail:\n%s", ctx, r.Failure())
	}
	// changed returns out with element i of output name set to bits b.
	changed := func(i int, b uint16) map[string]*tensor.Tensor {
		got := make(map[string]*tensor.Tensor, len(out))
		for n, x := range out {
			got[n] = x
		}
		got[name] = out[name].Clone()
		got[name].F16()[i] = float16.Frombits(b)
		return got
	}
	// failsAt checks that got fails output name alone, naming element i
	// with note.
	failsAt := func(what string, got map[string]*tensor.Tensor, i int, note string) {
		t.Helper()
		r := judge(got)
		if r.Pass {
			t.Errorf("%s: output %q element %d %s: passed, want a failure", ctx, name, i, what)
			return
		}
		for _, o := range r.Outputs {
			if o.Pass() == (o.Name == name) {
				t.Errorf("%s: output %q element %d %s: output %q pass=%v:\n%s", ctx, name, i, what, o.Name, o.Pass(), r.Failure())
			}
		}
		msg := r.Failure()
		if !strings.Contains(msg, fmt.Sprintf("[%d] ", i)) || !strings.Contains(msg, note) {
			t.Errorf("%s: output %q element %d %s: failure does not name the element and %q:\n%s", ctx, name, i, what, note, msg)
		}
	}
	var pos, neg, nan int
	for i, x := range out[name].F16() {
		switch b := x.Bits(); {
		case b == 0x0000:
			pos++
			failsAt("+0 → −0", changed(i, 0x8000), i, "(sign of zero)")
		case b == 0x8000:
			neg++
			failsAt("−0 → +0", changed(i, 0x0000), i, "(sign of zero)")
		case b&0x7C00 == 0x7C00 && b&0x03FF != 0:
			nan++
			for _, other := range []uint16{b ^ 0x0001, b ^ 0x0200, b ^ 0x8000} {
				if other&0x03FF == 0 {
					continue // an Inf, not another NaN
				}
				if r := judge(changed(i, other)); !r.Pass {
					t.Errorf("%s: output %q element %d NaN 0x%04x → NaN 0x%04x: failed, want accepted (any NaN):\n%s", ctx, name, i, b, other, r.Failure())
				}
			}
			failsAt("NaN → +Inf", changed(i, 0x7C00), i, "got=+Inf")
		}
	}
	if pos == 0 || neg == 0 || nan == 0 {
		t.Fatalf("%s: output %q holds %d +0, %d −0 and %d NaN, want each (the setup)", ctx, name, pos, neg, nan)
	}
}

// TestSparse24PruneValuesExactCopy: sparse24_prune's values are the kept
// w bit for bit, so the bound policy fails a +0 written as −0 (or −0 as
// +0) and names the element, where bound 0 around the value accepted
// either zero; a NaN may come back with another payload. w holds groups
// of zeros of both signs, NaNs, subnormals and ±Inf among random values,
// and the profiles flush and saturate too (a copy keeps a subnormal and
// an Inf whatever the profile).
func TestSparse24PruneValuesExactCopy(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	p, err := ops.Sparse24Prune.Validate(ops.Params{})
	if err != nil {
		t.Fatal(err)
	}
	const m, k, seed = 6, 40, 24
	in, err := ops.Sparse24Prune.Generate(p, ops.Gen{Dims: map[string]int{"m": m, "k": k}, Dist: ops.DistTies, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	groups := [][4]uint16{
		{0x0000, 0x8000, 0x0000, 0x8000}, // kept: +0, −0
		{0x8000, 0x0000, 0x8000, 0x0000}, // kept: −0, +0
		{0x3C00, 0x8000, 0x0001, 0x0000}, // kept: 1, the subnormal
		{0x7E01, 0x3C00, 0x8000, 0x4000}, // kept: NaN (payload 0x201), 2
		{0x0000, 0xFE55, 0x7C00, 0x3C00}, // kept: NaN (negative), +Inf
		{0xFC00, 0x0000, 0x8001, 0x8000}, // kept: −Inf, −subnormal
	}
	wb := in["w"].F16()
	r := rand.New(rand.NewPCG(seed, 1))
	for _, g := range groups {
		at := 4 * r.IntN(len(wb)/4)
		for j, b := range g {
			wb[at+j] = float16.Frombits(b)
		}
	}
	out, _, err := Sparse24PruneKernel(context.Background(), dev, p, in)
	if err != nil {
		t.Fatalf("sparse24_prune m=%d k=%d seed=%d: %v", m, k, seed, err)
	}
	for _, num := range copyProfiles {
		ctx := fmt.Sprintf("sparse24_prune m=%d k=%d dist=%s seed=%d num=%v", m, k, ops.DistTies, seed, num)
		want, err := ops.Sparse24Prune.Expect(p, in, num)
		if err != nil {
			t.Fatalf("%s: %v", ctx, err)
		}
		checkCopyOutput(t, ctx, verify.Subject{Op: "sparse24_prune", Params: p.String(), Seed: seed}, out, want, "values")
	}
}

// TestSparseCompressRowsExactCopy: sparse_compress's k_out and v_out are
// the selected rows bit for bit, so the bound policy fails a zero of
// either sign written as the other in either output and names the
// element; a NaN may come back with another payload. Every row of k
// holds +0, −0 and a subnormal, the sinks' rows a NaN too (a NaN ranks
// a token last, but sinks are kept), every row of v zeros of both signs,
// a subnormal, a NaN and ±Inf; under the default profile and
// flush+saturate.
func TestSparseCompressRowsExactCopy(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	p, err := ops.SparseCompress.Validate(ops.Params{"keep_ratio": "0.5", "sinks": "2"})
	if err != nil {
		t.Fatal(err)
	}
	const h, l, d, seed = 3, 24, 8, 17
	in, err := ops.SparseCompress.Generate(p, ops.Gen{Dims: map[string]int{"h": h, "l": l, "d": d}, Dist: ops.DistNormal, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	kb, vb := in["k"].F16(), in["v"].F16()
	for row := 0; row < h*l; row++ {
		kr, vr := kb[row*d:(row+1)*d], vb[row*d:(row+1)*d]
		kr[row%d], kr[(row+1)%d], kr[(row+2)%d] = float16.Frombits(0x0000), float16.Frombits(0x8000), float16.Frombits(0x8001)
		if row%l < 2 {
			kr[(row+3)%d] = float16.Frombits(0xFE01)
		}
		vr[0], vr[1], vr[2] = float16.Frombits(0x0000), float16.Frombits(0x8000), float16.Frombits(0x0001)
		vr[3], vr[4], vr[5] = float16.Frombits(0x7E01), float16.Frombits(0x7C00), float16.Frombits(0xFC00)
	}
	out, _ := runSC(t, dev, p, in, SparseCompressOptions{})
	for _, num := range copyProfiles {
		ctx := fmt.Sprintf("sparse_compress %s h=%d l=%d d=%d seed=%d num=%v", p, h, l, d, seed, num)
		want, err := ops.ExpectFor(ops.SparseCompress, p, in, out, num)
		if err != nil {
			t.Fatalf("%s: %v", ctx, err)
		}
		for _, name := range []string{"k_out", "v_out"} {
			checkCopyOutput(t, ctx, verify.Subject{Op: "sparse_compress", Params: p.String(), Seed: seed}, out, want, name)
		}
	}
}
