package dgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// h32Operand returns cnt seeded fp16 values: standard normal ones and,
// with specials, one in eight of another class (±0, ±Inf, NaN, a
// subnormal, the largest finite value, a random bit pattern).
func h32Operand(r *rand.Rand, cnt int, specials bool) []float16.Float16 {
	x := make([]float16.Float16, cnt)
	for i := range x {
		x[i] = float16.Fromfloat32(float32(r.NormFloat64()))
		if !specials || r.IntN(8) != 0 {
			continue
		}
		x[i] = []float16.Float16{0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0x0001, 0x83ff, 0x7bff, 0xfbff,
			float16.Float16(r.Uint32())}[r.IntN(10)]
	}
	return x
}

// h32Loop is MulAbsH32's definition: d in float64 and s in fp32, each
// element from +0, k ascending, the product rounded (exact) and then
// added.
func h32Loop(m, k, n int, a, b []float16.Float16) (d, s []float64) {
	d, s = make([]float64, m*n), make([]float64, m*n)
	for i := range m {
		for j := range n {
			dv, sv := 0.0, float32(0)
			for kk := range k {
				x, y := a[i*k+kk].Float32(), b[kk*n+j].Float32()
				dv += float64(float64(x) * float64(y))
				sv += float32(abs32(x) * abs32(y))
			}
			d[i*n+j], s[i*n+j] = dv, float64(sv)
		}
	}
	return d, s
}

// TestMulAbsH32MatchesLoop holds MulAbsH32 on each of its tiles (the
// assembly one where the CPU has it, and the portable twin) to its
// definition, bit for bit but a NaN's payload, on seeded fp16 operands,
// with and without special values, on shapes with a partial row group
// (m mod 8), columns past the last tile (n mod 16), one or two strips
// per core, K crossing K-blocks (h32K) at few rows and at many, and m
// taken in blocks of rows (h32MaxRows, lowered to 24: blocks of 24, 24
// and 13 rows of a 61-row product).
func TestMulAbsH32MatchesLoop(t *testing.T) {
	kerns := map[string]h32Func{"go": mulAbsH32Go}
	if h32Kernel != nil {
		kerns["asm"] = h32Kernel
	}
	defer func(r int) { h32MaxRows = r }(h32MaxRows)
	wholeRows := h32MaxRows
	seed := uint64(0)
	for _, sh := range [][3]int{{1, 1, 16}, {8, 5, 16}, {16, 64, 48}, {13, 33, 37}, {3, 7, 5}, {16, h32K + 9, 96}, {9, 2*h32K + 1, 33}, {100, h32K + 300, 35}, {61, 40, 35}} {
		m, k, n := sh[0], sh[1], sh[2]
		for _, specials := range []bool{false, true} {
			seed++
			r := rand.New(rand.NewPCG(seed, 41))
			a, b := h32Operand(r, m*k, specials), h32Operand(r, k*n, specials)
			wd, ws := h32Loop(m, k, n, a, b)
			for name, kern := range kerns {
				for _, maxRows := range []int{wholeRows, 24} {
					h32MaxRows = maxRows
					d, s := make([]float64, m*n), make([]float64, m*n)
					for i := range d {
						d[i], s[i] = math.NaN(), math.NaN() // overwritten
					}
					mulAbsH32(kern, m, k, n, a, b, d, s)
					for i := range d {
						if !same(d[i], wd[i]) || !same(s[i], ws[i]) {
							t.Fatalf("MulAbsH32 %s m=%d k=%d n=%d specials=%v seed=%d, blocks of %d rows: element (%d, %d): d, s = %v, %v / want %v, %v",
								name, m, k, n, specials, seed, maxRows, i/n, i%n, d[i], s[i], wd[i], ws[i])
						}
					}
				}
			}
		}
	}
}

// BenchmarkMulAbsH32 is MulAbsH32 at a decoding step's shape (16 rows
// against a 4096×11008 fp16 weight) and at a block of gemm's reference
// at 1024³ (128 rows, ops.ExpectBlocks). What it replaces is timed by
// BenchmarkMul (decode-fp16 and fp16-128x1024x1024: d alone) and ./ops'
// BenchmarkGEMMMag32 (the fp32 magnitudes).
func BenchmarkMulAbsH32(b *testing.B) {
	if h32Kernel == nil {
		b.Skip("no AVX-512 tile")
	}
	for _, sh := range [][3]int{{16, 4096, 11008}, {128, 1024, 1024}} {
		m, k, n := sh[0], sh[1], sh[2]
		r := rand.New(rand.NewPCG(1, 41))
		a, bh := h32Operand(r, m*k, false), h32Operand(r, k*n, false)
		d, s := make([]float64, m*n), make([]float64, m*n)
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			cpu0 := cpuTime()
			for b.Loop() {
				MulAbsH32(m, k, n, a, bh, d, s)
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
