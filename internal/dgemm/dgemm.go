// Package dgemm is the float64 matrix product of the verification path:
// d = A·B and its magnitude s = |A|·|B| in one blocked, packed pass over
// all cores, with register-blocked AVX2+FMA micro-kernels on amd64 (for
// d alone, AVX-512 where the CPU has it) and portable ones elsewhere; and
// for fp16 operands, d with s summed in fp32 in one pass over B where it
// lies (MulAbsH32, AVX-512).
//
// The summation order is the contract: every element of d and s starts
// from +0 and adds its products one at a time, k ascending, exactly as
// the plain loop
//
//	for i, j: d[i,j] = +0; for k ascending: d[i,j] += a[i,k]·b[k,j]
//
// (likewise s with |a|·|b|). The blocking only changes when an element's
// accumulator is held in a register and when in memory: a K-block resumes
// from the accumulator the previous one stored, never from a partial sum
// added afterwards. The micro-kernels use fused multiply-add, which rounds
// once where the loop rounds the product and then the sum; the two agree
// whenever every product a[i,k]·b[k,j] is exact in float64, which is the
// precondition of MulAbs (it holds when every value has at most 26
// significant bits within float64's exponent range: every fp32, fp16,
// bf16 and int8 value, and their Inf and NaN). Under it MulAbs equals the
// plain loop bit for bit, including IEEE special values (Inf·0 = NaN,
// Inf − Inf = NaN, a sum of −0 products is +0), except that a NaN's sign
// and payload are unspecified.
package dgemm

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/internal/parallel"
)

// Matrix is a row-major matrix whose elements are read as exact float64
// values, a run at a time: *tensor.Tensor is one, and so is Slice.
type Matrix interface {
	// Float64sFrom stores elements off, off+1, … off+len(dst)−1 into dst.
	Float64sFrom(off int, dst []float64)
}

// Slice is a Matrix held as float64 values.
type Slice []float64

// Float64sFrom copies elements off… into dst.
func (x Slice) Float64sFrom(off int, dst []float64) { copy(dst, x[off:off+len(dst)]) }

// The blocking. A micro-tile of C is mr×nr; the micro-kernel keeps its d
// and s accumulators (2·mr·nr/4 = 12 AVX registers) for kc steps of k.
// A packed B micro-panel (kc×nr values and their magnitudes, 16·kc bytes)
// stays in L1 while the mc rows of a packed A block (in L2) pass over it;
// a packed B block of kc×nc serves every row block.
//
// The 3×8 tile loads b into registers, reads |b| as FMA memory operands
// and masks the broadcast a into |a|: 11 loads and 3 logical operations
// per 12 FMAs. On the Zen 4 it was tuned on, the loads are the limit:
// broadcasting a packed |a| instead of masking (14 loads) took 25% more
// time, and a 6×4 tile (8 loads, 6 masks) 15% more. Alone on a packed
// block (BenchmarkMacro) it runs at about 89% of the core's FMA peak
// (58 GFLOP/s with 12 independent chains), which leaves AVX-512 little:
// a 6×16 zmm tile (24 accumulators, 10 loads and 6 masks per 24 FMAs)
// measured 5–8% faster alone and 2–3% in MulAbs, since the Zen 4 runs a
// 512-bit FMA as two 256-bit ones; splitting rows into a multiply and
// two adds (for Zen 4's separate add pipes; |a·b| = |a|·|b| as the
// product is exact) was 1–20% slower.
//
// Mul's tile (d alone, no masks) on a CPU with AVX-512 is 8×8, one zmm
// row per register: one load of b and eight FMAs with a broadcast a per
// step. On the Intel Xeon (Sapphire Rapids class) of 2026-12, alone on a
// block (BenchmarkMacro, one core) it ran at 60 GFLOP/s against the 6×8
// AVX2 tile's 40, and Mul at 1024³ took 31% less time; 8 rows also cut a
// decoding step's 16 rows into two whole tiles, where 6 leave an edge.
// Its eight sums already keep both FMA units busy: a 16×8 tile (sixteen
// sums) ran at 61 GFLOP/s against its 60.
// MulAbs has no AVX-512 form: a 6×8 zmm tile masking a into |a| (one
// logical operation per row and step beside its two FMAs) ran at 50
// GFLOP/s against the 3×8 AVX2 tile's 40 on the same block, too little
// for a second kernel on the paths that take MulAbs (fp32 and bf16
// inputs, K > 4096).
//
// nc = 1024: a packed B block of kc·nc float64 is 2 MiB (twice that in
// MulAbs; 512 KiB as fp16, Mul of an fp16 B), live while a 1024³ run
// judges its output; nc = 512 took 1.5 MB off that run's peak RSS but
// 10-15% more time in this package's part of it (A is packed again for
// every nc columns).
//
// Mul's fp16 tiles (mulH) widen B's eight values as they load them: one
// F16C conversion to fp32 and one to float64 per step, beside the eight
// FMAs. On BenchmarkMul's fp16-256x1024x1024 (a block of gemm's
// reference) the product took 21% less time than with float64 panels
// (5.58 against 7.09 ms), the packing being a quarter of the bytes. The
// 6×8 AVX2 tile, for CPUs without AVX-512, widens its two ymm halves in
// four operations a step beside twelve FMAs: on the same block (run with
// the AVX2 tiles on the same machine) it took 5% more time than on
// float64 panels (9.1 against 8.7 ms, six runs each); it is kept for the
// packed block's quarter of the memory, which gemm's Expected blocks are
// sized by.
const (
	mr     = 3 // MulAbs's tile rows
	mrMul  = 6 // Mul's tile rows (AVX2, portable)
	mrMul8 = 8 // Mul's tile rows with AVX-512
	mrMax  = 8
	nr     = 8
	kc     = 256
	mc     = 96   // multiple of mr, mrMul and mrMul8
	nc     = 1024 // multiple of nr
)

// A mulTile is one of Mul's micro-kernels: the rows of its tile, the
// kernel, its portable twin (same tile, same bits) and its name.
type mulTile struct {
	mr         int
	kern, twin kernelFunc
	name       string
}

// MulAbs sets d = a·b and s = |a|·|b| for row-major a [m,k] and b [k,n];
// d and s are [m,n] (at least m·n long) and overwritten. Every product
// a[i,k]·b[k,j] must be exact in float64 (see the package comment); then
// d and s are those of the plain loop, bit for bit.
func MulAbs(m, k, n int, a, b Matrix, d, s []float64) {
	run(variant{mr: mr, abs: true, kern: kernel}, m, k, n, a, b, d[:m*n], s[:m*n])
}

// Mul sets d = a·b alone, as MulAbs does (same precondition, same bits
// of d), for callers that bound the magnitudes some other way: with no s
// to accumulate, its micro-kernel keeps a 6×8 tile of d in registers (8×8
// with AVX-512) and does about half of MulAbs's work.
//
// An fp16 b (halfMatrix) is packed as its fp16 bit patterns, which the
// micro-kernel widens to float64 as it loads them (mulH, where the CPU
// can): the same values reach the same multiply-adds, so d has the same
// bits, and a packed block of B is a quarter of the bytes to write and
// read again (a 256-row block of gemm's reference at 1024³: −21%).
// Also for a product of fewer row blocks than cores (product.columns, a
// decoding step's), where each core packs strips of B of its own: once
// packBHalves wrote a panel at a time, the fp16 strips cost less than
// F16C widening into float64 panels (BenchmarkMul's decode-fp16, CPU
// time, six alternated runs each: 88 → 52 ms, −41%, 2026-12-06; before
// that fix the fp16 packing took 31.6 against 24.9 ms).
func Mul(m, k, n int, a, b Matrix, d []float64) {
	if hb, ok := b.(halfMatrix); ok && hb.F16() != nil && mulH.kern != nil {
		run(variant{mr: mulH.mr, h: true, kern: mulH.kern}, m, k, n, a, b, d[:m*n], nil)
		return
	}
	run(variant{mr: mul.mr, kern: mul.kern}, m, k, n, a, b, d[:m*n], nil)
}

// halfMatrix is a Matrix of fp16 values that hands over their row-major
// bit patterns (an fp16 *tensor.Tensor; F16 is nil for another dtype).
type halfMatrix interface {
	Matrix
	F16() []float16.Float16
}

// A variant is one of the products: its micro-tile's rows, whether it
// accumulates s (B's packed panels then carry |b| after b), whether B's
// panels hold fp16 bit patterns (h: Mul of an fp16 B, mulH's tiles) and
// its micro-kernel.
type variant struct {
	mr   int
	abs  bool
	h    bool
	kern kernelFunc
}

// kernelFunc is a micro-kernel: for kcc steps, the mr×nr tile of d (row
// stride ldc), and with the magnitudes that of s, accumulates from the
// packed panels a and b (kernelGo, mulGo).
type kernelFunc func(kcc int, a, b, d, s []float64, ldc int, load bool)

// panel is how many float64 slots a packed B micro-panel takes per step
// of k: nr values, 2·nr with their magnitudes, or nr fp16 bit patterns
// four to a slot.
func (v variant) panel() int {
	switch {
	case v.abs:
		return 2 * nr
	case v.h:
		return nr / 4
	}
	return nr
}

// run is MulAbs (v.abs) or Mul on d and s of exactly m·n (s nil for Mul).
func run(v variant, m, k, n int, a, b Matrix, d, s []float64) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		clear(d)
		clear(s)
		return
	}
	ncb := min(nc, roundUp(n, nr))
	kcb := min(kc, k)
	pb := getBuf(&bBufs, packedBLen(v, kcb, ncb))
	defer bBufs.Put(pb)
	// Row blocks of at most mc rows, as many as a multiple of the workers
	// and of equal size (but the last): with 11 blocks of 96 rows for
	// m = 1024, one of two workers would do 544 rows while the other
	// waited at the end of every K-block; 12 blocks of 87 make it 522.
	blocks := (m + mc - 1) / mc
	workers := min(runtime.GOMAXPROCS(0), blocks)
	mcb := roundUp((m+roundUp(blocks, workers)-1)/roundUp(blocks, workers), v.mr)
	blocks = (m + mcb - 1) / mcb
	p := product{v: v, m: m, k: k, n: n, a: a, b: b, d: d, s: s}
	if byColumns(m, n) {
		p.columns(mcb, kcb)
		return
	}
	for jc := 0; jc < n; jc += nc {
		ncc := min(nc, n-jc)
		for pc := 0; pc < k; pc += kc {
			kcc := min(kc, k-pc)
			packB(b, n, pc, kcc, jc, ncc, v, *pb)
			claim(workers, blocks, func(next func() (int, bool)) {
				pa := getBuf(&aBufs, mcb*kcc)
				defer aBufs.Put(pa)
				for ib, ok := next(); ok; ib, ok = next() {
					ic := ib * mcb
					p.block(ic, min(mcb, m-ic), pc, kcc, jc, ncc, *pa, *pb)
				}
			})
		}
	}
}

// byColumns reports whether run shares an m×n product among the cores by
// blocks of columns (product.columns) rather than of rows: when it has
// fewer row blocks of mc than cores and more than one block of nc
// columns.
func byColumns(m, n int) bool {
	return (m+mc-1)/mc < runtime.GOMAXPROCS(0) && n > nc
}

// product is one call of run: its variant, sizes, operands and results.
type product struct {
	v       variant
	m, k, n int
	a, b    Matrix
	d, s    []float64 // s nil without magnitudes
}

// block packs rows ic…ic+mcc−1 of a's K-block pc…pc+kcc−1 into pa and
// multiplies them by the packed B block pb into columns jc…jc+ncc−1 of d
// (and s), continuing their sums after the first K-block.
func (p *product) block(ic, mcc, pc, kcc, jc, ncc int, pa, pb []float64) {
	packA(p.a, p.k, ic, mcc, pc, kcc, p.v.mr, pa)
	p.macro(ic, mcc, pc, kcc, jc, ncc, pa, pb)
}

// macro multiplies the packed rows ic…ic+mcc−1 of a's K-block pc…pc+kcc−1
// (pa) by the packed B block pb into columns jc…jc+ncc−1 of d (and s).
func (p *product) macro(ic, mcc, pc, kcc, jc, ncc int, pa, pb []float64) {
	var sb []float64
	if p.s != nil {
		sb = p.s[ic*p.n+jc:]
	}
	macro(p.v, mcc, kcc, ncc, pa, pb, p.d[ic*p.n+jc:], sb, p.n, pc > 0)
}

// columns is run for a product of fewer row blocks (of mcb rows) than
// cores, such as a decoding step's few rows against a wide B: its blocks
// of nc columns are claimed by the workers, where run would leave all but
// one core idle while it multiplies. Each worker packs A's rows of a
// K-block once per column block and then B a strip of stripCols columns
// at a time, which the strip's micro-kernels read while it is in the
// core's L2: with few rows every packed value of B is used only a few
// times, and a whole packed block went out to memory and came back
// (decode-fp16 in BenchmarkMul: −11%). Columns are disjoint and every element
// still takes its K-blocks in order through the same micro-kernel on the
// same packed values, so the bits are run's.
func (p *product) columns(mcb, kcb int) {
	cols := (p.n + nc - 1) / nc
	blocks := (p.m + mcb - 1) / mcb
	claim(min(runtime.GOMAXPROCS(0), cols), cols, func(next func() (int, bool)) {
		pb := getBuf(&bBufs, packedBLen(p.v, kcb, min(stripCols, roundUp(p.n, nr))))
		defer bBufs.Put(pb)
		pa := getBuf(&aBufs, blocks*mcb*kcb)
		defer aBufs.Put(pa)
		for jb, ok := next(); ok; jb, ok = next() {
			jc := jb * nc
			ncc := min(nc, p.n-jc)
			for pc := 0; pc < p.k; pc += kc {
				kcc := min(kc, p.k-pc)
				for ib := range blocks {
					ic := ib * mcb
					packA(p.a, p.k, ic, min(mcb, p.m-ic), pc, kcc, p.v.mr, (*pa)[ib*mcb*kcc:])
				}
				for j0 := 0; j0 < ncc; j0 += stripCols {
					scc := min(stripCols, ncc-j0)
					packBGroups(p.b, p.n, pc, kcc, jc+j0, scc, p.v, *pb, 0, (kcc+packRows-1)/packRows)
					for ib := range blocks {
						ic := ib * mcb
						p.macro(ic, min(mcb, p.m-ic), pc, kcc, jc+j0, scc, (*pa)[ib*mcb*kcc:], *pb)
					}
				}
			}
		}
	})
}

// stripCols is how many columns of B columns packs at a time (a multiple
// of nr): 1 MiB of packed float64 values for Mul over a K-block of kc,
// half the L2 of the machine it was measured on. On decode-fp16 in
// BenchmarkMul, 16 and 64 columns (per-call costs) were slower than whole
// blocks of nc, 256 and 512 about 10% faster.
const stripCols = 512

// claim runs work on workers goroutines, the caller's among them; each
// takes items by next, which hands out 0…n−1 once each to whichever
// worker asks first (the machine is shared, so a static split would wait
// for the slowest core) and then reports false.
func claim(workers, n int, work func(next func() (int, bool))) {
	var c atomic.Int64
	next := func() (int, bool) {
		i := int(c.Add(1) - 1)
		return i, i < n
	}
	parallel.Do(workers, func(int) { work(next) })
}

// macro runs v's micro-kernel over one mcc×ncc block of C (d and s, row
// stride ldc; s nil without magnitudes) for one K-block of kcc steps;
// load continues from the accumulators in d and s, otherwise they start
// at +0.
func macro(v variant, mcc, kcc, ncc int, pa, pb, d, s []float64, ldc int, load bool) {
	var td, ts [mrMax * nr]float64
	tsv := ts[:]
	if s == nil {
		tsv = nil
	}
	vmr, w := v.mr, v.panel()
	for q := 0; q*nr < ncc; q++ {
		bp := pb[q*w*kcc : (q+1)*w*kcc]
		cols := min(nr, ncc-q*nr)
		for p := 0; p*vmr < mcc; p++ {
			ap := pa[p*vmr*kcc : (p+1)*vmr*kcc]
			rows := min(vmr, mcc-p*vmr)
			off := p*vmr*ldc + q*nr
			if rows == vmr && cols == nr {
				var so []float64
				if s != nil {
					so = s[off:]
				}
				v.kern(kcc, ap, bp, d[off:], so, ldc, load)
				continue
			}
			// An edge tile runs on a full-size copy: the padding rows and
			// columns of the packed panels are zero and their results dropped.
			clear(td[:])
			clear(ts[:])
			if load {
				for r := range rows {
					copy(td[r*nr:r*nr+cols], d[off+r*ldc:])
					if s != nil {
						copy(ts[r*nr:r*nr+cols], s[off+r*ldc:])
					}
				}
			}
			v.kern(kcc, ap, bp, td[:], tsv, nr, load)
			for r := range rows {
				copy(d[off+r*ldc:off+r*ldc+cols], td[r*nr:])
				if s != nil {
					copy(s[off+r*ldc:off+r*ldc+cols], ts[r*nr:])
				}
			}
		}
	}
}

// packA packs rows ic…ic+mcc−1, columns pc…pc+kcc−1 of a (K columns) into
// micro-panels of tmr rows: panel p holds, for each step kk, the tmr
// values a[ic+p·tmr+r, pc+kk] (rows past mcc are zero).
func packA(a Matrix, k, ic, mcc, pc, kcc, tmr int, pa []float64) {
	var row [kc]float64
	for i := range roundUp(mcc, tmr) {
		p, r := i/tmr, i%tmr
		dst := pa[p*tmr*kcc:]
		if i >= mcc {
			for kk := range kcc {
				dst[kk*tmr+r] = 0
			}
			continue
		}
		a.Float64sFrom((ic+i)*k+pc, row[:kcc])
		for kk, v := range row[:kcc] {
			dst[kk*tmr+r] = v
		}
	}
}

// packB packs rows pc…pc+kcc−1, columns jc…jc+ncc−1 of b (N columns) into
// micro-panels of nr columns: panel q holds, for each step kk, the nr
// values b[pc+kk, jc+q·nr+c] and then, if abs, their magnitudes (columns
// past ncc are zero). It reads packRows rows at a time and then writes
// panel by panel, so that each panel's part is one contiguous run:
// writing a row at a time would jump 16·kcc bytes (a power of two) from
// panel to panel.
func packB(b Matrix, n, pc, kcc, jc, ncc int, v variant, pb []float64) {
	parallel.For((kcc+packRows-1)/packRows, 4, func(lo, hi int) {
		packBGroups(b, n, pc, kcc, jc, ncc, v, pb, lo, hi)
	})
}

// packRows is how many rows of B packB reads before it writes them out.
const packRows = 8

// groupedMatrix is a Matrix that may store a run of its elements straight
// into packB's layout: groups of nr values at a stride, as
// tensor.Tensor.Float64sGrouped does (for fp16, by F16C), with no buffer
// in between; it reports whether it did.
type groupedMatrix interface {
	Float64sGrouped(off, group, runs, stride int, dst []float64) bool
}

// packBGroups is packB for the groups of packRows rows [lo, hi).
func packBGroups(b Matrix, n, pc, kcc, jc, ncc int, v variant, pb []float64, lo, hi int) {
	if v.h {
		packBHalves(b.(halfMatrix).F16(), n, pc, kcc, jc, ncc, pb, lo, hi)
		return
	}
	abs := v.abs
	if !abs && packBDirect(b, n, pc, kcc, jc, ncc, pb, lo, hi) {
		return
	}
	width := roundUp(ncc, nr)
	w := v.panel()
	rp := getBuf(&rowBufs, packRows*width)
	defer rowBufs.Put(rp)
	rows := *rp
	for g := lo; g < hi; g++ {
		k0 := g * packRows
		cnt := min(packRows, kcc-k0)
		for r := range cnt {
			b.Float64sFrom((pc+k0+r)*n+jc, rows[r*width:r*width+ncc])
		}
		for q := range width / nr {
			dst := pb[q*w*kcc+k0*w:]
			for r := range cnt {
				src := (*[nr]float64)(rows[r*width+q*nr:])
				if !abs {
					// Through a value: an assignment from one
					// array pointer to another compiles to a call
					// of memmove per 64 bytes (the two may
					// overlap); through a local it is eight vector
					// moves.
					v := *src
					*(*[nr]float64)(dst[r*nr:]) = v
					continue
				}
				d := (*[2 * nr]float64)(dst[r*2*nr:])
				for c, v := range src {
					d[c] = v
					d[nr+c] = math.Abs(v)
				}
			}
		}
	}
}

// packBHalves is packBGroups for fp16 panels (variant.h): the bit
// patterns of b[pc+kk, jc+q·nr+c] from h, b's row-major fp16 values
// (columns past ncc are +0). It writes one panel's rows of the groups at
// a time, 16 bytes a row and contiguous: a panel's 16·kcc bytes are a
// power of two (4 KiB at kc), so going across the panels a row or a
// group at a time, as packBGroups does with float64 values, put every
// write in the same set of the L1 cache (the decoding shape's packing
// took twice the time of its products).
func packBHalves(h []float16.Float16, n, pc, kcc, jc, ncc int, pb []float64, lo, hi int) {
	dst := halves(pb)
	k0, k1 := lo*packRows, min(hi*packRows, kcc)
	whole := ncc / nr
	for q := range whole {
		out := dst[q*nr*kcc:]
		src := h[jc+q*nr:]
		for kk := k0; kk < k1; kk++ {
			// Through a local: eight halves in one 16-byte move, where
			// copy would call memmove for each.
			v := *(*[nr]float16.Float16)(src[(pc+kk)*n:])
			*(*[nr]float16.Float16)(out[kk*nr:]) = v
		}
	}
	if tail := ncc - whole*nr; tail > 0 {
		out := dst[whole*nr*kcc:]
		for kk := k0; kk < k1; kk++ {
			row := out[kk*nr : kk*nr+nr]
			copy(row, h[(pc+kk)*n+jc+whole*nr:][:tail])
			clear(row[tail:])
		}
	}
}

// halves is b's bytes as fp16 bit patterns, four to a float64: how an
// fp16 packed panel (variant.h) is held in the float64 buffers of packed
// blocks.
func halves(b []float64) []float16.Float16 {
	return unsafe.Slice((*float16.Float16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)*4)
}

// packBDirect is packBGroups without magnitudes for a b that stores its
// rows' whole micro-panels straight into pb (groupedMatrix), the last few
// columns (if any) through Float64sFrom and the last micro-panel's
// padding set to +0, and reports whether it did. It fills the same values
// as packBGroups but in that padding, whose values no stored element
// reads (TestPackBDirect).
func packBDirect(b Matrix, n, pc, kcc, jc, ncc int, pb []float64, lo, hi int) bool {
	gm, ok := b.(groupedMatrix)
	whole := ncc / nr
	if !ok || whole == 0 {
		return false
	}
	w := variant{}.panel()
	for g := lo; g < hi; g++ {
		k0 := g * packRows
		for r := range min(packRows, kcc-k0) {
			off := (pc+k0+r)*n + jc
			if !gm.Float64sGrouped(off, nr, whole, w*kcc, pb[(k0+r)*w:]) {
				return false
			}
			if tail := ncc - whole*nr; tail > 0 {
				last := pb[whole*w*kcc+(k0+r)*w:][:nr]
				b.Float64sFrom(off+whole*nr, last[:tail])
				clear(last[tail:])
			}
		}
	}
	return true
}

// packedBLen is the length of a packed B block of kcb steps and ncb
// columns (a multiple of nr): ncb/nr micro-panels of v.panel() values
// per step. packB fills exactly that much (TestPackedBLen).
func packedBLen(v variant, kcb, ncb int) int { return ncb / nr * v.panel() * kcb }

func roundUp(x, to int) int { return (x + to - 1) / to * to }

// The buffers of packed B blocks, packed A blocks and packB's rows, each
// recycled between calls in a pool of its own: a verification run calls
// MulAbs once per case (or once per block of rows, ExpectBlocks), and
// many cases are small; with one pool for all three, a Get for a B block
// kept finding an A block too small for it and allocated afresh.
var bBufs, aBufs, rowBufs sync.Pool

// getBuf returns a buffer of n float64s from pool.
func getBuf(pool *sync.Pool, n int) *[]float64 {
	if p, ok := pool.Get().(*[]float64); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	b := make([]float64, n)
	return &b
}
