package ops

import (
	"fmt"
	"math"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// FuzzGEMMExpect holds gemm's Expect, fast path where it applies, to the
// interval path on every element, bit for bit (reference, bound, special
// classes), on operands whose bit patterns come from the fuzzer's bytes:
// every mode and accumulate model, alpha and beta from a table, sizes up
// to 8×40×8 (K from 0, past a blocked16 block), and every overflow and
// subnormal profile. TestGEMMFastPathAgrees does the same on the golden
// and suite cases; here the operands are whatever the coverage guidance
// finds (NaN payloads, infinities, subnormals, values near overflow).
func FuzzGEMMExpect(f *testing.F) {
	f.Add([]byte{1, 0, 0, 2, 3, 2, 0, 0x00, 0x3c, 0x00, 0xbc, 0xff, 0x7b, 0x01, 0x00})
	f.Add([]byte{2, 1, 2, 3, 20, 2, 1, 0x00, 0x7c, 0x00, 0x3c, 0x00, 0xfc, 0x00, 0x3c})
	f.Add([]byte{0, 0, 3, 1, 5, 1, 3, 0, 0, 0x80, 0x7f, 0, 0, 0x80, 0x3f, 1, 0, 0, 0})
	f.Add([]byte{5, 0, 1, 4, 33, 4, 2, 1, 2, 3, 0x80, 0x7f, 0x81, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, in, num, ok := decodeGEMMExpect(data)
		if !ok {
			return
		}
		m, k, n := in["a"].Shape[0], in["a"].Shape[1], in["b"].Shape[1]
		subject := fmt.Sprintf("gemm %v m=%d k=%d n=%d numerics=%s", p, m, k, n, num)
		got, err1 := gemm{}.expect(p, in, num, false)
		want, err2 := gemm{}.expect(p, in, num, true)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: Expect: %v (fast path), %v (interval path)", subject, err1, err2)
		}
		g, w := got["out"], want["out"]
		for i := range w.Ref {
			if math.Float64bits(g.Ref[i]) != math.Float64bits(w.Ref[i]) || math.Float64bits(g.Bound[i]) != math.Float64bits(w.Bound[i]) || g.Alt[i] != w.Alt[i] {
				t.Fatalf("%s: element (%d, %d): got ref=%v bound=%v alt=%v / want (interval path) ref=%v bound=%v alt=%v",
					subject, i/n, i%n, g.Ref[i], g.Bound[i], g.Alt[i], w.Ref[i], w.Bound[i], w.Alt[i])
			}
		}
	})
}

// gemmExpectAlphaBeta are the alpha and beta pairs FuzzGEMMExpect decodes:
// the plain product (the fast path's case) and scaled ones with and
// without c.
var gemmExpectAlphaBeta = [][2]string{{"1", "0"}, {"0.5", "0"}, {"-1.25", "1"}, {"3", "-0.5"}, {"1", "1"}, {"0", "2"}}

// decodeGEMMExpect reads a gemm case from data: mode, accumulate model,
// alpha and beta, M (1–8), K (0–40), N (1–8) and the profile from the
// first seven bytes, then the operands' bit patterns, little-endian, a,
// b, c (when beta ≠ 0) and the int8 modes' scales in turn; operands past
// the end of data are zeros. ok is false for data shorter than the
// header.
func decodeGEMMExpect(data []byte) (p Params, in map[string]*tensor.Tensor, num tensor.Numerics, ok bool) {
	if len(data) < 7 {
		return nil, nil, num, false
	}
	mode := gemmModes[int(data[0])%len(gemmModes)]
	ab := gemmExpectAlphaBeta[int(data[2])%len(gemmExpectAlphaBeta)]
	p, err := GEMM.Validate(Params{"mode": mode.Name, "accumulate": []string{GEMMSequential, GEMMBlocked16}[data[1]%2],
		"alpha": ab[0], "beta": ab[1]})
	if err != nil {
		panic(fmt.Sprintf("gemm fuzz: params from a fixed table must validate: %v", err))
	}
	m, k, n := 1+int(data[3])%8, int(data[4])%41, 1+int(data[5])%8
	num = tensor.Numerics{Overflow: tensor.Overflow(data[6] & 1), Subnormals: tensor.Subnormals(data[6] >> 1 & 1)}
	rest := data[7:]
	fill := func(d tensor.DType, shape ...int) *tensor.Tensor {
		t := tensor.MustNew(d, shape...)
		for i := range t.Len() {
			var bits uint64
			for b := range d.Size() {
				if len(rest) > 0 {
					bits |= uint64(rest[0]) << (8 * b)
					rest = rest[1:]
				}
			}
			t.SetBits(i, bits)
		}
		return t
	}
	in = map[string]*tensor.Tensor{"a": fill(mode.In, m, k), "b": fill(mode.In, k, n)}
	if ab[1] != "0" {
		in["c"] = fill(mode.Out, m, n)
	}
	if mode.Int8() {
		in["scale_a"], in["scale_b"] = fill(tensor.Float32, m), fill(tensor.Float32, 1)
	}
	if err := CheckInputs(GEMM, p, in); err != nil {
		panic(fmt.Sprintf("gemm fuzz: decoded inputs must hold to the contract: %v", err))
	}
	return p, in, num, true
}
