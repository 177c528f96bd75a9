//go:build amd64 && !purego

package dgemm

import "golang.org/x/sys/cpu"

// kernel is MulAbs's micro-kernel on this machine and mul Mul's: AVX2
// with FMA when the CPU has both (for Mul, AVX-512 when it has that too),
// else the portable ones.
var (
	kernel kernelFunc = kernelGo
	mul               = mulGoTile
)

// kernelName names MulAbs's micro-kernel, for benchmarks and tests.
var kernelName = "go"

// Mul's tiles.
var (
	mulGoTile     = mulTile{mr: mrMul, kern: kernelMulGo, twin: kernelMulGo, name: "go"}
	mulAVX2Tile   = mulTile{mr: mrMul, kern: kernelMulAVX2, twin: kernelMulGo, name: "avx2"}
	mulAVX512Tile = mulTile{mr: mrMul8, kern: kernelMulAVX512, twin: kernelMul8Go, name: "avx512"}
)

func init() {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		kernel, kernelName = kernelAVX2, "avx2"
	}
	tiles := mulTiles()
	mul = tiles[len(tiles)-1]
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

// kernelMulAVX2 is kernelMulGo (same arguments and bits) in AVX2+FMA
// assembly.
func kernelMulAVX2(kcc int, a, b, d, s []float64, ldc int, load bool) {
	if kcc <= 0 {
		kernelMulGo(kcc, a, b, d, s, ldc, load)
		return
	}
	// The bounds checks the assembly cannot make.
	_, _ = a[kcc*mrMul-1], b[kcc*nr-1]
	_ = d[(mrMul-1)*ldc+nr-1]
	mulAVX2(kcc, &a[0], &b[0], &d[0], ldc, load)
}

// mulAVX2 is the 6×8 micro-kernel of Mul on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAVX2(kcc int, a, b, d *float64, ldc int, load bool)

// mulAVX512 is the 8×8 micro-kernel of Mul on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAVX512(kcc int, a, b, d *float64, ldc int, load bool)

// kernelMulAVX512 is kernelMul8Go (same arguments and bits) in AVX-512
// assembly: an 8×8 tile, one zmm register per row.
func kernelMulAVX512(kcc int, a, b, d, s []float64, ldc int, load bool) {
	if kcc <= 0 {
		kernelMul8Go(kcc, a, b, d, s, ldc, load)
		return
	}
	// The bounds checks the assembly cannot make.
	_, _ = a[kcc*mrMul8-1], b[kcc*nr-1]
	_ = d[(mrMul8-1)*ldc+nr-1]
	mulAVX512(kcc, &a[0], &b[0], &d[0], ldc, load)
}
