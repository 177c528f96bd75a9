package dgemm

import "math"

// kernelGo is the portable micro-kernel: for kcc steps, the mr×nr tile
// of d (row stride ldc) accumulates a[kk·mr+r]·b[kk·2nr+c] and the tile
// of s their magnitudes (b[kk·2nr+nr+c] is |b|), starting from the tile's
// values if load, else from +0. It is the specification of the assembly
// kernels, which must give the same bits (TestKernelsAgree).
func kernelGo(kcc int, a, b, d, s []float64, ldc int, load bool) {
	var cd, cs [mr][nr]float64
	if load {
		for r := range mr {
			copy(cd[r][:], d[r*ldc:r*ldc+nr])
			copy(cs[r][:], s[r*ldc:r*ldc+nr])
		}
	}
	a, b = a[:kcc*mr], b[:kcc*2*nr]
	for kk := range kcc {
		ak := a[kk*mr : kk*mr+mr]
		bk := b[kk*2*nr : kk*2*nr+2*nr]
		for r := range mr {
			x := ak[r]
			ax := math.Abs(x)
			for c := range nr {
				// The product is exact (MulAbs's precondition), so
				// rounding it and then the sum gives the one rounding of
				// the assembly kernels' fused multiply-add. The
				// conversion keeps the compiler from fusing here (it
				// would give the same value): this twin then compiles
				// to the same operations on every platform.
				cd[r][c] += float64(x * bk[c])
				cs[r][c] += float64(ax * bk[nr+c])
			}
		}
	}
	for r := range mr {
		copy(d[r*ldc:r*ldc+nr], cd[r][:])
		copy(s[r*ldc:r*ldc+nr], cs[r][:])
	}
}

// goTile is Mul's portable micro-kernel on a tile of tmr rows (mulGo),
// its own twin.
func goTile(tmr int) mulTile {
	kern := func(kcc int, a, b, d, _ []float64, ldc int, load bool) { mulGo(tmr, kcc, a, b, d, ldc, load) }
	return mulTile{mr: tmr, kern: kern, twin: kern, name: "go"}
}

// mulGo is Mul's portable micro-kernel: for kcc steps, the tmr×nr tile of
// d (row stride ldc) accumulates a[kk·tmr+r]·b[kk·nr+c] (B's panels carry
// no magnitudes), starting from the tile's values if load, else from +0.
// The assembly kernels must give the same bits (TestKernelsAgree).
func mulGo(tmr, kcc int, a, b, d []float64, ldc int, load bool) {
	var cd [mrMax][nr]float64
	if load {
		for r := range tmr {
			copy(cd[r][:], d[r*ldc:r*ldc+nr])
		}
	}
	a, b = a[:kcc*tmr], b[:kcc*nr]
	for kk := range kcc {
		ak := a[kk*tmr : kk*tmr+tmr]
		bk := b[kk*nr : kk*nr+nr]
		for r := range tmr {
			x := ak[r]
			for c := range nr {
				// Exact product (Mul's precondition): the sum's rounding
				// is the assembly's fused one; converted so that the
				// compiler does not fuse (same value, same code everywhere).
				cd[r][c] += float64(x * bk[c])
			}
		}
	}
	for r := range tmr {
		copy(d[r*ldc:r*ldc+nr], cd[r][:])
	}
}

// goTileH is Mul's portable micro-kernel on fp16 panels (mulGoH) on a
// tile of tmr rows, its own twin.
func goTileH(tmr int) mulTile {
	kern := func(kcc int, a, b, d, _ []float64, ldc int, load bool) { mulGoH(tmr, kcc, a, b, d, ldc, load) }
	return mulTile{mr: tmr, kern: kern, twin: kern, name: "go-f16"}
}

// mulGoH is mulGo on B's panels of fp16 bit patterns (variant.h, four to
// a float64 of b): mulGo on the panel widened exactly to float64, so that
// the sums are mulGo's on the same values. The assembly kernels on fp16
// panels must give the same bits (TestKernelsAgree).
func mulGoH(tmr, kcc int, a, b, d []float64, ldc int, load bool) {
	var wide [kc * nr]float64 // kcc ≤ kc
	w := wide[:kcc*nr]
	for i, h := range halves(b[:kcc*nr/4]) {
		w[i] = float64(h.Float32())
	}
	mulGo(tmr, kcc, a, w, d, ldc, load)
}
