package dgemm

import (
	"math"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/internal/parallel"
)

// MulAbsH32 sets d = a·b, Mul's d bit for bit, and s to the magnitudes
// |a|·|b| summed in fp32 (each element from +0, k ascending, one fp32
// fused multiply-add per k, its value stored as float64), for fp16 a
// [m,k] and b [k,n], row-major; d and s are [m,n] and overwritten. Every
// product is exact in its format (fp16·fp16 has at most 22 significant
// bits), so each multiply-add rounds as the loop's product and then its
// sum do, and s is gemm's fp32 magnitude sum, bit for bit but a NaN's
// payload.
//
// It is the pass for a product of few rows against a wide B, a decoding
// step's (16×4096 against 4096×11008): d and s together on an 8×16 tile,
// B read where it lies, a 16-column strip a tile, where Mul and the fp32
// magnitudes each packed B in strips of their own and so read it twice
// and wrote it twice. It reports false, and touches nothing, where the
// CPU has no such kernel (it needs AVX-512 and F16C); the caller then
// takes Mul and its own magnitudes.
func MulAbsH32(m, k, n int, a, b []float16.Float16, d, s []float64) bool {
	if h32Kernel == nil {
		return false
	}
	mulAbsH32(h32Kernel, m, k, n, a, b, d, s)
	return true
}

// h32Func is MulAbsH32's tile: for kcc steps, an h32Rows×h32Cols tile of
// d and s (row stride ldc) from the packed rows a and aa (h32Rows values
// a step: a as float64, |a| as fp32) and b's columns (ldb apart a step),
// continuing from d and s when load, else from +0 (mulAbsH32Go).
type h32Func func(kcc int, a []float64, aa []float32, b []float16.Float16, ldb int, d, s []float64, ldc int, load bool)

// The tile and the blocking of MulAbsH32: its row groups and strips
// take K a block of h32K at a time, a block that leaves the two row
// groups' packed a (96 KiB each) and a 32-column strip of B (64 KiB)
// in the core's L2 while the strip's two tiles pass over it.
const (
	h32Rows = 8
	h32Cols = 16
	h32K    = 1024
)

// mulAbsH32 is MulAbsH32 on tile kern (the assembly one, or
// mulAbsH32Go in the tests).
func mulAbsH32(kern h32Func, m, k, n int, a, b []float16.Float16, d, s []float64) {
	d, s = d[:m*n], s[:m*n]
	a, b = a[:m*k], b[:k*n]
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		clear(d)
		clear(s)
		return
	}
	groups := (m + h32Rows - 1) / h32Rows
	af := make([]float64, groups*k*h32Rows)
	aa := make([]float32, groups*k*h32Rows)
	for i := range m {
		g, r := i/h32Rows, i%h32Rows
		for kk, v := range a[i*k : (i+1)*k] {
			f := v.Float32()
			af[(g*k+kk)*h32Rows+r] = float64(f)
			aa[(g*k+kk)*h32Rows+r] = abs32(f)
		}
	}
	tiles := n / h32Cols
	full := m / h32Rows // groups whose rows all exist
	parallel.For((tiles+1)/2, 1, func(p0, p1 int) {
		t0, t1 := 2*p0, min(2*p1, tiles)
		// The last group's missing rows go to a scratch tile row of
		// this core's columns.
		var dt, st []float64
		w := (t1 - t0) * h32Cols
		if full < groups {
			dt, st = make([]float64, h32Rows*w), make([]float64, h32Rows*w)
		}
		for kb := 0; kb < k; kb += h32K {
			kcc := min(h32K, k-kb)
			for t := t0; t < t1; t++ {
				j := t * h32Cols
				bt := b[kb*n+j:]
				for g := range groups {
					ag, aag := af[(g*k+kb)*h32Rows:], aa[(g*k+kb)*h32Rows:]
					if g < full {
						o := g*h32Rows*n + j
						kern(kcc, ag, aag, bt, n, d[o:], s[o:], n, kb > 0)
						continue
					}
					o := j - t0*h32Cols
					kern(kcc, ag, aag, bt, n, dt[o:], st[o:], w, kb > 0)
				}
			}
		}
		for r := range m - full*h32Rows {
			i := full*h32Rows + r
			copy(d[i*n+t0*h32Cols:i*n+t1*h32Cols], dt[r*w:(r+1)*w])
			copy(s[i*n+t0*h32Cols:i*n+t1*h32Cols], st[r*w:(r+1)*w])
		}
	})
	if tail := n - tiles*h32Cols; tail > 0 {
		// Columns past the last whole tile: a tile of its own over a copy
		// of them padded with zeros, into scratch.
		j0 := tiles * h32Cols
		bp := make([]float16.Float16, k*h32Cols)
		for kk := range k {
			copy(bp[kk*h32Cols:kk*h32Cols+tail], b[kk*n+j0:(kk+1)*n])
		}
		dt, st := make([]float64, groups*h32Rows*h32Cols), make([]float64, groups*h32Rows*h32Cols)
		for kb := 0; kb < k; kb += h32K {
			for g := range groups {
				o := g * h32Rows * h32Cols
				kern(min(h32K, k-kb), af[(g*k+kb)*h32Rows:], aa[(g*k+kb)*h32Rows:], bp[kb*h32Cols:], h32Cols, dt[o:], st[o:], h32Cols, kb > 0)
			}
		}
		for i := range m {
			copy(d[i*n+j0:(i+1)*n], dt[i*h32Cols:i*h32Cols+tail])
			copy(s[i*n+j0:(i+1)*n], st[i*h32Cols:i*h32Cols+tail])
		}
	}
}

// abs32 is |x|.
func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// mulAbsH32Go is the portable h32Func: the loop on one tile, the twin of
// the assembly one.
func mulAbsH32Go(kcc int, a []float64, aa []float32, b []float16.Float16, ldb int, d, s []float64, ldc int, load bool) {
	for r := range h32Rows {
		for c := range h32Cols {
			dv, sv := 0.0, float32(0)
			if load {
				dv, sv = d[r*ldc+c], float32(s[r*ldc+c])
			}
			for kk := range kcc {
				y := b[kk*ldb+c].Float32()
				dv += float64(a[kk*h32Rows+r] * float64(y))
				sv += float32(aa[kk*h32Rows+r] * abs32(y))
			}
			d[r*ldc+c], s[r*ldc+c] = dv, float64(sv)
		}
	}
}
