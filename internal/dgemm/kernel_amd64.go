//go:build amd64 && !purego

package dgemm

import (
	"unsafe"

	"github.com/x448/float16"
	"golang.org/x/sys/cpu"
)

// kernel is MulAbs's micro-kernel on this machine and mul Mul's: AVX2
// with FMA when the CPU has both (for Mul, AVX-512 when it has that too),
// else the portable ones.
var (
	kernel kernelFunc = kernelGo
	mul               = mulGoTile
)

// kernelName names MulAbs's micro-kernel, for benchmarks and tests.
var kernelName = "go"

// Mul's tiles, on float64 panels and on fp16 ones (variant.h).
var (
	mulGoTile      = goTile(mrMul)
	mulAVX2Tile    = asmTile("avx2", mrMul, variant{}, mulAVX2)      // 6×8, ymm
	mulAVX512Tile  = asmTile("avx512", mrMul8, variant{}, mulAVX512) // 8×8, zmm
	mulAVX2HTile   = asmTile("avx2-f16", mrMul, variant{h: true}, mulAVX2H)
	mulAVX512HTile = asmTile("avx512-f16", mrMul8, variant{h: true}, mulAVX512H)
)

// asmTile is the Mul tile of the assembly kernel f on tmr rows and v's
// panels: f after the bounds checks it cannot make, and the portable
// kernel on the same tile as its twin (same arguments and bits), which
// also takes kcc ≤ 0.
func asmTile(name string, tmr int, v variant, f func(kcc int, a, b, d *float64, ldc int, load bool)) mulTile {
	twin := goTile(tmr).kern
	if v.h {
		twin = goTileH(tmr).kern
	}
	w := v.panel()
	kern := func(kcc int, a, b, d, s []float64, ldc int, load bool) {
		if kcc <= 0 {
			twin(kcc, a, b, d, s, ldc, load)
			return
		}
		_, _ = a[kcc*tmr-1], b[kcc*w-1]
		_ = d[(tmr-1)*ldc+nr-1]
		f(kcc, &a[0], &b[0], &d[0], ldc, load)
	}
	return mulTile{mr: tmr, kern: kern, twin: twin, name: name}
}

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		kernel, kernelName = kernelAVX2, "avx2"
		ellKernel = ellRowAVX2
	}
	tiles := mulTiles()
	mul = tiles[len(tiles)-1]
	if h := mulHTiles(); len(h) > 0 {
		mulH = h[len(h)-1]
	}
	if cpu.X86.HasAVX512F && cpu.X86.HasF16C && cpu.X86.HasFMA {
		h32Kernel = h32AVX512
	}
}

// mulH is Mul's tile for an fp16 B, packed as fp16 (variant.h): the
// widest assembly one this CPU runs, none (kern nil) without F16C.
var mulH mulTile

// mulHTiles lists the fp16-panel tiles this machine runs, the widest last.
func mulHTiles() []mulTile {
	if !cpu.X86.HasAVX2 || !cpu.X86.HasFMA || !cpu.X86.HasF16C {
		return nil
	}
	tiles := []mulTile{mulAVX2HTile}
	if cpu.X86.HasAVX512F {
		tiles = append(tiles, mulAVX512HTile)
	}
	return tiles
}

// mulTiles lists every Mul micro-kernel this machine runs, the widest
// last (Mul's), for the tests.
func mulTiles() []mulTile {
	tiles := []mulTile{mulGoTile}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		tiles = append(tiles, mulAVX2Tile)
		if cpu.X86.HasAVX512F {
			tiles = append(tiles, mulAVX512Tile)
		}
	}
	return tiles
}

// kernelAVX2 is kernelGo (same arguments and bits) in AVX2+FMA assembly.
func kernelAVX2(kcc int, a, b, d, s []float64, ldc int, load bool) {
	if kcc <= 0 {
		kernelGo(kcc, a, b, d, s, ldc, load)
		return
	}
	// The bounds checks the assembly cannot make.
	_, _ = a[kcc*mr-1], b[kcc*2*nr-1]
	_, _ = d[(mr-1)*ldc+nr-1], s[(mr-1)*ldc+nr-1]
	mulAbsAVX2(kcc, &a[0], &b[0], &d[0], &s[0], ldc, load)
}

// mulAbsAVX2 is the 3×8 micro-kernel on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAbsAVX2(kcc int, a, b, d, s *float64, ldc int, load bool)

// mulAVX2 is the 6×8 micro-kernel of Mul on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAVX2(kcc int, a, b, d *float64, ldc int, load bool)

// mulAVX512 is the 8×8 micro-kernel of Mul on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAVX512(kcc int, a, b, d *float64, ldc int, load bool)

// mulAVX2H is mulAVX2 on fp16 panels (b points at their bit patterns);
// kcc ≥ 1.
//
//go:noescape
func mulAVX2H(kcc int, a, b, d *float64, ldc int, load bool)

// mulAVX512H is mulAVX512 on fp16 panels; kcc ≥ 1.
//
//go:noescape
func mulAVX512H(kcc int, a, b, d *float64, ldc int, load bool)

// ellKernel is MulAbsELL's row kernel (ellRow) for a whole panel of
// ellWidth columns: AVX2 with FMA where the CPU has both.
var ellKernel func(kh int, v *float64, c *int, panel, d, s *float64)

// ellRowAVX2 is ellRowGo on a whole panel of ellWidth columns, four ymm
// accumulators each for d and s; each product is exact, so its FMA
// rounds as the Go loop's product-then-sum does.
//
//go:noescape
func ellRowAVX2(kh int, v *float64, c *int, panel, d, s *float64)

// h32Kernel is MulAbsH32's tile: the AVX-512 one where the CPU has
// AVX-512 and F16C, else none.
var h32Kernel h32Func

// h32AVX512 is mulAbsH32AVX512 after the bounds checks it cannot make;
// kcc ≥ 1.
func h32AVX512(kcc int, a []float64, aa []float32, b []float16.Float16, ldb int, d, s []float64, ldc int, load bool) {
	_, _ = a[kcc*h32Rows-1], aa[kcc*h32Rows-1]
	_ = b[(kcc-1)*ldb+h32Cols-1]
	_, _ = d[(h32Rows-1)*ldc+h32Cols-1], s[(h32Rows-1)*ldc+h32Cols-1]
	mulAbsH32AVX512(kcc, &a[0], &aa[0], (*uint16)(unsafe.Pointer(&b[0])), ldb, &d[0], &s[0], ldc, load)
}

// mulAbsH32AVX512 is the 8×16 tile of MulAbsH32 on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAbsH32AVX512(kcc int, a *float64, aa *float32, b *uint16, ldb int, d, s *float64, ldc int, load bool)

// fmaPeak runs n steps of twelve independent zmm multiply-adds on zeros
// (96 float64 ones a step, or 192 fp32 ones with f32): nothing but the
// core's multiply-add throughput, which BenchmarkFMAPeak reports as the
// floor the products of this package are measured against. It needs
// AVX-512 (n ≥ 1).
//
//go:noescape
func fmaPeak(n int, f32 bool)
