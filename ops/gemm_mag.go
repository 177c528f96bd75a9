package ops

import (
	"math"
	"sync"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/dgemm"
	"github.com/npuverify/npuverify/internal/gemm32"
	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
)

// S in fp32. For fp16 and int8 inputs the magnitude S = Σ_k |a_k|·|b_k|
// of every output element is summed in fp32 (gemm32's kernel), where it
// costs a quarter of the float64 sum, while d = Σ a_k·b_k stays float64
// (reference.MulTensors). It is rigorous as an upper bound because every
// product of two fp16 values (|a·b| = 0 or in [2^-48, 65504²]) or two
// int8 values (integers ≤ 2^14) is exact and normal in fp32, every
// partial sum of non-negative terms is zero or at least the smallest
// product, and no sum of K ≤ GEMMMaxMACs of them nears fp32's overflow
// (2^38·65504² < 2^70); so the K−1 roundings of the additions are each a
// factor of at least 1 − 2^-24 and S ≤ ŝ·(1 + γ_{K−1}(2^-24))
// (bound.MagUpIn, as gemm_bound.go's float64 case with u = 2^-24). An
// Inf or NaN input makes ŝ Inf or NaN exactly when the float64 sum is.
//
// The price is a looser S: the rounded-up value exceeds the float64 one
// by at most γ_{K−1}(2^-24) relative, so the fp32 sum is used only for K ≤
// gemmMagFP32MaxK, where that is below 2.5·10^-4 of the bound; a longer
// K keeps the float64 sum (dgemm.MulAbs).

// gemmMagFP32MaxK is the longest K whose S is summed in fp32.
const gemmMagFP32MaxK = 4096

// gemmMagFP32 reports whether gemm's S is summed in fp32 for inputs of
// dtype in and inner dimension k.
func gemmMagFP32(in tensor.DType, k int) bool {
	return (in == tensor.Float16 || in == tensor.Int8) && k <= gemmMagFP32MaxK
}

// gemmMagUpFactor32 is gemmMagUpFactor for S summed in fp32: s·f =
// bound.MagUpIn(s, k, 2^-24) bit for bit (TestGEMMMagUpFactor).
func gemmMagUpFactor32(k int) float64 {
	if k <= 1 {
		return 1
	}
	return 1 + bound.Gamma(k-1, 0x1p-24) + 0x1p-50
}

// gemmMag32Rows is how many output rows one call of the packed kernel
// takes: a multiple of the micro-kernel's 6 rows, small enough that a
// block of |a| stays in L2.
const gemmMag32Rows = 48

// |b| is packed whole, once for every rows call, when it has at most
// gemmMag32WholeElems elements (2 MiB as fp32), and otherwise
// gemmMag32K rows at a time (1 MiB at n = 1024), again for every rows
// call. Packed whole, a 1024×4096×1024 run held 16 MiB of it while it
// judged the output (it peaked at 61-64 MB, now 49), and a 1024³ run 4
// MiB: in blocks, that run (ExpectBlocks: four rows calls) peaks 2.6 MiB
// lower (26.8–28.8 against 29.1–31.4 MiB, 2026-12-05) and takes 2-7%
// longer (min of eleven or fifteen runs, five alternations). Variables for
// the test that cuts small K into blocks.
var (
	gemmMag32WholeElems = 1 << 19
	gemmMag32K          = 256
)

// gemmMag32 computes S in fp32 for a block of rows at a time. With |b|
// whole, packed once for every core and every rows call, each group of
// rows sums its S and is handed on while it is in cache. With |b| in
// blocks of its rows, each block is packed once for every core (or, for
// fewer rows than gemmMag32Rows, each core packs strips of its own
// columns: columns), the rows of |a| add their products to the rows
// call's fp32 sums (s32), and the rows are handed on after the last
// block. Every sum takes its terms in
// ascending k, one fma32 each, on the value the previous block of k left
// (gemm32's kernel, bit for bit its Float32), so both give the same bits.
// One gemmMag32 serves one rows call at a time.
type gemmMag32 struct {
	a, b *tensor.Tensor
	k, n int
	pb   gemm32.PackedFloat32 // |b| whole, or the current block of its rows
	// whole is set once pb holds |b| whole, for every later rows call.
	whole bool
	s32   []float32 // with |b| in blocks, the fp32 sums of the rows call
}

// gemmMag32Scratches recycles the cores' |a| rows (and fp32 sums, |b|
// whole) across rows calls and across gemms: a checker judges many small
// gemms in turn (a fuzzer's, the golden set), and scratch made afresh for
// each one was fresh pages for each (page clearing was 3% of a FuzzGEMM
// worker's samples, half of it here).
var gemmMag32Scratches sync.Pool

// gemmMag32Scratch is one core's |a| rows and, with |b| whole, fp32 sums.
type gemmMag32Scratch struct{ a, s []float32 }

// newGEMMMag32 prepares S for a [m,k] and b [k,n].
func newGEMMMag32(a, b *tensor.Tensor, k, n int) *gemmMag32 {
	return &gemmMag32{a: a, b: b, k: k, n: n}
}

// rows sets s[(i−lo)·n + j] = ŝ (the fp32 sum, as float64) for the rows i
// of [lo, hi), then calls fn on the rows, a few at a time from several
// goroutines, each group once its S is in s.
func (g *gemmMag32) rows(lo, hi int, s []float64, fn func(lo, hi int)) {
	k, n, m := g.k, g.n, hi-lo
	if m <= 0 {
		return
	}
	if k*n <= gemmMag32WholeElems {
		if !g.whole {
			g.pack(&g.pb, 0, k, 0, n)
			g.whole = true
		}
		g.groups(lo, m, 0, k, func(r0, rows int, sc *gemmMag32Scratch, lda int) {
			sv := sc.s[:rows*n]
			clear(sv)
			g.pb.MulAdd(rows, sc.a, lda, sv, n)
			for i, v := range sv {
				s[r0*n+i] = float64(v)
			}
			fn(lo+r0, lo+r0+rows)
		})
		return
	}
	if cap(g.s32) < m*n {
		g.s32 = make([]float32, m*n)
	}
	s32 := g.s32[:m*n]
	clear(s32)
	if m < gemmMag32Rows {
		g.columns(lo, m, s32)
	} else {
		for pc := 0; pc < k; pc += gemmMag32K {
			kcc := min(gemmMag32K, k-pc)
			g.pack(&g.pb, pc, kcc, 0, n)
			g.groups(lo, m, pc, kcc, func(r0, rows int, sc *gemmMag32Scratch, lda int) {
				g.pb.MulAdd(rows, sc.a, lda, s32[r0*n:(r0+rows)*n], n)
			})
		}
	}
	parallel.For(m, max(1, (1<<12)/max(n, 1)), func(rlo, rhi int) {
		for i := rlo * n; i < rhi*n; i++ {
			s[i] = float64(s32[i])
		}
		fn(lo+rlo, lo+rhi)
	})
}

// gemmMagWithD lets withD take the one pass; the test that holds both
// paths to the serial evaluation turns it off.
var gemmMagWithD = true

// withD sets d to reference.MulTensorRows' d and s to rows' S for the
// rows [lo, hi), both in one pass (dgemm.MulAbsH32), and reports whether
// it did: for fp16 a and b and at least one tile's 16 columns, on a CPU
// with the pass's kernel. Where d and S each packed B of their own, the
// pass reads it where it lies: at a decoding step's 16×4096×11008 the
// two took 42 and 30 cpu-ms, the pass 47; at 1024³ BenchmarkSteps' gemm
// expect went from 75.6–77.6 to 67.8–70.2 cpu-ms (the lowest six of
// twelve, six alternated runs of the two test binaries, 2026-12-07).
func (g *gemmMag32) withD(lo, hi int, d, s []float64) bool {
	ah, bh := g.a.F16(), g.b.F16()
	if !gemmMagWithD || ah == nil || bh == nil || g.n < 16 {
		return false
	}
	return dgemm.MulAbsH32(hi-lo, g.k, g.n, ah[lo*g.k:hi*g.k], bh, d, s)
}

// pack packs rows [pc, pc+kcc) of |b|'s columns [j0, j0+cols) into pb:
// fp16 values a panel's piece at a time, sign cleared and widened in place
// where the CPU has F16C (absF16Panel), anything else through PackRows's
// rows.
func (g *gemmMag32) pack(pb *gemm32.PackedFloat32, pc, kcc, j0, cols int) {
	n := g.n
	if h := g.b.F16(); h != nil && magUseF16C {
		const w = gemm32.PanelWidth
		pb.PackPanels(kcc, cols, func(kk0, rows, c0, cc int, dst []float32) {
			src := h[(pc+kk0)*n+j0+c0:]
			if cc == w {
				absF16Panel(dst[:rows*w], src[:(rows-1)*n+w], rows, n)
				return
			}
			for r := range rows {
				absF16s(dst[r*w:r*w+cc], src[r*n:r*n+cc])
			}
		})
		return
	}
	pb.PackRows(kcc, cols, func(kk int, dst []float32) { absFloat32s(g.b, (pc+kk)*n+j0, dst) })
}

// gemmMag32Strip is how many columns of |b| columns packs at a time: a
// K-block of gemmMag32K rows of them is 512 KiB of fp32, a quarter of the
// L2 of the machine it was measured on. On BenchmarkGEMMMag32's decoding
// shape, strips of 64 columns took 20% less time than the row path, of
// 256 30%, of 512 and 1024 45% (each strip's calls cost less than its
// values beyond a few hundred columns).
const gemmMag32Strip = 512

// columns sums the fp32 S of the m rows from lo (fewer than
// gemmMag32Rows) into s32 for a |b| packed in blocks, the cores taking
// strips of gemmMag32Strip columns: each packs its strip of a K-block into
// memory of its own, which stays in its caches while every row passes
// over it. The row path packs each K-block of |b| across all columns for
// every core to read (11 MiB at n = 11008), and with a decoding step's
// few rows each packed value is read only a few times, so that block went
// out to memory and came back (BenchmarkGEMMMag32 at 16×4096×11008:
// −50%). Every element of s32 takes its K-blocks in order, each through
// MulAdd on the same packed values, so the bits are the row path's
// (TestGEMMExpectMatchesSerial, TestGEMMExpectBlocksMatchesExpect).
func (g *gemmMag32) columns(lo, m int, s32 []float32) {
	k, n := g.k, g.n
	strips := (n + gemmMag32Strip - 1) / gemmMag32Strip
	parallel.For(strips, 1, func(slo, shi int) {
		pb := gemm32.PackedFloat32{Serial: true}
		lda := absRowStride(min(gemmMag32K, k))
		a := make([]float32, m*lda)
		for pc := 0; pc < k; pc += gemmMag32K {
			kcc := min(gemmMag32K, k-pc)
			for r := range m {
				absFloat32s(g.a, (lo+r)*k+pc, a[r*lda:r*lda+kcc])
			}
			for st := slo; st < shi; st++ {
				j0 := st * gemmMag32Strip
				cols := min(gemmMag32Strip, n-j0)
				g.pack(&pb, pc, kcc, j0, cols)
				pb.MulAdd(m, a, lda, s32[j0:], n)
			}
		}
	})
}

// groups calls fn on the rows [lo, lo+m) of |a|, columns [pc, pc+kcc),
// gemmMag32Rows rows at a time: fn gets the group's first row (from lo),
// its length, and the rows of |a| in sc.a, lda apart. The cores take
// equal shares of six-row tiles (the kernel's).
func (g *gemmMag32) groups(lo, m, pc, kcc int, fn func(r0, rows int, sc *gemmMag32Scratch, lda int)) {
	lda := absRowStride(kcc)
	parallel.For((m+5)/6, 1, func(tlo, thi int) {
		sc, _ := gemmMag32Scratches.Get().(*gemmMag32Scratch)
		if sc == nil {
			sc = &gemmMag32Scratch{}
		}
		defer gemmMag32Scratches.Put(sc)
		if cap(sc.a) < gemmMag32Rows*lda {
			sc.a = make([]float32, gemmMag32Rows*lda)
		}
		if g.whole && cap(sc.s) < gemmMag32Rows*g.n {
			sc.s = make([]float32, gemmMag32Rows*g.n)
		}
		end := min(thi*6, m)
		for r0 := tlo * 6; r0 < end; r0 += gemmMag32Rows {
			rows := min(gemmMag32Rows, end-r0)
			for r := range rows {
				absFloat32s(g.a, (lo+r0+r)*g.k+pc, sc.a[r*lda:r*lda+kcc])
			}
			fn(r0, rows, sc, lda)
		}
	})
}

// absRowStride is the stride of the rows of |a| that hold kcc values
// each, a little more than kcc: the micro-kernel reads six of them at
// once, and at a stride of a multiple of 4 KiB they would all fall in the
// same L1 sets.
func absRowStride(kcc int) int { return kcc + 16 }

// absFloat32s stores |t[off+i]| as fp32 into dst[i]: exact for fp16 and
// int8 values (and their Inf and NaN).
func absFloat32s(t *tensor.Tensor, off int, dst []float32) {
	if h := t.F16(); h != nil {
		absF16s(dst, h[off:off+len(dst)])
		return
	}
	if q := t.I8(); q != nil {
		for i, v := range q[off : off+len(dst)] {
			dst[i] = float32(math.Abs(float64(v)))
		}
		return
	}
	var buf [1024]float64
	for i := 0; i < len(dst); i += len(buf) {
		v := buf[:min(len(buf), len(dst)-i)]
		t.Float64sFrom(off+i, v)
		for j, x := range v {
			dst[i+j] = float32(math.Abs(x))
		}
	}
}

// absF16sGo is absF16s through tensor.F16ToF32s (the project's one exact
// fp16 → fp32 widening) with each sign then cleared: the portable form,
// and absF16s's last few values. Clearing the fp32 sign gives what
// widening the sign-cleared fp16 gives, NaNs included.
func absF16sGo(dst []float32, src []float16.Float16) {
	dst = dst[:len(src)]
	tensor.F16ToF32s(dst, src)
	for i, v := range dst {
		dst[i] = math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
	}
}
