package dgemm

import (
	"math"
	"sync"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
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
// It is the pass for gemm's reference of fp16 operands: d and s
// together on an 8×16 tile, B read where it lies, a 16-column strip a
// tile, where Mul and the fp32 magnitudes each packed B of their own and
// so read it twice and wrote it twice (at a decoding step's 16×4096
// against 4096×11008, a pass over B that goes out to memory; at 1024³,
// eight blocks of 128 rows, each packing all of B twice). It reports
// false, and touches nothing, where the CPU has no such kernel (it needs
// AVX-512 and F16C); the caller then takes Mul and its own magnitudes.
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

// The tile and the blocking of MulAbsH32. K is taken a block of h32K
// steps at a time, every row group's packed a for the block (a slab, 12
// bytes a value) made before the tiles run over it. Every block loads
// and stores each tile's sums again: at 1024 rows (BenchmarkSteps' gemm
// expect at 1024³, Expect whole) blocks of 256 steps, which kept the slab
// at 3 MiB, took 76–83 cpu-ms against 67–71 with K whole and a slab of 12
// MiB (three alternated runs, 2026-12-07), the sums of 1024 rows going
// out to memory and back once a block. gemm's ExpectBlocks hands it 128
// rows at 1024³ (a slab of 1.5 MiB) and at most 1024. At a decoding
// step's two row groups the slab (192 KiB) and a 32-column strip of B
// (64 KiB) stay in the core's L2 while the strip's two tiles pass over
// them.
const (
	h32Rows = 8
	h32Cols = 16
	h32K    = 1024
)

// h32MaxRows is the most rows one pass takes: more are taken h32MaxRows
// at a time, each such block reading B again, so that the slab (12 bytes
// a row and step) stays at most 12 MiB, where an Expect of a tall a
// whole (an NZ output's) would hold six times a's bytes. Variable for
// the test that cuts small products into such blocks.
var h32MaxRows = 1024

// h32Slab is one K-block's packed a: for row group g and step kk of a
// block of kcc steps, its rows' a at af[(g·kcc+kk)·h32Rows+r] and their
// magnitudes in fp32 at aa[…].
type h32Slab struct {
	af []float64
	aa []float32
}

// h32Slabs holds slabs between calls: a 1024³ reference makes eight
// calls of 1.5 MiB of slab each.
var h32Slabs sync.Pool

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
	if m > h32MaxRows {
		for r0 := 0; r0 < m; r0 += h32MaxRows {
			r1 := min(r0+h32MaxRows, m)
			mulAbsH32(kern, r1-r0, k, n, a[r0*k:r1*k], b, d[r0*n:r1*n], s[r0*n:r1*n])
		}
		return
	}
	groups := (m + h32Rows - 1) / h32Rows
	full := m / h32Rows // groups whose rows all exist
	kcb := min(k, h32K)
	slab, _ := h32Slabs.Get().(*h32Slab)
	if slab == nil || len(slab.af) < groups*kcb*h32Rows {
		slab = &h32Slab{af: make([]float64, groups*kcb*h32Rows), aa: make([]float32, groups*kcb*h32Rows)}
	}
	defer h32Slabs.Put(slab)
	tiles := n / h32Cols
	tail := n - tiles*h32Cols
	w := tiles * h32Cols
	// The last group's missing rows go to scratch rows of w columns; the
	// columns past the last whole tile to a tile of their own, over a
	// copy of them padded with zeros (bp, a K-block's worth), into
	// scratch for every group.
	var dp, sp, dt, st []float64
	var bp []float16.Float16
	if full < groups {
		dp, sp = make([]float64, h32Rows*w), make([]float64, h32Rows*w)
	}
	if tail > 0 {
		bp = make([]float16.Float16, kcb*h32Cols)
		dt, st = make([]float64, groups*h32Rows*h32Cols), make([]float64, groups*h32Rows*h32Cols)
	}
	// A core takes two tiles at a time (a 32-column strip of B, whole
	// cache lines of fp16), the tail tile a unit of its own.
	pairs := (tiles + 1) / 2
	units := pairs
	if tail > 0 {
		units++
	}
	for kb := 0; kb < k; kb += kcb {
		kcc := min(kcb, k-kb)
		af, aa := slab.af[:groups*kcc*h32Rows], slab.aa[:groups*kcc*h32Rows]
		parallel.For(groups, 1, func(g0, g1 int) {
			var row [h32K]float32
			for i := g0 * h32Rows; i < g1*h32Rows; i++ {
				g, r := i/h32Rows, i%h32Rows
				x := row[:kcc]
				if i < m {
					tensor.F16ToF32s(x, a[i*k+kb:i*k+kb+kcc])
				} else {
					// A row past m (the last group's): zeros, not
					// whatever an earlier call left in the slab.
					clear(x)
				}
				for kk, f := range x {
					af[(g*kcc+kk)*h32Rows+r] = float64(f)
					aa[(g*kcc+kk)*h32Rows+r] = abs32(f)
				}
			}
		})
		if tail > 0 {
			for kk := range kcc {
				copy(bp[kk*h32Cols:kk*h32Cols+tail], b[(kb+kk)*n+w:(kb+kk+1)*n])
			}
		}
		parallel.For(units, 1, func(u0, u1 int) {
			for u := u0; u < u1; u++ {
				if u == pairs {
					for g := range groups {
						o := g * h32Rows * h32Cols
						kern(kcc, af[g*kcc*h32Rows:], aa[g*kcc*h32Rows:], bp, h32Cols, dt[o:], st[o:], h32Cols, kb > 0)
					}
					continue
				}
				for t := 2 * u; t < min(2*u+2, tiles); t++ {
					j := t * h32Cols
					bt := b[kb*n+j:]
					for g := range groups {
						ag, aag := af[g*kcc*h32Rows:], aa[g*kcc*h32Rows:]
						if g < full {
							o := g*h32Rows*n + j
							kern(kcc, ag, aag, bt, n, d[o:], s[o:], n, kb > 0)
						} else {
							kern(kcc, ag, aag, bt, n, dp[j:], sp[j:], w, kb > 0)
						}
					}
				}
			}
		})
	}
	for r := range m - full*h32Rows {
		i := full*h32Rows + r
		copy(d[i*n:i*n+w], dp[r*w:(r+1)*w])
		copy(s[i*n:i*n+w], sp[r*w:(r+1)*w])
	}
	if tail > 0 {
		for i := range m {
			copy(d[i*n+w:(i+1)*n], dt[i*h32Cols:i*h32Cols+tail])
			copy(s[i*n+w:(i+1)*n], st[i*h32Cols:i*h32Cols+tail])
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
