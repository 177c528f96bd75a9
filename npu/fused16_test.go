package npu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// fused16Cases are fp16 values (as fp32) the fp16-accumulation step meets
// at its edges: signed zeros, the smallest subnormal and the largest, the
// smallest normal, 1 and its neighbours, the largest finite value, ±Inf
// and NaN.
var fused16Cases = []uint16{
	0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0x3c01, 0x3bff,
	0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x1400, 0x9400, 0x0200,
}

// TestFused16AVX2MatchesGo holds fused16AVX2 to fused16Go bit for bit,
// and requires it to have stored at least a quarter of the elements (it
// stores more than half; the rest are tails, and groups with a NaN or an
// Inf, which the scalar step takes): random fp16 operands
// over the whole range and near each other (sums that are ties of fp16,
// cancel to subnormals or overflow past 65504), the edge values above in
// every lane, and lengths of 0 to 40 elements.
func TestFused16AVX2MatchesGo(t *testing.T) {
	if !useFused16AVX2 {
		t.Skip("no AVX2 form on this CPU or build")
	}
	const seed = 41
	r := rand.New(rand.NewPCG(seed, 0))
	stored, total := 0, 0
	for trial := range 20000 {
		n := r.IntN(41)
		c, b := make([]float32, n), make([]float32, n)
		var x float32
		switch trial % 4 {
		case 0: // anything
			x = f16Table()[uint16(r.Uint32())]
			for j := range c {
				c[j], b[j] = f16Table()[uint16(r.Uint32())], f16Table()[uint16(r.Uint32())]
			}
		case 1: // the edge values
			x = f16Table()[fused16Cases[r.IntN(len(fused16Cases))]]
			for j := range c {
				c[j], b[j] = f16Table()[fused16Cases[r.IntN(len(fused16Cases))]], f16Table()[fused16Cases[r.IntN(len(fused16Cases))]]
			}
		default: // operands of nearby exponents, so that sums are exact and round (ties, cancellation, overflow)
			e := uint16(r.IntN(31))
			pick := func() float32 {
				bits := (e+uint16(r.IntN(3)))%31<<10 | uint16(r.IntN(1024)) | uint16(r.IntN(2))<<15
				return f16Table()[bits]
			}
			x = f16Table()[0x3c00|uint16(r.IntN(4))] // 1 and a few ulps above
			if r.IntN(2) == 0 {
				x = -x
			}
			for j := range c {
				c[j], b[j] = pick(), pick()
			}
		}
		want := append([]float32(nil), c...)
		fused16Go(want, b, x)
		got := append([]float32(nil), c...)
		k := 0
		if n >= 4 {
			k = fused16AVX2(&got[0], &b[0], float64(x), n&^3)
		}
		fused16Go(got[k:], b[k:], x)
		stored += k
		total += n
		for j := range c {
			if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
				t.Fatalf("npu fused16AVX2 seed=%d trial=%d n=%d x=%#04x: element %d (c=%#04x b=%#04x, %d stored by AVX2) = %#08x, want %#08x (fused16Go)",
					seed, trial, n, float16.Fromfloat32(x).Bits(), j, float16.Fromfloat32(c[j]).Bits(), float16.Fromfloat32(b[j]).Bits(), k, math.Float32bits(got[j]), math.Float32bits(want[j]))
			}
		}
	}
	if stored < total/4 {
		t.Errorf("npu fused16AVX2 seed=%d: stored %d of %d elements, want at least a quarter", seed, stored, total)
	}
}

// TestBlockRowAVX2MatchesGo holds blockRowAVX2 to blockRowGo as
// mmadBlocked reads them: the same elements with an error (et ≠ 0), and
// the same sums bit for bit at the others, over sixteen rows of a block
// (so that sums grow, cancel and turn inexact), on fp16, bf16 and fp32
// operands, random and edge-valued (zeros of both signs, subnormals,
// ±Inf, NaN), lengths 4 to 64. (Where a NaN arises, the hardware's
// operand order may give it another payload than the compiled Go; that
// element has an error, and mmadBlocked sums it again by sumRound.)
func TestBlockRowAVX2MatchesGo(t *testing.T) {
	if !useFused16AVX2 {
		t.Skip("no AVX2 form on this CPU or build")
	}
	const seed = 43
	r := rand.New(rand.NewPCG(seed, 0))
	operand := func(kind int) float32 {
		switch kind {
		case 0:
			return f16Table()[uint16(r.Uint32())]
		case 1:
			return f16Table()[fused16Cases[r.IntN(len(fused16Cases))]]
		case 2:
			return math.Float32frombits(r.Uint32() & 0xffff0000) // bf16
		default:
			return float32(r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20))
		}
	}
	for trial := range 3000 {
		kind := trial % 4
		n := 4 * (1 + r.IntN(16))
		st, et := make([]float64, n), make([]uint64, n)
		for j := range st {
			st[j] = float64(operand(kind))
		}
		wst, wet := append([]float64(nil), st...), append([]uint64(nil), et...)
		for row := range 16 {
			x, b := operand(kind), make([]float32, n)
			for j := range b {
				b[j] = operand(kind)
			}
			blockRowGo(wst, wet, b, x)
			blockRowAVX2(&st[0], &et[0], &b[0], float64(x), n)
			for j := range st {
				if (et[j] != 0) != (wet[j] != 0) || wet[j] == 0 && math.Float64bits(st[j]) != math.Float64bits(wst[j]) {
					t.Fatalf("npu blockRowAVX2 seed=%d trial=%d kind=%d n=%d row=%d: element %d = sum %#016x errors %#016x, want %#016x %#016x (blockRowGo)",
						seed, trial, kind, n, row, j, math.Float64bits(st[j]), et[j], math.Float64bits(wst[j]), wet[j])
				}
			}
		}
	}
}
