// Package gemm32 holds the emulator's register-blocked matrix
// multiply-accumulate kernels on 32-bit elements, C += A·B:
//
//   - Float32, the cube's sequential fp32 model: C[i,j] ← RN32(C[i,j] +
//     A[i,k]·B[k,j]) for k ascending, each step one rounding of the exact
//     value, i.e. one fused multiply-add (for fp16 or bf16 inputs, whose
//     products are exact in fp32, also the multiply-then-add of a SIMD
//     saxpy);
//   - Int32, the int8 → int32 accumulate: products and sums in int32 with
//     wrap-around (Go's int32 arithmetic), which is associative, so the
//     order does not matter.
//
// Both run a packed 6×16 micro-kernel: AVX2 (+FMA) assembly where the CPU
// has it, a portable pure-Go kernel with the same bits everywhere else.
// Every element of C still sees its k terms in ascending order, one FMA
// each, so blocking C into tiles, packing B and using several cores change
// nothing in the result. Every NaN a Float32 step produces (an invalid
// operation, or a NaN operand or accumulator) is the default NaN
// 0xFFC00000 (sign set, quiet, zero payload): the hardware's NaN depends
// on the host (x86's default NaN has the sign set, arm64's not, and which
// operand's payload survives differs between architectures and x86
// vendors), so the assembly kernel replaces any NaN in its registers
// before it stores them, and the portable kernel computes it so. Float32
// bits are therefore the same on both kernels and every host, whatever
// A, B and C hold.
package gemm32

import (
	"math"
	"sync"
	"unsafe"

	"github.com/npuverify/npuverify/internal/parallel"
)

// The micro-kernel's register block of C: mr rows × nr columns (12 ymm
// accumulators with AVX2).
const (
	mr = 6
	nr = 16
)

// Float32 computes C += A·B for C [m × n] (row stride ldc), A [m × k]
// (row stride lda) and B [k × n] (row stride ldb): every C[i,j] becomes
// fma(A[i,k], B[k,j], ·) applied for k = 0, …, k−1 in order, each a
// single rounding to fp32. It uses the assembly micro-kernel when the CPU
// has AVX2 and FMA. The slices must hold the strided matrices (it panics
// on a short slice, as an index out of range would).
func Float32(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	kern := kernelPortable
	if hasAsm {
		kern = kernelAsm
	}
	accumulate(&f32Pool, kern, kernelAsmPair(), m, n, k, a, lda, b, ldb, c, ldc)
}

// Float32Portable is Float32 on the portable pure-Go micro-kernel
// whatever the CPU: the reference the assembly is tested against.
func Float32Portable(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	accumulate(&f32Pool, kernelPortable, nil, m, n, k, a, lda, b, ldb, c, ldc)
}

// Int32 computes C += A·B as Float32 does, in int32 arithmetic with
// wrap-around (exact for int8 values up to k = 2^17).
func Int32(m, n, k int, a []int32, lda int, b []int32, ldb int, c []int32, ldc int) {
	kern := kernelPortableInt
	if hasAsm {
		kern = kernelAsmInt
	}
	accumulate(&i32Pool, kern, nil, m, n, k, a, lda, b, ldb, c, ldc)
}

// Int32Portable is Int32 on the portable pure-Go micro-kernel.
func Int32Portable(m, n, k int, a []int32, lda int, b []int32, ldb int, c []int32, ldc int) {
	accumulate(&i32Pool, kernelPortableInt, nil, m, n, k, a, lda, b, ldb, c, ldc)
}

// elem is a 32-bit element: the kernels and packB move them as bits.
type elem interface{ float32 | int32 }

// microKernel adds A[6×k]·Bp to C[6×16]: a is A's first row (row stride
// lda), b the packed panel of B (16 elements per k), c C's first row (row
// stride ldc). k ≥ 1. (A kernel of two tiles at once, mulPacked's kern2,
// does the same on twelve rows.)
type microKernel[T elem] func(k int, a []T, lda int, b, c []T, ldc int)

// Pools of packed copies of B (and of A's edge rows).
var f32Pool, i32Pool sync.Pool // *[]float32, *[]int32

// accumulate is C += A·B on the micro-kernel kern. B is packed once into
// column panels of nr (k-major, the last panel zero-padded) so that the
// kernel reads it along memory; A is read in place (six row streams). The
// loops run panel by panel of B (it stays in L1 while every row block of
// A passes by). Tiles of C at the ragged edges run through a full-size
// scratch tile, with the missing rows of A repeated and the missing
// columns of B zero: they compute throw-away values only.
func accumulate[T elem](pool *sync.Pool, kern, kern2 microKernel[T], m, n, k int, a []T, lda int, b []T, ldb int, c []T, ldc int) {
	if m <= 0 || n <= 0 || k <= 0 {
		return
	}
	_ = a[(m-1)*lda+k-1]
	_ = b[(k-1)*ldb+n-1]
	_ = c[(m-1)*ldc+n-1]
	panels := (n + nr - 1) / nr
	// One pooled scratch: packed B, the edge tile of C, A's edge rows.
	pp := getSlice[T](pool, panels*k*nr+mr*nr+mr*k)
	defer pool.Put(pp)
	bp := (*pp)[:panels*k*nr]
	packB(bp, b, ldb, k, n)
	mulPacked(kern, kern2, m, n, k, a, lda, bp, c, ldc, (*[mr * nr]T)((*pp)[panels*k*nr:]), (*pp)[panels*k*nr+mr*nr:])
}

// mulPacked is accumulate's loops on B packed already (bp), with scratch
// for the edge tile of C and for A's edge rows (mr·k). kern2, if not nil,
// is kern on two whole tiles at once (2·mr rows), which it takes where
// two are left: every element of C still gets its k terms in ascending
// order, so the bits are kern's.
func mulPacked[T elem](kern, kern2 microKernel[T], m, n, k int, a []T, lda int, bp, c []T, ldc int, edgeC *[mr * nr]T, edgeA []T) {
	panels := (n + nr - 1) / nr
	mFull := m / mr * mr
	if mFull < m {
		for r := range mr {
			src := a[min(mFull+r, m-1)*lda:]
			copy(edgeA[r*k:(r+1)*k], src[:k])
		}
	}
	for p := range panels {
		j0 := p * nr
		bpan := bp[p*k*nr : (p+1)*k*nr]
		cols := min(nr, n-j0)
		for i0 := 0; i0 < mFull; i0 += mr {
			switch {
			case cols == nr && kern2 != nil && i0+2*mr <= mFull:
				kern2(k, a[i0*lda:], lda, bpan, c[i0*ldc+j0:], ldc)
				i0 += mr
			case cols == nr:
				kern(k, a[i0*lda:], lda, bpan, c[i0*ldc+j0:], ldc)
			default:
				edgeTile(kern, k, a[i0*lda:], lda, bpan, c[i0*ldc+j0:], ldc, mr, cols, edgeC)
			}
		}
		if mFull < m {
			edgeTile(kern, k, edgeA, k, bpan, c[mFull*ldc+j0:], ldc, m-mFull, cols, edgeC)
		}
	}
}

// PackedFloat32 is a B [k × n] packed once for Float32 products of many
// row blocks of A with it, on several cores at once (it is only read):
// Float32 packs B on every call.
type PackedFloat32 struct {
	bp   []float32
	k, n int
	// Serial makes PackRows and PackPanels pack on the calling goroutine,
	// for a caller that already gives each core a part of B of its own.
	Serial bool
}

// PackFloat32 packs B [k × n] (row stride ldb) for MulAdd.
func PackFloat32(k, n int, b []float32, ldb int) *PackedFloat32 {
	p := &PackedFloat32{k: k, n: n}
	if k > 0 && n > 0 {
		_ = b[(k-1)*ldb+n-1]
		p.bp = make([]float32, (n+nr-1)/nr*k*nr)
		packB(p.bp, b, ldb, k, n)
	}
	return p
}

// PackFloat32Rows is PackFloat32 of the B whose row kk (n values) row
// stores into dst, for a B that is not held as fp32: row is called once
// per kk, from several goroutines at once (parallel.For over kk).
func PackFloat32Rows(k, n int, row func(kk int, dst []float32)) *PackedFloat32 {
	p := &PackedFloat32{}
	p.PackRows(k, n, row)
	return p
}

// PackRows makes p PackFloat32Rows(k, n, row), reusing p's memory: a
// caller that packs B a block of rows at a time holds one block, not B.
// p must not be in use by MulAdd meanwhile.
func (p *PackedFloat32) PackRows(k, n int, row func(kk int, dst []float32)) {
	panels := p.reset(k, n)
	if panels == 0 {
		return
	}
	// A few rows at a time: row writes them into rb, from where each
	// panel's part goes out as one contiguous run. (Row by row, each row
	// stored one 64-byte piece into every panel, k·nr·4 bytes apart: a
	// cache line and a TLB entry per piece.)
	const sub = 16
	w := panels * nr
	p.split(k, func(lo, hi int) {
		pp := getSlice[float32](&rowPool, sub*w)
		defer rowPool.Put(pp)
		rb := *pp
		for r := range sub {
			clear(rb[r*w+n : (r+1)*w]) // the last panel's padding
		}
		for k0 := lo; k0 < hi; k0 += sub {
			rows := min(sub, hi-k0)
			for r := range rows {
				row(k0+r, rb[r*w:r*w+n])
			}
			for q := range panels {
				dst := p.bp[(q*k+k0)*nr : (q*k+k0+rows)*nr]
				for r := range rows {
					// Through a local value: vector moves, where copy
					// would call memmove for every 64 bytes.
					v := *(*[nr]float32)(rb[r*w+q*nr:])
					*(*[nr]float32)(dst[r*nr:]) = v
				}
			}
		}
	})
}

// PanelWidth is how many columns of B one packed panel holds: the width
// of the pieces PackPanels asks for.
const PanelWidth = nr

// PackPanels makes p PackFloat32 of the k×n B that piece stores a piece
// at a time, reusing p's memory: piece(kk0, rows, j0, cols, dst) stores
// rows [kk0, kk0+rows) of B's columns [j0, j0+cols) into dst, row r at
// dst[r·PanelWidth:], cols values (PanelWidth but in the last panel,
// whose padding is +0 already). A piece is at most 16 rows, and lies in
// the packed block, so a caller that converts its values as it stores
// them (ops' |B| from fp16) writes them once, in place, where PackRows
// has them written to a row buffer and copied. piece is called from
// several goroutines at once. p must not be in use by MulAdd meanwhile.
func (p *PackedFloat32) PackPanels(k, n int, piece func(kk0, rows, j0, cols int, dst []float32)) {
	panels := p.reset(k, n)
	if panels == 0 {
		return
	}
	const sub = 16 // PackRows's: a panel's part of them is 1 KiB
	p.split(k, func(lo, hi int) {
		for k0 := lo; k0 < hi; k0 += sub {
			rows := min(sub, hi-k0)
			for q := range panels {
				dst := p.bp[(q*k+k0)*nr : (q*k+k0+rows)*nr]
				cols := min(nr, n-q*nr)
				if cols < nr {
					clear(dst)
				}
				piece(k0, rows, q*nr, cols, dst)
			}
		}
	})
}

// split runs fn on ranges of B's k rows: over the cores, or the whole on
// the calling goroutine when p is Serial.
func (p *PackedFloat32) split(k int, fn func(lo, hi int)) {
	if p.Serial {
		fn(0, k)
		return
	}
	parallel.For(k, 64, fn)
}

// reset sizes p for a k×n B, reusing its memory, and returns its number
// of panels (0 for an empty B).
func (p *PackedFloat32) reset(k, n int) (panels int) {
	p.k, p.n = k, n
	if k <= 0 || n <= 0 {
		p.bp = p.bp[:0]
		return 0
	}
	panels = (n + nr - 1) / nr
	if cap(p.bp) < panels*k*nr {
		p.bp = make([]float32, panels*k*nr)
	}
	p.bp = p.bp[:panels*k*nr]
	return panels
}

// rowPool recycles PackRows's row buffers.
var rowPool sync.Pool

// MulAdd computes C += A·B for A [m × k] (row stride lda) and C [m × n]
// (row stride ldc), with the bits of Float32 on the same operands.
func (p *PackedFloat32) MulAdd(m int, a []float32, lda int, c []float32, ldc int) {
	k, n := p.k, p.n
	if m <= 0 || n <= 0 || k <= 0 {
		return
	}
	_ = a[(m-1)*lda+k-1]
	_ = c[(m-1)*ldc+n-1]
	kern := kernelPortable
	if hasAsm {
		kern = kernelAsm
	}
	var edgeC [mr * nr]float32
	var edgeA []float32
	if m%mr != 0 {
		edgeA = make([]float32, mr*k)
	}
	mulPacked(kern, kernelAsmPair(), m, n, k, a, lda, p.bp, c, ldc, &edgeC, edgeA)
}

// edgeTile runs kern on the scratch tile t for the rows × cols corner of
// C at c (row stride ldc); a holds six rows of A (row stride lda).
func edgeTile[T elem](kern microKernel[T], k int, a []T, lda int, bpan, c []T, ldc, rows, cols int, t *[mr * nr]T) {
	for r := range rows {
		copy(t[r*nr:r*nr+cols], c[r*ldc:r*ldc+cols])
	}
	kern(k, a, lda, bpan, t[:], nr)
	for r := range rows {
		copy(c[r*ldc:r*ldc+cols], t[r*nr:r*nr+cols])
	}
}

// packB copies B [k × n] (row stride ldb) into bp as column panels of nr,
// each k-major (panel p holds B[kk, p·nr + j] at kk·nr + j), the columns
// past n zero.
func packB[T elem](bp, b []T, ldb, k, n int) {
	full := n / nr
	if full > 0 {
		_ = bp[full*k*nr-1]
		packFull(unsafe.Pointer(&bp[0]), unsafe.Pointer(&b[0]), ldb, k, full)
	}
	if full*nr < n {
		for kk := range k {
			d := bp[(full*k+kk)*nr : (full*k+kk+1)*nr]
			copy(d, b[kk*ldb+full*nr:kk*ldb+n])
			clear(d[n-full*nr:])
		}
	}
}

// packFullPortable is packB's full panels (the first panels·nr columns)
// in pure Go, on the elements' bits.
func packFullPortable(bp, b unsafe.Pointer, ldb, k, panels int) {
	type row = [nr]uint32
	for kk := range k {
		src := unsafe.Add(b, kk*ldb*4)
		for p := range panels {
			*(*row)(unsafe.Add(bp, (p*k+kk)*nr*4)) = *(*row)(unsafe.Add(src, p*nr*4))
		}
	}
}

// getSlice returns a pooled slice of length n (the pointer goes back to
// the pool, so that recycling allocates nothing).
func getSlice[T elem](pool *sync.Pool, n int) *[]T {
	v, ok := pool.Get().(*[]T)
	if !ok {
		v = new([]T)
	}
	if cap(*v) < n {
		*v = make([]T, n)
	}
	*v = (*v)[:n]
	return v
}

// kernelPortableInt is the int32 micro-kernel in pure Go.
func kernelPortableInt(k int, a []int32, lda int, b, c []int32, ldc int) {
	for r := range mr {
		ar := a[r*lda : r*lda+k]
		cr := c[r*ldc : r*ldc+nr]
		for j := range nr {
			acc := cr[j]
			for kk, x := range ar {
				acc += x * b[kk*nr+j]
			}
			cr[j] = acc
		}
	}
}

// kernelPortable is the micro-kernel in pure Go: for each element of the
// 6×16 tile, fma32 over k ascending.
func kernelPortable(k int, a []float32, lda int, b, c []float32, ldc int) {
	for r := range mr {
		ar := a[r*lda : r*lda+k]
		cr := c[r*ldc : r*ldc+nr]
		for j := range nr {
			acc := cr[j]
			for kk, x := range ar {
				acc = fma32(x, b[kk*nr+j], acc)
			}
			cr[j] = acc
		}
	}
}

// fma32 returns RN32(a·b + c) with one rounding, as VFMADD231PS computes
// it, except that a NaN result is the default NaN (the package's
// convention; the assembly kernel blends it in before its stores). The
// product is exact in float64 (24 + 24 significand bits); the sum's
// float64 rounding error e (twoSum) decides the fp32 rounding when the float64 sum s sits exactly halfway between
// two fp32 values, the one case where rounding s again would differ.
func fma32(a, b, c float32) float32 {
	if a != a || b != b || c != c {
		return defaultNaN
	}
	// The conversion rounds the (exact) product on its own: the compiler
	// must not fuse it into s or into twoSum's steps below, which are
	// error-free only for separately rounded operations.
	p := float64(float64(a) * float64(b))
	s := p + float64(c)
	if math.IsNaN(s) || math.IsInf(s, 0) {
		if s != s {
			return defaultNaN // Inf·0 or Inf − Inf
		}
		return float32(s) // ±Inf
	}
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb)
	r := float32(s)
	if e == 0 || float64(r) == s {
		return r
	}
	if math.IsInf(float64(r), 0) {
		// s ≥ MaxFloat32 + ulp/2 in magnitude: only s exactly at that
		// midpoint with e pulling back rounds to MaxFloat32.
		if math.Abs(s) == 0x1.ffffffp127 && (e < 0) != (s < 0) {
			return float32(math.Copysign(math.MaxFloat32, s))
		}
		return r
	}
	// The other fp32 neighbour of s; s is a midpoint iff it lies halfway.
	toward := float32(math.Inf(1))
	if s < float64(r) {
		toward = float32(math.Inf(-1))
	}
	o := math.Nextafter32(r, toward)
	if float64(o)-s != s-float64(r) {
		return r
	}
	if (e > 0) == (float64(o) > s) {
		return o
	}
	return r
}

// defaultNaN is the fp32 default NaN, every NaN result of Float32 (a
// variable: Go has no NaN constants).
var defaultNaN = math.Float32frombits(0xFFC00000)
