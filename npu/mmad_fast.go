package npu

import (
	"math"
	"sync"

	"github.com/npuverify/npuverify/internal/gemm32"
	"github.com/npuverify/npuverify/tensor"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// The fast paths of Mmad. Each computes exactly what mmadReference
// computes (TestMmadFastMatchesReference checks the bits), only faster:
// mmadFMA runs the sequential fp32 model as one fused multiply-add per
// step in a register-blocked SIMD kernel (package gemm32) when A and B
// are finite, mmadInt runs gemm32's int32 kernel (exact: int32
// wrap-around is associative), mmadSaxpy and mmadGer run the
// sequential fp32 model as SIMD multiply-then-add when every product is
// exact, mmadFused and mmadBlocked walk C row by row so that B is read
// along memory.

// The fast paths, as mmadChoose names them.
const (
	pathFMA     = "fma"     // mmadFMA
	pathInt     = "int"     // mmadInt
	pathBlocked = "blocked" // mmadBlocked
	pathGer     = "ger"     // mmadGer
	pathSaxpy   = "saxpy"   // mmadSaxpy
	pathFused   = "fused"   // mmadFused
)

// mmadChoose picks the fast path for p given the operands and the
// accumulators cf as they are before the Mmad.
//
// mmadFMA is the sequential fp32 model whenever A and B are finite: each
// step of the model, RN32(acc + a·b) with one rounding of the exact value,
// is by definition one fp32 FMA, products exact or not (fp32 inputs
// included), and both make every NaN accumulator the default NaN.
// (Inf or NaN in A or B would give the same bits too now that no payload
// survives; the path is kept to finite operands as it was proved.) Under
// Exact32 it also needs what mmadGer needs: the model's saxpy skips a zero
// a[i,k] on a −0 or signalling-NaN accumulator, the FMA does not.
func mmadChoose(p MmadParams, a, b *L0Tile, cf []float32) string {
	switch {
	case p.Acc == tensor.Int32:
		return pathInt
	case p.Blocked:
		return pathBlocked
	case p.Acc == tensor.Float32 && a.finite && b.finite &&
		(!p.Exact32 || p.Init || a.zeroFree || !holdsNegZeroOrSNaN(cf)):
		return pathFMA
	case p.Exact32 && p.Acc == tensor.Float32:
		if p.N <= gerMaxN && (p.Init || a.zeroFree || !holdsNegZeroOrSNaN(cf)) {
			return pathGer
		}
		return pathSaxpy
	}
	return pathFused
}

// mmadFast runs the multiply-accumulate of p on the operands' decoded
// views into the accumulators cf (fp32 storage) or ci (int32, Acc Int32)
// by the path mmadChoose picks; each computes the model's bits, a NaN
// accumulator the default NaN (nan.go; gemm32 canonicalises its own).
func mmadFast(cf []float32, ci []int32, a, b *L0Tile, p MmadParams, g mmadGeom) {
	switch mmadChoose(p, a, b, cf) {
	case pathFMA:
		mmadFMA(cf, a.f, b.f, g)
	case pathInt:
		mmadInt(ci, a.i, b.i, g)
	case pathBlocked:
		mmadBlocked(p.Acc, cf, a.f, b.f, g)
	case pathGer:
		mmadGer(cf, a.f, b.f, g)
		canonAcc(cf, g)
	case pathSaxpy:
		mmadSaxpy(cf, a.f, b.f, g)
		canonAcc(cf, g)
	default:
		mmadFused(p.Acc, cf, a.f, b.f, g)
	}
}

// canonAcc makes every NaN accumulator of a gonum path the default NaN
// (nan.go), as the model's roundAcc does: gonum's multiply and add keep
// the host's NaN. Only when the call accumulated something (ku > 0): the
// model leaves the accumulators of an empty k range as they are. One pass
// over the tile against ku passes of the update.
func canonAcc(cf []float32, g mmadGeom) {
	if g.ku > 0 {
		canonNaNs(cf)
	}
}

// mmadFMA is the sequential fp32 model, one FMA per step, k ascending
// per element (mmadChoose says when that is the model's bits).
func mmadFMA(cc, a, b []float32, g mmadGeom) {
	gemm32.Float32(g.m, g.n, g.ku, a, g.lda, b, g.ldb, cc, g.n)
}

// mmadInt is the int32 accumulate (int8 products, wrap-around sums).
func mmadInt(cc, a, b []int32, g mmadGeom) {
	gemm32.Int32(g.m, g.n, g.ku, a, g.lda, b, g.ldb, cc, g.n)
}

var gonumBLAS gonum.Implementation

// mmadSaxpy is the sequential fp32 model for exact products: gonum's
// Sgemm (C += A·B, alpha = beta = 1) updates each row of C with SIMD
// saxpys over k ascending, every element RN32(c + a·b) (multiply, then
// add: the product is exact, so this is the fused step). It skips a zero
// a[i,k], which would add ±0 and change nothing because B is finite and
// the accumulator is never −0 (fp32 accumulation of exact products cannot
// underflow to −0 from +0).
//
// The loops are cache-blocked for the host: column pieces of at most 192,
// k chunks whose B slice fits 32 KiB, row pieces of 64 (small enough that
// gonum stays serial inside the core's goroutine). Every element still sees its
// k in ascending order: the k chunks are walked in order for each piece.
func mmadSaxpy(cc, a, b []float32, g mmadGeom) {
	const mb = 64
	m, n, ku := g.m, g.n, g.ku
	// Column pieces of at most 192 (three of gonum's 64-blocks with ≤ 64
	// rows: gonum stays serial), as even as the fractal allows.
	pieces := (n + 191) / 192
	nb := (n + pieces - 1) / pieces
	nb = (nb + 15) / 16 * 16
	for j0 := 0; j0 < n; j0 += nb {
		nj := min(nb, n-j0)
		kc := max(1, 8192/nj) // B slice ≤ 32 KiB
		for k0 := 0; k0 < ku; k0 += kc {
			kl := min(kc, ku-k0)
			for i0 := 0; i0 < m; i0 += mb {
				mi := min(mb, m-i0)
				gonumBLAS.Sgemm(blas.NoTrans, blas.NoTrans, mi, nj, kl, 1, a[i0*g.lda+k0:], g.lda, b[k0*g.ldb+j0:], g.ldb, 1, cc[i0*n+j0:], n)
			}
		}
	}
}

// gerMaxN is the widest accumulator tile mmadGer takes: up to there its
// rank-one updates beat mmadSaxpy's row-by-row saxpys, whose per-call
// overhead dominates on short rows (gonum's Sger runs a 4×8 register
// kernel over the whole tile).
const gerMaxN = 128

// mmadGer computes exactly what mmadSaxpy computes, as k-ordered rank-one
// updates: for each k ascending, C += A[:,k]·B[k,:] with gonum's Sger
// (alpha = 1, so its alpha·x is x). Every element is RN32(c + a·b) with the
// same product (b·a, the multiply's NaN operand order included) and the
// same addition (product + c) as the saxpy, in the same k order; the row
// pieces are only cache blocking (a piece of C stays in L1 across its k),
// and A's piece is first copied k-major so that Sger reads x contiguously.
//
// The one difference is that Sgemm skips a zero a[i,k] and Sger does not:
// adding the ±0 product leaves every accumulator unchanged except −0
// (−0 + +0 = +0) and a signalling NaN (quieted). The caller therefore uses
// mmadGer only when A holds no ±0 (L0Tile.zeroFree: nothing to skip) or
// the tile starts from +0 (Init) or holds neither −0 nor a signalling NaN
// (holdsNegZeroOrSNaN); from there the sums of exact products produce
// neither, so the skip never matters.
func mmadGer(cc, a, b []float32, g mmadGeom) {
	m, n, ku := g.m, g.n, g.ku
	mb := max(4, 16384/(4*n)/4*4) // a piece of C of at most 16 KiB
	at := getSlice[float32](&gerPool, min(mb, m)*ku)
	defer putSlice(&gerPool, at)
	for i0 := 0; i0 < m; i0 += mb {
		mi := min(mb, m-i0)
		transposeRows(at[:mi*ku], a[i0*g.lda:], g.lda, mi, ku)
		for k := range ku {
			gonumBLAS.Sger(mi, n, 1, at[k*mi:], 1, b[k*g.ldb:], 1, cc[i0*n:], n)
		}
	}
}

// transposeRows sets at[k·m + i] = a[i·lda + k] for i < m, k < ku: the
// m × ku block of a, k-major. Four rows at a time, so that both the reads
// and the writes run along memory.
func transposeRows(at, a []float32, lda, m, ku int) {
	i := 0
	for ; i+4 <= m; i += 4 {
		r0, r1 := a[i*lda:i*lda+ku], a[(i+1)*lda:(i+1)*lda+ku]
		r2, r3 := a[(i+2)*lda:(i+2)*lda+ku], a[(i+3)*lda:(i+3)*lda+ku]
		for k := range r0 {
			d := at[k*m+i : k*m+i+4]
			d[0], d[1], d[2], d[3] = r0[k], r1[k], r2[k], r3[k]
		}
	}
	for ; i < m; i++ {
		for k, v := range a[i*lda : i*lda+ku] {
			at[k*m+i] = v
		}
	}
}

// gerPool recycles mmadGer's k-major copies of A.
var gerPool sync.Pool // *[]float32

// holdsNegZeroOrSNaNGo reports whether c holds a −0 or a signalling NaN,
// one value at a time: the portable form of holdsNegZeroOrSNaN.
func holdsNegZeroOrSNaNGo(c []float32) bool {
	for _, v := range c {
		u := math.Float32bits(v)
		if u == 0x80000000 || (u&0x7FC00000 == 0x7F800000 && u&0x003FFFFF != 0) {
			return true
		}
	}
	return false
}

// mmadFused is the sequential model with one exact rounding per step
// (fmaRound; fmaRound16, its fast form, for an fp16 accumulator).
func mmadFused(acc tensor.DType, cc, a, b []float32, g mmadGeom) {
	n := g.n
	if acc == tensor.Float16 {
		mmadFused16(cc, a, b, g)
		return
	}
	for i := 0; i < g.m; i++ {
		ci := cc[i*n : (i+1)*n]
		for kk := 0; kk < g.ku; kk++ {
			x := a[i*g.lda+kk]
			for j, y := range b[kk*g.ldb : kk*g.ldb+n] {
				ci[j] = fmaRound(acc, ci[j], x, y)
			}
		}
	}
}

// mmadFused16 is mmadFused for an fp16 accumulator: fmaRound16 written
// out in the loop (the common case, an exact float64 sum, inline; the
// rest through fmaRound), four outputs at a time by AVX2 where the CPU
// has it (fused16AVX2; the report's 512³ fp16-accumulation case spent
// 46% of its samples here, one output at a time).
func mmadFused16(cc, a, b []float32, g mmadGeom) {
	n := g.n
	for i := 0; i < g.m; i++ {
		ci := cc[i*n : (i+1)*n]
		for kk := 0; kk < g.ku; kk++ {
			x := a[i*g.lda+kk]
			row := b[kk*g.ldb : kk*g.ldb+n]
			j := 0
			if useFused16AVX2 {
				for n-j >= 4 {
					if j += fused16AVX2(&ci[j], &row[j], float64(x), (n-j)&^3); n-j < 4 {
						break
					}
					fused16Go(ci[j:j+4], row[j:j+4], x) // a group with a sum fmaRound takes
					j += 4
				}
			}
			fused16Go(ci[j:], row[j:], x)
		}
	}
}

// fused16Go sets c[j] = fmaRound16(c[j], x, b[j]) for every j of c: where
// the float64 sum c[j] + x·b[j] is exact (twoSum shows it), its rounding
// rn16; elsewhere (or a NaN) fmaRound.
func fused16Go(c, b []float32, x float32) {
	b = b[:len(c)]
	x64 := float64(x)
	for j, y := range b {
		cj := float64(c[j])
		p := float64(x64 * float64(y)) // converted: the twoSum test below needs an unfused sum
		s := cj + p
		bb := s - cj
		if (cj-(s-bb))+(p-bb) != 0 { // inexact (or NaN: Inf or NaN operands)
			c[j] = fmaRound(tensor.Float16, c[j], x, y)
			continue
		}
		c[j] = float32(rn16(s))
	}
}

// blockRowGo adds one row of a block's products to the running sums:
// st[j] += x·b[j] in float64, unfused, with twoSum's error of the step
// or-ed into et[j], its sign shifted out: the bits stay zero while every
// step is exact (an error of ±0), and an Inf or NaN error sets some.
// Or-ed rather than branched on: this loop is the blocked16 model's whole
// cost (blockRowAVX2 is it four lanes at a time).
func blockRowGo(st []float64, et []uint64, b []float32, x float32) {
	st, et = st[:len(b)], et[:len(b)] // one bounds check per row
	x64 := float64(x)
	for j, y := range b {
		s0, p := st[j], float64(x64*float64(y)) // converted: unfused, for the twoSum test
		s := s0 + p
		bb := s - s0
		st[j] = s
		et[j] |= math.Float64bits((s0-(s-bb))+(p-bb)) << 1
	}
}

// blockK is the k-block width of the blocked accumulate model.
const blockK = 16

// mmadBlocked is the blocked16 model: per output, per 16-wide k block,
// acc ← RN(acc + exact block sum), one rounding.
//
// A row of C at a time, each block's sums run along the row in float64
// (B read along memory), with twoSum's error of every step or-ed into a
// word per element: where they are all zero the float64 sum is the exact
// one (in sumRound's order, so signed zeros come out the same) and one
// rounding of it is the model's value; the other elements (an inexact
// step, Inf or NaN) take sumRound.
func mmadBlocked(acc tensor.DType, cc, a, b []float32, g mmadGeom) {
	var xs [blockK + 1]float64
	scratch := make([]float64, 0, 2*blockK+2)
	n := g.n
	var sumsBuf [512]float64 // Mmad's N is a base block, at most 512 in the gemm kernel
	var errsBuf [512]uint64
	sums, errs := sumsBuf[:min(n, 512)], errsBuf[:min(n, 512)]
	if n > 512 {
		sums, errs = make([]float64, n), make([]uint64, n)
	}
	for i := 0; i < g.m; i++ {
		ci := cc[i*n : (i+1)*n]
		for k0 := 0; k0 < g.ku; k0 += blockK {
			k1 := min(k0+blockK, g.ku)
			ai := a[i*g.lda+k0 : i*g.lda+k1]
			for j, c := range ci {
				sums[j], errs[j] = float64(c), 0
			}
			for t, x := range ai {
				bt := b[(k0+t)*g.ldb : (k0+t)*g.ldb+n]
				st, et := sums[:len(bt)], errs[:len(bt)]
				j := 0
				if n4 := len(bt) &^ 3; useFused16AVX2 && n4 > 0 {
					blockRowAVX2(&st[0], &et[0], &bt[0], float64(x), n4)
					j = n4
				}
				blockRowGo(st[j:], et[j:], bt[j:], x)
			}
			for j := range ci {
				switch {
				case errs[j] != 0:
					xs[0] = float64(ci[j])
					for t, x := range ai {
						xs[t+1] = blockTerm(x, b[(k0+t)*g.ldb+j])
					}
					ci[j] = sumRound(acc, xs[:len(ai)+1], &scratch)
				case acc == tensor.Float16:
					ci[j] = float32(rn16(sums[j]))
				default:
					ci[j] = float32(sums[j])
				}
			}
		}
	}
}
