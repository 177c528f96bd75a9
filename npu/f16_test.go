package npu

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/tensor"
)

// TestF32ToF16 checks f32ToF16 against float16.Fromfloat32 on every
// combination of the upper 19 bits (sign, exponent, the fraction bits
// fp16 keeps) with the low 13 bits that decide rounding: zero, the
// smallest sticky bit, just below, at and above the half-way point, all
// ones.
func TestF32ToF16(t *testing.T) {
	lows := []uint32{0x0000, 0x0001, 0x0800, 0x0FFF, 0x1000, 0x1001, 0x17FF, 0x1FFF}
	for hi := uint32(0); hi < 1<<19; hi++ {
		for _, lo := range lows {
			u := hi<<13 | lo
			f := math.Float32frombits(u)
			if got, want := f32ToF16(f), float16.Fromfloat32(f); got != want {
				t.Fatalf("f32ToF16 bits=%#08x (%g): got %#04x want %#04x", u, f, got.Bits(), want.Bits())
			}
		}
	}
}

// TestF32ToF16Exhaustive checks f32ToF16 and f32sToF16 on all 2^32 inputs; it takes tens of seconds
// and runs only with NPUVERIFY_EXHAUSTIVE=1.
func TestF32ToF16Exhaustive(t *testing.T) {
	if os.Getenv("NPUVERIFY_EXHAUSTIVE") == "" {
		t.Skip("set NPUVERIFY_EXHAUSTIVE=1 to check all 2^32 fp32 inputs")
	}
	src := make([]float32, 1<<16)
	dst := make([]float16.Float16, len(src))
	for hi := uint64(0); hi < 1<<16; hi++ {
		for lo := range src {
			src[lo] = math.Float32frombits(uint32(hi<<16 | uint64(lo)))
		}
		f32sToF16(dst, src, false)
		for i, f := range src {
			want := float16.Fromfloat32(f)
			if got := f32ToF16(f); got != want || dst[i] != want {
				t.Fatalf("f32ToF16 bits=%#08x (%g): got %#04x (slice %#04x) want %#04x",
					math.Float32bits(f), f, got.Bits(), dst[i].Bits(), want.Bits())
			}
		}
	}
}

// TestF32sToF16 checks the slice conversion against f32ToF16 on the same
// rounding-relevant patterns.
func TestF32sToF16(t *testing.T) {
	lows := []uint32{0x0000, 0x0001, 0x0800, 0x0FFF, 0x1000, 0x1001, 0x17FF, 0x1FFF}
	src := make([]float32, 0, 1<<19*len(lows))
	for hi := uint32(0); hi < 1<<19; hi++ {
		for _, lo := range lows {
			src = append(src, math.Float32frombits(hi<<13|lo))
		}
	}
	dst := make([]float16.Float16, len(src))
	f32sToF16(dst, src, false)
	for i, f := range src {
		if want := float16.Fromfloat32(f); dst[i] != want {
			t.Fatalf("f32sToF16 bits=%#08x (%g): got %#04x want %#04x", math.Float32bits(f), f, dst[i].Bits(), want.Bits())
		}
	}
	// As the rounding of arithmetic results: the same, except that every
	// NaN becomes the fp16 default NaN.
	f32sToF16(dst, src, true)
	for i, f := range src {
		want := float16.Fromfloat32(f)
		if f != f {
			want = DefaultNaN16Bits
		}
		if dst[i] != want {
			t.Fatalf("f32sToF16 arith bits=%#08x (%g): got %#04x want %#04x", math.Float32bits(f), f, dst[i].Bits(), want.Bits())
		}
	}
}

// binF16Operands are the second operands TestBinF16MatchesPortable pairs
// with every fp16 pattern: zeros, the smallest and largest subnormals and
// normals, values around one and at the overflow edge, the infinities,
// quiet and signaling NaNs with payloads, and powers of two that put an
// addition's rounding bit at every position (ties included).
func binF16Operands() []uint16 {
	ops := []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3C01, 0x3BFF,
		0x7BFF, 0xFBFF, 0x7BFE, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0x7D55, 0xFF3F}
	for e := uint16(1); e < 31; e++ {
		ops = append(ops, e<<10, 0x8000|e<<10|0x155)
	}
	return ops
}

// TestBinF16MatchesPortable holds binF16 (F16C where the CPU has it) to
// binF16Go bit for bit: every fp16 pattern against each of
// binF16Operands in both orders, random pairs, and every length up to 33
// (the SIMD loop's tail). With NPUVERIFY_EXHAUSTIVE=1 it also checks all
// 2^32 operand pairs of each op.
func TestBinF16MatchesPortable(t *testing.T) {
	if !useF16C {
		t.Log("no F16C here: binF16 is binF16Go")
	}
	check := func(op binOp, a, b []float16.Float16) {
		t.Helper()
		got, want := make([]float16.Float16, len(a)), make([]float16.Float16, len(a))
		binF16(op, got, a, b)
		binF16Go(op, want, a, b)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("binF16(op %d, %#04x, %#04x) = %#04x, want %#04x (binF16Go)", op, a[i].Bits(), b[i].Bits(), got[i].Bits(), want[i].Bits())
			}
		}
	}
	all := make([]float16.Float16, 1<<16)
	for i := range all {
		all[i] = float16.Frombits(uint16(i))
	}
	other := make([]float16.Float16, len(all))
	for _, op := range []binOp{opAdd, opSub, opMul} {
		for _, v := range binF16Operands() {
			for i := range other {
				other[i] = float16.Frombits(v)
			}
			check(op, all, other)
			check(op, other, all)
		}
		r := uint64(1)
		for i := range other { // xorshift: any seed reproduces
			r ^= r << 13
			r ^= r >> 7
			r ^= r << 17
			other[i] = float16.Frombits(uint16(r))
		}
		check(op, all, other)
		for n := range 34 {
			check(op, all[0x3C00:0x3C00+n], other[:n])
		}
	}
	if os.Getenv("NPUVERIFY_EXHAUSTIVE") == "" {
		return
	}
	for _, op := range []binOp{opAdd, opSub, opMul} {
		for hi := range 1 << 16 {
			for i := range other {
				other[i] = float16.Frombits(uint16(hi))
			}
			check(op, all, other)
		}
	}
}

// TestFixBitsMatchesPortable holds fixBits16 (AVX2 where the CPU has
// it) to fixBits, bit for bit, on every 16-bit pattern as fp16 and as
// bf16, and fixBits32 on every fp32 sign and exponent with seven kinds
// of fraction and on seeded random patterns, under every combination of
// saturation and flushing, at every alignment and for every tail length
// up to 40.
func TestFixBitsMatchesPortable(t *testing.T) {
	formats := []struct {
		name                 string
		exp, frac, maxFinite uint16
	}{{"fp16", 0x7C00, 0x03FF, 0x7BFF}, {"bf16", 0x7F80, 0x007F, 0x7F7F}}
	all := make([]uint16, 1<<16+40)
	for i := range all {
		all[i] = uint16(i)
	}
	for _, f := range formats {
		for _, num := range []tensor.Numerics{
			{},
			{Overflow: tensor.OverflowSaturate},
			{Subnormals: tensor.SubnormalFlush},
			{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush},
		} {
			check := func(lo, hi int) {
				t.Helper()
				got, want := slices.Clone(all[lo:hi]), slices.Clone(all[lo:hi])
				fixBits16(got, num, f.exp, f.frac, f.maxFinite)
				fixBits(want, num, f.exp, f.frac, f.maxFinite)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("fixBits16 %s %v (AVX2 %v) on patterns [%#x, %#x): pattern %#04x: got %#04x / want %#04x (fixBits)", f.name, num, useFixAVX2, lo, hi, all[lo+i], got[i], want[i])
					}
				}
			}
			check(0, 1<<16)
			// Near +Inf and the NaNs above it, and near −0 and the
			// negative subnormals.
			for _, base := range []int{int(f.exp) - 20, 0x8000 - 20} {
				for lo := range 9 {
					for n := range 41 {
						check(base+lo, base+lo+n)
					}
				}
			}
		}
	}
	const seed = 7
	all32 := fixBits32Patterns(1<<16, seed)
	for _, num := range []tensor.Numerics{
		{},
		{Overflow: tensor.OverflowSaturate},
		{Subnormals: tensor.SubnormalFlush},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush},
	} {
		check := func(lo, hi int) {
			t.Helper()
			got, want := slices.Clone(all32[lo:hi]), slices.Clone(all32[lo:hi])
			fixBits32(got, num, 0x7F800000, 0x007FFFFF, 0x7F7FFFFF)
			fixBits(want, num, 0x7F800000, 0x007FFFFF, 0x7F7FFFFF)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("fixBits32 fp32 %v (AVX2 %v) seed=%d on patterns [%d, %d): pattern %#08x: got %#08x / want %#08x (fixBits)", num, useFixAVX2, seed, lo, hi, all32[lo+i], got[i], want[i])
				}
			}
		}
		check(0, len(all32))
		for lo := range 9 {
			for n := range 41 {
				check(lo, lo+n)
			}
		}
	}
}

// fixBits32Patterns returns every fp32 sign and exponent with fractions
// 0, 1, 2, the top bit, the top bit and 1, all ones but the lowest, all
// ones, then n seeded random patterns.
func fixBits32Patterns(n int, seed uint64) []uint32 {
	var p []uint32
	for se := uint32(0); se < 1<<9; se++ {
		for _, f := range []uint32{0, 1, 2, 0x400000, 0x400001, 0x7FFFFE, 0x7FFFFF} {
			p = append(p, se<<23|f)
		}
	}
	r := rand.New(rand.NewPCG(seed, 0))
	for range n {
		p = append(p, r.Uint32())
	}
	return p
}

// TestBinBF16F32MatchPortable holds binBF16 and binF32 (AVX2 where the
// CPU has it) to binBF16Go and binF32Go, bit for bit, for each op: every
// bf16 pattern against 24 chosen operands (zeros, subnormals, the
// largest finite, infinities, quiet and signaling NaNs, ones, values
// whose sums and products round at a tie) both ways round and against
// seeded random patterns, every fp32 sign and exponent with seven
// fractions against the same kinds of fp32 operands and random
// patterns, and every tail length up to 33.
func TestBinBF16F32MatchPortable(t *testing.T) {
	const seed = 11
	r := rand.New(rand.NewPCG(seed, 0))
	allBF := make([]tensor.BF16, 1<<16)
	for i := range allBF {
		allBF[i] = tensor.BF16(i)
	}
	bfOps := []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80,
		0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x3F80, 0xBF80, 0x3F81, 0x3B80, 0x4000, 0x3F00, 0x7F00, 0x0100, 0x4B00, 0xC2F7}
	checkBF := func(op binOp, a, b []tensor.BF16) {
		t.Helper()
		got, want := make([]tensor.BF16, len(a)), make([]tensor.BF16, len(a))
		binBF16(op, got, a, b)
		binBF16Go(op, want, a, b)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("binBF16(op %d, %#04x, %#04x) (AVX2 %v) = %#04x, want %#04x (binBF16Go)", op, uint16(a[i]), uint16(b[i]), useBinAVX2, uint16(got[i]), uint16(want[i]))
			}
		}
	}
	all32 := make([]float32, 0, 1<<16)
	for _, p := range fixBits32Patterns(1<<14, seed) {
		all32 = append(all32, math.Float32frombits(p))
	}
	f32Ops := []uint32{0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
		0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x3F800000, 0xBF800000, 0x3F800001, 0x33800000, 0x40000000, 0x3F000000, 0x7F000000, 0x01000000, 0x4B000000, 0xC2F7A000}
	check32 := func(op binOp, a, b []float32) {
		t.Helper()
		got, want := make([]float32, len(a)), make([]float32, len(a))
		binF32(op, got, a, b)
		binF32Go(op, want, a, b)
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("binF32(op %d, %#08x, %#08x) (AVX2 %v) = %#08x, want %#08x (binF32Go)", op, math.Float32bits(a[i]), math.Float32bits(b[i]), useBinAVX2, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
	otherBF := make([]tensor.BF16, len(allBF))
	other32 := make([]float32, len(all32))
	for _, op := range []binOp{opAdd, opSub, opMul} {
		for _, v := range bfOps {
			for i := range otherBF {
				otherBF[i] = tensor.BF16(v)
			}
			checkBF(op, allBF, otherBF)
			checkBF(op, otherBF, allBF)
		}
		for i := range otherBF {
			otherBF[i] = tensor.BF16(r.Uint32())
		}
		checkBF(op, allBF, otherBF)
		for _, v := range f32Ops {
			for i := range other32 {
				other32[i] = math.Float32frombits(v)
			}
			check32(op, all32, other32)
			check32(op, other32, all32)
		}
		for i := range other32 {
			other32[i] = math.Float32frombits(r.Uint32())
		}
		check32(op, all32, other32)
		for n := range 34 {
			checkBF(op, allBF[0x3F80:0x3F80+n], otherBF[:n])
			check32(op, all32[100:100+n], other32[:n])
		}
	}
}
