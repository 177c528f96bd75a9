package npu

import (
	"fmt"
	"math"
	"sync"

	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"
)

// Cube-side primitives: 2-D DMA between GM and L1/UB, L1 → L0A/L0B loads,
// the cube's matrix multiply-accumulate (Mmad) into L0C, the L0C → UB move
// (fixpipe) and the vector-side GEMM epilogue steps (dequantisation,
// scaling, the beta·C addition).
//
// Data flow of a matrix multiply, as in Ascend C's Matmul:
//
//	GM --LoadL1--> L1 --LoadL0--> L0A / L0B --Mmad--> L0C --FixpipeToUB--> UB --DataCopy2DOut--> GM
//
// The bytes really move through the buffers (capacity and alignment are
// those of Alloc); alongside, the cube keeps a decoded view of its operands
// (GMMatrix, decoded once per launch on the host; L1Tile; L0Tile, a view
// into its L1 tile) so that Mmad does arithmetic on float32 or int32
// values without decoding an element twice. Mmad's arithmetic is exactly
// the accumulate model given in MmadParams (see ops/gemm.go for the
// contract it implements).
//
// Costs:
//   - DataCopy2DIn/Out: one DMA transfer (latency + GM bytes / share),
//     like DataCopyIn/Out, whatever the number of rows.
//   - LoadL0: ceil(bytes / L0LoadBytesPerCycle) cycles (MTE1), compute stage.
//   - Mmad: one cycle per fractal step (16×16×16 for fp16/bf16, 16×32×16
//     for int8 on ascend910b; fp32 inputs take two cycles per fp16-sized
//     step), counted in CubeCycles; CubeMACs counts M·K·N of the padded
//     operands, CubeUsefulMACs the caller's unpadded extents.
//   - FixpipeToUB: ceil(bytes / FixpipeBytesPerCycle) cycles, compute stage.
//   - Epilogue steps: like vector instructions over their fp32 bytes.

// L0LoadBytesPerCycle is the L1 → L0A/L0B bandwidth of the model.
const L0LoadBytesPerCycle = 256

// FixpipeBytesPerCycle is the L0C → UB bandwidth of the model.
const FixpipeBytesPerCycle = 128

// DataCopy2DIn copies the [rows × cols] block at (row0, col0) of the
// row-major GM matrix src (ld elements per row) into dst (UB or L1) as a
// dense row-major [dstRows × dstLd] tile, zero-filling the padding columns
// cols..dstLd−1 and rows rows..dstRows−1. One DMA transfer; only
// rows·cols elements count as GM bytes.
func (c *Core) DataCopy2DIn(dst *Buffer, src *tensor.Tensor, ld, row0, col0, rows, cols, dstLd, dstRows int) error {
	const op = "DataCopy2DIn"
	if dst == nil || (dst.space != UB && dst.space != L1) {
		return fmt.Errorf("%s: dst must be a UB or L1 buffer", op)
	}
	gm, size, err := c.checkGM(op, "src", src, 0, 0)
	if err != nil {
		return err
	}
	if err := check2D(op, len(gm)/size, ld, row0, col0, rows, cols, dstLd, dstRows); err != nil {
		return err
	}
	if err := c.checkBuf(op+": dst", dst, dst.space, dstLd*dstRows*size); err != nil {
		return err
	}
	rowBytes, dstRow := cols*size, dstLd*size
	for r := 0; r < dstRows; r++ {
		d := dst.data[r*dstRow : (r+1)*dstRow]
		if r < rows {
			s := ((row0+r)*ld + col0) * size
			copy(d, gm[s:s+rowBytes])
			clear(d[rowBytes:])
		} else {
			clear(d)
		}
	}
	c.chargeDMA(true, rows*cols*size)
	return nil
}

// DataCopy2DOut copies the [rows × cols] block of the dense row-major UB
// tile src (srcLd elements per row) to (row0, col0) of the GM matrix dst
// (ld elements per row). One DMA transfer of rows·cols elements.
func (c *Core) DataCopy2DOut(dst *tensor.Tensor, ld, row0, col0, rows, cols int, src *Buffer, srcLd int) error {
	const op = "DataCopy2DOut"
	gm, size, err := c.checkGM(op, "dst", dst, 0, 0)
	if err != nil {
		return err
	}
	if err := check2D(op, len(gm)/size, ld, row0, col0, rows, cols, srcLd, rows); err != nil {
		return err
	}
	if err := c.checkBuf(op+": src", src, UB, srcLd*rows*size); err != nil {
		return err
	}
	for r := 0; r < rows; r++ {
		d := ((row0+r)*ld + col0) * size
		copy(gm[d:d+cols*size], src.data[r*srcLd*size:])
	}
	c.chargeDMA(false, rows*cols*size)
	return nil
}

func check2D(op string, gmLen, ld, row0, col0, rows, cols, localLd, localRows int) error {
	switch {
	case ld < 0 || row0 < 0 || col0 < 0 || rows < 0 || cols < 0:
		return fmt.Errorf("%s: negative extent (ld %d, origin (%d,%d), %d×%d)", op, ld, row0, col0, rows, cols)
	case cols > 0 && col0+cols > ld:
		return fmt.Errorf("%s: columns [%d, %d) exceed the row length %d", op, col0, col0+cols, ld)
	case rows > 0 && cols > 0 && (row0+rows-1)*ld+col0+cols > gmLen:
		return fmt.Errorf("%s: rows [%d, %d) exceed the %d-element GM tensor", op, row0, row0+rows, gmLen)
	case cols > localLd || rows > localRows:
		return fmt.Errorf("%s: %d×%d block does not fit the %d×%d local tile", op, rows, cols, localRows, localLd)
	}
	return nil
}

// CubeFractal returns the profile's cube fractal for input dtype in: the
// int8 fractal for int8, the fp16 one otherwise (fp32 runs on it at half
// rate).
func (p Profile) CubeFractal(in tensor.DType) Fractal {
	if in == tensor.Int8 {
		return p.CubeInt8
	}
	return p.CubeFP16
}

// GMMatrix is a row-major matrix in GM together with the cube's decoded
// view of its values (float32, or int32 for int8), made once on the host
// before a launch so that the cores never decode the same element twice.
// It also records the facts kernels use to pick an exact fast path.
type GMMatrix struct {
	T          *tensor.Tensor
	Rows, Cols int
	f          []float32
	i          []int32
	// MaxAbs and MinNonZero are the largest and the smallest non-zero
	// magnitude of the finite values (MinNonZero is +Inf if there is none;
	// both NaN for fp16, where they are not computed); NonFinite reports an
	// Inf or NaN.
	MaxAbs, MinNonZero float64
	NonFinite          bool
	// zeroFree reports that the decoded float view holds no ±0, so that
	// the cube's zero-skipping paths never skip (see mmadGer).
	zeroFree bool
}

// NewGMMatrix decodes a 2-D fp16, bf16, fp32 or int8 tensor.
func NewGMMatrix(t *tensor.Tensor) (*GMMatrix, error) {
	if t == nil || len(t.Shape) != 2 {
		return nil, fmt.Errorf("NewGMMatrix: want a 2-D tensor, got %v", t)
	}
	g := &GMMatrix{T: t, Rows: t.Shape[0], Cols: t.Shape[1], MinNonZero: math.Inf(1)}
	n := t.Len()
	switch t.DType {
	case tensor.Int8:
		g.i = getSlice[int32](&i32Pool, n)
		for k, v := range t.I8() {
			g.i[k] = int32(v)
			if a := math.Abs(float64(v)); a > 0 {
				g.MaxAbs, g.MinNonZero = max(g.MaxAbs, a), min(g.MinNonZero, a)
			}
		}
		return g, nil
	case tensor.Float16:
		g.f = getSlice[float32](&f32Pool, n)
		// Every finite fp16 product is exact in fp32; only Inf/NaN matter.
		var zero bool
		g.NonFinite, zero = decodeF16(g.f, t.F16())
		g.zeroFree = !zero
		g.MaxAbs, g.MinNonZero = math.NaN(), math.NaN()
		return g, nil
	case tensor.BFloat16:
		g.f = getSlice[float32](&f32Pool, n)
		for k, v := range t.BF16s() {
			g.f[k] = v.Float32()
		}
	case tensor.Float32:
		g.f = getSlice[float32](&f32Pool, n)
		copy(g.f, t.F32())
	default:
		return nil, fmt.Errorf("NewGMMatrix: dtype %s not supported by the cube", t.DType)
	}
	var hi, lo float32 = 0, float32(math.Inf(1))
	g.zeroFree = true
	for _, v := range g.f {
		a := float32(math.Abs(float64(v)))
		switch {
		case a != a || a > math.MaxFloat32:
			g.NonFinite = true
		case a > 0:
			hi, lo = max(hi, a), min(lo, a)
		default:
			g.zeroFree = false
		}
	}
	g.MaxAbs, g.MinNonZero = float64(hi), float64(lo)
	return g, nil
}

// L1Tile is a dense row-major [Rows × Cols] tile in L1 (its buffer holds
// the dtype's bytes) with the decoded view the cube reads: row r of the
// tile starts at view element r·ld. An unpadded block's view is the
// GMMatrix's own decoded values (no copy); a padded one is copied into the
// tile's storage.
type L1Tile struct {
	Buf        *Buffer
	DType      tensor.DType
	Rows, Cols int
	f, fOwn    []float32
	i, iOwn    []int32
	ld         int
	zeroFree   bool // the float view holds no ±0 (GMMatrix.zeroFree)
}

// LoadL1 DMAs the [rows × cols] block at (row0, col0) of src into t as a
// [tileRows × tileCols] tile, zero-padded (DataCopy2DIn: one transfer of
// rows·cols elements), and fills the tile's decoded view.
func (c *Core) LoadL1(t *L1Tile, src *GMMatrix, row0, col0, rows, cols, tileRows, tileCols int) error {
	if t == nil || t.Buf == nil || t.Buf.space != L1 {
		return fmt.Errorf("LoadL1: tile buffer must be in L1")
	}
	if src == nil {
		return fmt.Errorf("LoadL1: nil source")
	}
	if err := c.DataCopy2DIn(t.Buf, src.T, src.Cols, row0, col0, rows, cols, tileCols, tileRows); err != nil {
		return err
	}
	t.DType, t.Rows, t.Cols = src.T.DType, tileRows, tileCols
	n := tileRows * tileCols
	if rows == tileRows && cols == tileCols && rows > 0 && cols > 0 {
		// No padding: view the decoded GM values in place.
		t.ld, t.zeroFree = src.Cols, src.zeroFree
		if src.i != nil {
			t.i, t.f = src.i[row0*src.Cols+col0:], nil
		} else {
			t.f, t.i = src.f[row0*src.Cols+col0:], nil
		}
		return nil
	}
	t.ld, t.zeroFree = tileCols, false // the padding is zeros
	if src.i != nil {
		if cap(t.iOwn) < n {
			putSlice(&i32Pool, t.iOwn)
			t.iOwn = getSlice[int32](&i32Pool, n)
		}
		t.i, t.f = t.iOwn[:n], nil
		copyBlock(t.i, tileCols, src.i, src.Cols, row0, col0, rows, cols, tileRows)
	} else {
		if cap(t.fOwn) < n {
			putSlice(&f32Pool, t.fOwn)
			t.fOwn = getSlice[float32](&f32Pool, n)
		}
		t.f, t.i = t.fOwn[:n], nil
		copyBlock(t.f, tileCols, src.f, src.Cols, row0, col0, rows, cols, tileRows)
	}
	return nil
}

// copyBlock copies the [rows × cols] block at (row0, col0) of src (ld per
// row) into dst (dstLd per row, dstRows rows), zero-filling the rest.
func copyBlock[T any](dst []T, dstLd int, src []T, ld, row0, col0, rows, cols, dstRows int) {
	for r := 0; r < dstRows; r++ {
		d := dst[r*dstLd : (r+1)*dstLd]
		if r < rows {
			s := (row0+r)*ld + col0
			copy(d, src[s:s+cols])
			clear(d[cols:])
		} else {
			clear(d)
		}
	}
}

// L0Tile is a cube operand in L0A (left, [Rows × Cols] = [M × K]) or L0B
// (right, [K × N]): its buffer holds the dtype's bytes, row-major, and the
// cube reads the decoded view, which LoadL0 sets to the loaded block of
// the source L1 tile's decoded values (row stride ld; no copy), so the L1
// tile must not be reloaded before the Mmad that uses this one.
type L0Tile struct {
	Buf        *Buffer
	DType      tensor.DType
	Rows, Cols int
	f          []float32
	i          []int32
	ld         int
	zeroFree   bool // the float view holds no ±0 (from the L1 tile)
}

// LoadL0 copies the [rows × cols] block at (row0, col0) of the L1 tile src
// into t.Buf (L0A or L0B), densely. rows and cols must be multiples of the
// cube fractal's sides for that operand (L0A: M and K; L0B: K and N); the
// buffer's capacity and 512-byte alignment are enforced by Alloc.
func (c *Core) LoadL0(t *L0Tile, src *L1Tile, row0, col0, rows, cols int) error {
	const op = "LoadL0"
	if t == nil || t.Buf == nil || src == nil {
		return fmt.Errorf("%s: nil tile", op)
	}
	space := t.Buf.space
	if space != L0A && space != L0B {
		return fmt.Errorf("%s: tile buffer is in %s, want L0A or L0B", op, space)
	}
	dtype := src.DType
	fr := c.prof.CubeFractal(dtype)
	fr0, fr1 := fr.M, fr.K
	if space == L0B {
		fr0, fr1 = fr.K, fr.N
	}
	if rows%fr0 != 0 || cols%fr1 != 0 {
		return fmt.Errorf("%s: %s block %d×%d is not a multiple of the %d×%d fractal", op, space, rows, cols, fr0, fr1)
	}
	size := dtype.Size()
	if err := c.checkBuf(op+": src", src.Buf, L1, src.Rows*src.Cols*size); err != nil {
		return err
	}
	if row0 < 0 || col0 < 0 || col0+cols > src.Cols || row0+rows > src.Rows {
		return fmt.Errorf("%s: block (%d,%d)+%d×%d outside the %d×%d L1 tile", op, row0, col0, rows, cols, src.Rows, src.Cols)
	}
	if err := c.checkBuf(op+": dst", t.Buf, space, rows*cols*size); err != nil {
		return err
	}
	for r := 0; r < rows; r++ {
		s := ((row0+r)*src.Cols + col0) * size
		copy(t.Buf.data[r*cols*size:(r+1)*cols*size], src.Buf.data[s:s+cols*size])
	}
	t.DType, t.Rows, t.Cols, t.ld, t.zeroFree = dtype, rows, cols, src.ld, src.zeroFree
	n := rows * cols
	t.f, t.i = nil, nil
	if src.i != nil {
		t.i = src.i[row0*src.ld+col0:]
	} else {
		t.f = src.f[row0*src.ld+col0:]
	}
	c.charge(StageCompute, int64((n*size+L0LoadBytesPerCycle-1)/L0LoadBytesPerCycle))
	return nil
}

// Decoded views are large and made per launch; recycle them.
var (
	f32Pool sync.Pool // *[]float32
	i32Pool sync.Pool // *[]int32
)

func getSlice[T any](p *sync.Pool, n int) []T {
	if v, ok := p.Get().(*[]T); ok && cap(*v) >= n {
		return (*v)[:n]
	}
	return make([]T, n)
}

func putSlice[T any](p *sync.Pool, s []T) {
	if cap(s) > 0 {
		p.Put(&s)
	}
}

// Release returns the decoded view to a pool; g must not be used after.
func (g *GMMatrix) Release() {
	putSlice(&f32Pool, g.f)
	putSlice(&i32Pool, g.i)
	g.f, g.i = nil, nil
}

// Release returns the tile's decoded view to a pool; the tile (and L0
// tiles loaded from it) must not be used after.
func (t *L1Tile) Release() {
	putSlice(&f32Pool, t.fOwn)
	putSlice(&i32Pool, t.iOwn)
	t.f, t.i, t.fOwn, t.iOwn = nil, nil, nil, nil
}

// decodeF16 decodes src into dst and reports whether it held Inf or NaN,
// and whether it held ±0.
func decodeF16(dst []float32, src []float16.Float16) (nonFinite, zero bool) {
	t := f16Table() // vector.go: every fp16 bit pattern decoded
	dst = dst[:len(src)]
	// The least and the greatest magnitude bits (branch-free min/max):
	// Inf and NaN have an exponent of all ones (from 0x7C00), ±0 is 0.
	lo, hi := uint16(0x7FFF), uint16(0)
	for k, v := range src {
		dst[k] = t[v]
		a := uint16(v) & 0x7FFF
		lo, hi = min(lo, a), max(hi, a)
	}
	return hi >= 0x7C00, len(src) > 0 && lo == 0
}

// MmadParams describes one cube matrix multiply-accumulate
// C[M×N] (+)= A[M×K]·B[K×N].
type MmadParams struct {
	M, K, N int // operand extents, multiples of the fractal
	// UsefulM, UsefulK, UsefulN are the unpadded extents, counted in
	// CubeUsefulMACs. The padded k ≥ UsefulK hold zeros and are not
	// accumulated: their 0·0 products would turn a −0 accumulator (an
	// fp16 accumulator can underflow to −0) into +0, so the padding would
	// leak into the result.
	UsefulM, UsefulK, UsefulN int
	// Acc is the accumulator format: Float32, Float16 (values held in the
	// fp32 L0C storage) or Int32 (exact; int8 inputs).
	Acc tensor.DType
	// Blocked selects the blocked16 model: per 16-wide k block (from k = 0
	// of this call, which callers keep aligned to 16 globally), acc ←
	// RN(acc + Σ_block a·b) with one rounding of the exact value.
	// Otherwise sequential: acc ← RN(acc + a_k·b_k), k ascending, one
	// rounding of the exact value per step.
	Blocked bool
	// Init starts from +0 instead of accumulating onto L0C.
	Init bool
	// Exact32 asserts that every product is exact in fp32 and that B holds
	// no Inf or NaN (the caller checked the inputs), so the sequential fp32
	// model can use a multiply-then-add (SIMD) loop: with exact products it
	// rounds exactly as the fused step.
	Exact32 bool
}

// Mmad runs one cube matrix multiply-accumulate from two L0 tiles into the
// dense [M × N] accumulator tile at the start of dst (L0C; fp32 storage, or
// int32 for Acc Int32). An M, K or N of zero with Init clears the tile.
func (c *Core) Mmad(dst *Buffer, a, b *L0Tile, p MmadParams) error {
	const op = "Mmad"
	if a == nil || b == nil || a.Buf == nil || b.Buf == nil {
		return fmt.Errorf("%s: nil operand", op)
	}
	if a.Buf.space != L0A || b.Buf.space != L0B {
		return fmt.Errorf("%s: operands in %s and %s, want L0A and L0B", op, a.Buf.space, b.Buf.space)
	}
	if a.DType != b.DType {
		return fmt.Errorf("%s: operand dtypes %s and %s differ", op, a.DType, b.DType)
	}
	if a.Rows != p.M || a.Cols != p.K || b.Rows != p.K || b.Cols != p.N {
		return fmt.Errorf("%s: operands %d×%d and %d×%d do not match M=%d K=%d N=%d", op, a.Rows, a.Cols, b.Rows, b.Cols, p.M, p.K, p.N)
	}
	fr := c.prof.CubeFractal(a.DType)
	if p.M%fr.M != 0 || p.K%fr.K != 0 || p.N%fr.N != 0 {
		return fmt.Errorf("%s: M=%d K=%d N=%d not multiples of the %d×%d×%d fractal", op, p.M, p.K, p.N, fr.M, fr.K, fr.N)
	}
	if (a.DType == tensor.Int8) != (p.Acc == tensor.Int32) {
		return fmt.Errorf("%s: accumulator %s does not fit %s inputs", op, p.Acc, a.DType)
	}
	if p.Acc != tensor.Int32 && p.Acc != tensor.Float32 && p.Acc != tensor.Float16 {
		return fmt.Errorf("%s: accumulator %s not supported", op, p.Acc)
	}
	if err := c.checkBuf(op+": dst", dst, L0C, p.M*p.N*4); err != nil {
		return err
	}
	if p.Init {
		clear(dst.data[:p.M*p.N*4])
	}
	if p.UsefulK < 0 || p.UsefulK > p.K {
		return fmt.Errorf("%s: UsefulK %d outside [0, K=%d]", op, p.UsefulK, p.K)
	}
	if p.M == 0 || p.N == 0 || p.K == 0 {
		return nil
	}
	g := mmadGeom{m: p.M, n: p.N, ku: p.UsefulK, lda: a.ld, ldb: b.ld}
	switch {
	case p.Acc == tensor.Int32:
		mmadInt(dst.I32()[:p.M*p.N], a.i, b.i, g)
	case p.Blocked:
		mmadBlocked(p.Acc, dst.F32()[:p.M*p.N], a.f, b.f, g)
	case p.Exact32 && p.Acc == tensor.Float32:
		cc := dst.F32()[:p.M*p.N]
		if g.n <= gerMaxN && (p.Init || a.zeroFree || !holdsNegZeroOrSNaN(cc)) {
			mmadGer(cc, a.f, b.f, g)
		} else {
			mmadSaxpy(cc, a.f, b.f, g)
		}
	default:
		mmadFused(p.Acc, dst.F32()[:p.M*p.N], a.f, b.f, g)
	}
	steps := int64(p.M/fr.M) * int64(p.K/fr.K) * int64(p.N/fr.N)
	if a.DType == tensor.Float32 {
		steps *= 2
	}
	c.chargeCube(steps, int64(p.M)*int64(p.K)*int64(p.N), int64(p.UsefulM)*int64(p.UsefulK)*int64(p.UsefulN))
	return nil
}

// mmadGeom is the geometry of one Mmad: C is [m × n] dense, A rows have
// stride lda, B rows stride ldb, and ku is the number of real k to
// accumulate.
type mmadGeom struct{ m, n, ku, lda, ldb int }

func mmadInt(cc, a, b []int32, g mmadGeom) {
	n := g.n
	for i := 0; i < g.m; i++ {
		ci := cc[i*n : (i+1)*n]
		for kk := 0; kk < g.ku; kk++ {
			x := a[i*g.lda+kk]
			if x == 0 {
				continue
			}
			for j, y := range b[kk*g.ldb : kk*g.ldb+n] {
				ci[j] += x * y
			}
		}
	}
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

// holdsNegZeroOrSNaN reports whether c holds a −0 or a signalling NaN.
func holdsNegZeroOrSNaN(c []float32) bool {
	for _, v := range c {
		u := math.Float32bits(v)
		if u == 0x80000000 || (u&0x7FC00000 == 0x7F800000 && u&0x003FFFFF != 0) {
			return true
		}
	}
	return false
}

// mmadFused is the sequential model with one exact rounding per step.
func mmadFused(acc tensor.DType, cc, a, b []float32, g mmadGeom) {
	n := g.n
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

// blockK is the k-block width of the blocked accumulate model.
const blockK = 16

// mmadBlocked is the blocked16 model: per output, per 16-wide k block,
// acc ← RN(acc + exact block sum), one rounding.
func mmadBlocked(acc tensor.DType, cc, a, b []float32, g mmadGeom) {
	var xs [blockK + 1]float64
	scratch := make([]float64, 0, 2*blockK+2)
	n := g.n
	for i := 0; i < g.m; i++ {
		for k0 := 0; k0 < g.ku; k0 += blockK {
			k1 := min(k0+blockK, g.ku)
			ai := a[i*g.lda+k0 : i*g.lda+k1]
			for j := 0; j < n; j++ {
				xs[0] = float64(cc[i*n+j])
				for t, x := range ai {
					xs[t+1] = float64(x) * float64(b[(k0+t)*g.ldb+j])
				}
				cc[i*n+j] = sumRound(acc, xs[:len(ai)+1], &scratch)
			}
		}
	}
}

// FixpipeToUB moves the first n accumulator elements (4 bytes each, fp32
// or int32) of src (L0C) to dst (UB), unchanged.
func (c *Core) FixpipeToUB(dst, src *Buffer, srcOff, n int) error {
	const op = "FixpipeToUB"
	if err := c.checkBuf(op+": src", src, L0C, (srcOff+n)*4); err != nil {
		return err
	}
	if err := c.checkBuf(op+": dst", dst, UB, n*4); err != nil {
		return err
	}
	if srcOff < 0 || n < 0 {
		return fmt.Errorf("%s: negative offset or count", op)
	}
	copy(dst.data[:n*4], src.data[srcOff*4:(srcOff+n)*4])
	c.charge(StageCompute, int64((n*4+FixpipeBytesPerCycle-1)/FixpipeBytesPerCycle))
	return nil
}

// DequantI32 converts the [rows × cols] int32 accumulators of src (UB,
// dense, cols per row) to fp32 in dst (UB, may alias src) and dequantises
// them: v ← RN32(RN32(sa·sb)·RN32(acc)). Row i uses sa[saOff+i] (sa[0]
// when saBcst) and column j uses sb[j] (sb[0] when sbBcst); sa and sb are
// fp32 UB buffers. IEEE arithmetic (the profile's numerics apply at the
// store).
func (c *Core) DequantI32(dst, src, sa, sb *Buffer, rows, cols, saOff int, saBcst, sbBcst bool) error {
	const op = "DequantI32"
	n := rows * cols
	saN, sbN := saOff+rows, cols
	if saBcst {
		saN = 1
	}
	if sbBcst {
		sbN = 1
	}
	if rows < 0 || cols < 0 || saOff < 0 {
		return fmt.Errorf("%s: negative extent", op)
	}
	for _, b := range []struct {
		name string
		buf  *Buffer
		n    int
	}{{"dst", dst, n}, {"src", src, n}, {"scale_a", sa, saN}, {"scale_b", sb, sbN}} {
		if err := c.checkBuf(op+": "+b.name, b.buf, UB, b.n*4); err != nil {
			return err
		}
	}
	out, in, fa, fb := dst.F32()[:n], src.I32()[:n], sa.F32(), sb.F32()
	for i := 0; i < rows; i++ {
		si := fa[0]
		if !saBcst {
			si = fa[saOff+i]
		}
		for j := 0; j < cols; j++ {
			sj := fb[0]
			if !sbBcst {
				sj = fb[j]
			}
			s := float32(float64(si) * float64(sj)) // exact product, one rounding
			v := float32(in[i*cols+j])              // RN32 of the integer
			out[i*cols+j] = float32(float64(s) * float64(v))
		}
	}
	c.chargeVector(2 * n * 4)
	return nil
}

// roundTo returns RN_E(x) for a value x that is the exact result of one
// operation on E-values computed in float64 (exact for products, or a
// correctly rounded sum whose second rounding is innocuous).
func roundTo(e tensor.DType, x float64) float32 {
	if e == tensor.Float16 {
		return float32(fp16Format.RoundNearestEven(x))
	}
	return float32(x)
}

// ScaleRound sets dst[i] = RN_E(RN_E(s)·src[i]) for the first n fp32-stored
// values of UB buffers (E = Float32, or Float16 for values held in fp32).
func (c *Core) ScaleRound(e tensor.DType, dst, src *Buffer, s float64, n int) error {
	const op = "ScaleRound"
	if err := c.checkBuf(op+": dst", dst, UB, n*4); err != nil {
		return err
	}
	if err := c.checkBuf(op+": src", src, UB, n*4); err != nil {
		return err
	}
	sh := float64(roundTo(e, s))
	out, in := dst.F32()[:n], src.F32()[:n]
	for i, v := range in {
		out[i] = roundTo(e, sh*float64(v))
	}
	c.chargeVector(n * 4)
	return nil
}

// AddScaledRound sets dst[i] = RN_E(src[i] + RN_E(RN_E(beta)·x[i])) for
// the first n values: src and dst fp32-stored E values in UB, x a UB buffer
// of dtype xd (fp32, fp16 or bf16).
func (c *Core) AddScaledRound(e tensor.DType, dst, src, x *Buffer, xd tensor.DType, beta float64, n int) error {
	const op = "AddScaledRound"
	if err := c.checkBuf(op+": dst", dst, UB, n*4); err != nil {
		return err
	}
	if err := c.checkBuf(op+": src", src, UB, n*4); err != nil {
		return err
	}
	if err := c.checkBuf(op+": x", x, UB, n*xd.Size()); err != nil {
		return err
	}
	var get func(i int) float64
	switch xd {
	case tensor.Float32:
		f := x.F32()
		get = func(i int) float64 { return float64(f[i]) }
	case tensor.Float16:
		f, t := x.F16(), f16Table()
		get = func(i int) float64 { return float64(t[f[i]]) }
	case tensor.BFloat16:
		f := x.BF16()
		get = func(i int) float64 { return f[i].Float64() }
	default:
		return fmt.Errorf("%s: dtype %s not supported", op, xd)
	}
	bh := float64(roundTo(e, beta))
	out, in := dst.F32()[:n], src.F32()[:n]
	for i, v := range in {
		t := float64(roundTo(e, bh*get(i))) // exact product, one rounding
		// The float64 sum of two E values is exact for fp16 and correctly
		// rounded for fp32, where rounding it again to fp32 is innocuous.
		out[i] = roundTo(e, float64(v)+t)
	}
	c.chargeVector(2 * n * 4)
	return nil
}

// CastF32 rounds the first n fp32 values of src (UB) to dtype to (fp16,
// bf16 or fp32) into dst (UB) under the profile's numerics: one rounding
// to nearest even, then saturate/flush. It is Cast(to, Float32, ...) with
// the package's branch-light fp16 rounding, for the GEMM store.
func (c *Core) CastF32(to tensor.DType, dst, src *Buffer, n int) error {
	const op = "CastF32"
	if n < 0 {
		return fmt.Errorf("%s: negative count %d", op, n)
	}
	if err := c.checkBuf(op+": dst", dst, UB, n*to.Size()); err != nil {
		return err
	}
	if err := c.checkBuf(op+": src", src, UB, n*4); err != nil {
		return err
	}
	if to.Size() != 4 && dst == src {
		return fmt.Errorf("%s: in-place cast to %s", op, to)
	}
	in, num := src.F32()[:n], c.prof.Numerics
	switch to {
	case tensor.Float16:
		z := dst.F16()[:n]
		f32sToF16(z, in)
		fixF16(z, num)
	case tensor.BFloat16:
		z := dst.BF16()[:n]
		for i, v := range in {
			z[i] = tensor.BF16FromFloat32(v)
		}
		fixBF16(z, num)
	case tensor.Float32:
		z := dst.F32()[:n]
		copy(z, in)
		fixF32(z, num)
	default:
		return fmt.Errorf("%s: dtype %s not supported", op, to)
	}
	c.chargeVector(n * 4)
	return nil
}
