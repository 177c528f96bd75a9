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

// TestFixBitsMatchesPortable holds fixBits with its AVX2 path
// (fixBitsVec, where the CPU has it) to fixBits with its Go loop alone,
// bit for bit, on every 16-bit pattern as fp16 and as bf16, and on every
// fp32 sign and exponent with seven kinds of fraction and seeded random
// patterns, under every combination of saturation and flushing, at every
// alignment and for every tail length up to 40.
func TestFixBitsMatchesPortable(t *testing.T) {
	const seed = 7
	all16 := make([]uint16, 1<<16+40)
	for i := range all16 {
		all16[i] = uint16(i)
	}
	all32 := fixBits32Patterns(1<<16, seed)
	for _, num := range []tensor.Numerics{
		{},
		{Overflow: tensor.OverflowSaturate},
		{Subnormals: tensor.SubnormalFlush},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush},
	} {
		// fp16 and bf16: whole, and near +Inf and the NaNs above it, and
		// near −0 and the negative subnormals.
		for _, f := range []struct {
			name                 string
			exp, frac, maxFinite uint16
		}{{"fp16", 0x7C00, 0x03FF, 0x7BFF}, {"bf16", 0x7F80, 0x007F, 0x7F7F}} {
			checkFixBits(t, f.name, num, seed, all16, 0, 1<<16, f.exp, f.frac, f.maxFinite)
			for _, base := range []int{int(f.exp) - 20, 0x8000 - 20} {
				for lo := range 9 {
					for n := range 41 {
						checkFixBits(t, f.name, num, seed, all16, base+lo, base+lo+n, f.exp, f.frac, f.maxFinite)
					}
				}
			}
		}
		checkFixBits(t, "fp32", num, seed, all32, 0, len(all32), 0x7F800000, 0x007FFFFF, 0x7F7FFFFF)
		for lo := range 9 {
			for n := range 41 {
				checkFixBits(t, "fp32", num, seed, all32, lo, lo+n, 0x7F800000, 0x007FFFFF, 0x7F7FFFFF)
			}
		}
	}
}

// checkFixBits fails t unless fixBits gives pats[lo:hi] the same bits
// with useFixAVX2 as it is and with it off.
func checkFixBits[T ~uint16 | ~uint32](t *testing.T, format string, num tensor.Numerics, seed uint64, pats []T, lo, hi int, exp, frac, maxFinite T) {
	t.Helper()
	got, want := slices.Clone(pats[lo:hi]), slices.Clone(pats[lo:hi])
	fixBits(got, num, exp, frac, maxFinite)
	defer func(v bool) { useFixAVX2 = v }(useFixAVX2)
	vec := useFixAVX2
	useFixAVX2 = false
	fixBits(want, num, exp, frac, maxFinite)
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("fixBits %s %v seed=%d (AVX2 %v) on patterns [%d, %d): pattern %#x: got %#x / want %#x (the Go loop)", format, num, seed, vec, lo, hi, pats[lo+i], got[i], want[i])
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
// bf16 pattern, and every fp32 sign and exponent with seven fractions,
// against 24 chosen operands of the format (zeros, subnormals, the
// largest finite, infinities, quiet and signaling NaNs, ones, values
// whose sums and products round at a tie) both ways round and against
// seeded random patterns, and every tail length up to 33.
func TestBinBF16F32MatchPortable(t *testing.T) {
	const seed = 11
	r := rand.New(rand.NewPCG(seed, 0))
	allBF := make([]uint64, 1<<16)
	for i := range allBF {
		allBF[i] = uint64(i)
	}
	checkBinTwin(t, "binBF16", seed, r, binBF16, binBF16Go,
		func(v tensor.BF16) uint64 { return uint64(v) }, func(b uint64) tensor.BF16 { return tensor.BF16(b) },
		allBF, 0x3F80, []uint64{0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80,
			0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x3F80, 0xBF80, 0x3F81, 0x3B80, 0x4000, 0x3F00, 0x7F00, 0x0100, 0x4B00, 0xC2F7})
	var all32 []uint64
	for _, p := range fixBits32Patterns(1<<14, seed) {
		all32 = append(all32, uint64(p))
	}
	checkBinTwin(t, "binF32", seed, r, binF32, binF32Go,
		func(v float32) uint64 { return uint64(math.Float32bits(v)) }, func(b uint64) float32 { return math.Float32frombits(uint32(b)) },
		all32, 100, []uint64{0, 0x80000000, 1, 0x80000001, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
			0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x3F800000, 0xBF800000, 0x3F800001, 0x33800000, 0x40000000, 0x3F000000, 0x7F000000, 0x01000000, 0x4B000000, 0xC2F7A000})
}

// checkBinTwin runs TestBinBF16F32MatchPortable's cases for one format
// (elements E, bit patterns by bits and fromBits): for each op, the
// patterns all against each of ops both ways round, all against random
// patterns from r, and every tail length from all[tailAt] on, f against
// its Go twin fgo.
func checkBinTwin[E any](t *testing.T, name string, seed uint64, r *rand.Rand, f, fgo func(binOp, []E, []E, []E), bits func(E) uint64, fromBits func(uint64) E, all []uint64, tailAt int, ops []uint64) {
	t.Helper()
	elems := func(b []uint64) []E {
		e := make([]E, len(b))
		for i, v := range b {
			e[i] = fromBits(v)
		}
		return e
	}
	check := func(op binOp, a, b []E) {
		t.Helper()
		got, want := make([]E, len(a)), make([]E, len(a))
		f(op, got, a, b)
		fgo(op, want, a, b)
		for i := range got {
			if g, w := bits(got[i]), bits(want[i]); g != w {
				t.Fatalf("%s(op %d, %#x, %#x) seed=%d (AVX2 %v) = %#x, want %#x (the Go loop)", name, op, bits(a[i]), bits(b[i]), seed, useBinAVX2, g, w)
			}
		}
	}
	a, other := elems(all), make([]E, len(all))
	for _, op := range []binOp{opAdd, opSub, opMul} {
		for _, v := range ops {
			for i := range other {
				other[i] = fromBits(v)
			}
			check(op, a, other)
			check(op, other, a)
		}
		for i := range other {
			other[i] = fromBits(r.Uint64())
		}
		check(op, a, other)
		for n := range 34 {
			check(op, a[tailAt:tailAt+n], other[:n])
		}
	}
}
