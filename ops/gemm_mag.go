package ops

import (
	"math"
	"sync"

	"github.com/x448/float16"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/gemm32"
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
// (2^32·65504² < 2^65); so the K−1 roundings of the additions are each a
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

// gemmMag32Rows is how many output rows one fp32 S block holds: a
// multiple of the micro-kernel's 6 rows, small enough that a block of
// |a| and of S stays in L2.
const gemmMag32Rows = 48

// gemmMag32 computes S in fp32 a row block at a time, against |b| packed
// once (read by every core).
type gemmMag32 struct {
	a    *tensor.Tensor
	k, n int
	pb   *gemm32.PackedFloat32
	// scratch recycles each's row buffers: ExpectBlocks calls each for
	// every block of rows on every core.
	scratch sync.Pool
}

// gemmMag32Scratch is one call of each's |a| rows and fp32 sums.
type gemmMag32Scratch struct{ a, s []float32 }

// newGEMMMag32 packs |b| [k,n] as fp32.
func newGEMMMag32(a, b *tensor.Tensor, k, n int) *gemmMag32 {
	pb := gemm32.PackFloat32Rows(k, n, func(kk int, dst []float32) { absFloat32s(b, kk*n, dst) })
	return &gemmMag32{a: a, k: k, n: n, pb: pb}
}

// each sets s[(i−lo)·n + j] = ŝ (the fp32 sum, as float64) for the rows
// i of [lo, hi), a block of gemmMag32Rows at a time, calling fn on each
// block (its rows) once its S is in s.
func (g *gemmMag32) each(lo, hi int, s []float64, fn func(lo, hi int)) {
	k, n := g.k, g.n
	// The rows of |a| are lda apart, not k: the micro-kernel reads six
	// of them at once, and at a stride of a multiple of 4 KiB (k = 1024)
	// they would all fall in the same L1 sets.
	lda := k + 16
	sc, _ := g.scratch.Get().(*gemmMag32Scratch)
	if sc == nil {
		sc = &gemmMag32Scratch{a: make([]float32, gemmMag32Rows*lda), s: make([]float32, gemmMag32Rows*n)}
	}
	defer g.scratch.Put(sc)
	abuf, sbuf := sc.a, sc.s
	for r0 := lo; r0 < hi; r0 += gemmMag32Rows {
		rows := min(gemmMag32Rows, hi-r0)
		for r := range rows {
			absFloat32s(g.a, (r0+r)*k, abuf[r*lda:r*lda+k])
		}
		sv := sbuf[:rows*n]
		clear(sv)
		g.pb.MulAdd(rows, abuf, lda, sv, n)
		for i, v := range sv {
			s[(r0-lo)*n+i] = float64(v)
		}
		fn(r0, r0+rows)
	}
}

// absFloat32s stores |t[off+i]| as fp32 into dst[i]: exact for fp16 and
// int8 values (and their Inf and NaN).
func absFloat32s(t *tensor.Tensor, off int, dst []float32) {
	if h := t.F16(); h != nil {
		tab := f16AbsTable()
		for i, v := range h[off : off+len(dst)] {
			dst[i] = tab[v.Bits()&0x7FFF]
		}
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

// f16AbsTable maps the bits of a non-negative fp16 value to the value as
// fp32, exactly (fp32 holds every fp16 value, Inf and NaN).
var f16AbsTable = sync.OnceValue(func() *[1 << 15]float32 {
	var t [1 << 15]float32
	for h := range t {
		t[h] = float16.Frombits(uint16(h)).Float32()
	}
	return &t
})
