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
	mulGoTile     = goTile(mrMul)
	mulAVX2Tile   = asmTile("avx2", mrMul, mulAVX2)      // 6×8, ymm
	mulAVX512Tile = asmTile("avx512", mrMul8, mulAVX512) // 8×8, zmm
)

// asmTile is the Mul tile of the assembly kernel f on tmr rows: f after
// the bounds checks it cannot make, and the portable kernel on the same
// tile as its twin (same arguments and bits), which also takes kcc ≤ 0.
func asmTile(name string, tmr int, f func(kcc int, a, b, d *float64, ldc int, load bool)) mulTile {
	twin := goTile(tmr).kern
	kern := func(kcc int, a, b, d, s []float64, ldc int, load bool) {
		if kcc <= 0 {
			twin(kcc, a, b, d, s, ldc, load)
			return
		}
		_, _ = a[kcc*tmr-1], b[kcc*nr-1]
		_ = d[(tmr-1)*ldc+nr-1]
		f(kcc, &a[0], &b[0], &d[0], ldc, load)
	}
	return mulTile{mr: tmr, kern: kern, twin: twin, name: name}
}

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

// mulAVX2 is the 6×8 micro-kernel of Mul on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAVX2(kcc int, a, b, d *float64, ldc int, load bool)

// mulAVX512 is the 8×8 micro-kernel of Mul on raw pointers; kcc ≥ 1.
//
//go:noescape
func mulAVX512(kcc int, a, b, d *float64, ldc int, load bool)
