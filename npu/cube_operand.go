package npu

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/npuverify/npuverify/internal/parallel"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// Cube operand views: the matrices and tiles the cube reads. The bytes
// really move through the buffers (GM → L1 by 2-D DMA, L1 → L0A/L0B by
// LoadL0); alongside, each L1 tile carries a decoded view of its values
// (float32, or int32 for int8) so that Mmad does arithmetic without
// decoding an element for every use: LoadL1 decodes the block it loads
// from the GMMatrix's tensor, and an L0Tile views its L1 tile. A whole
// matrix is never decoded: at 1024³ fp16 its fp32 copies of A and B took
// 8 MiB, twice the inputs, while the tiles of the two cores that run at a
// time take about 1 MiB (their decoded views are pooled).

// L0LoadBytesPerCycle is the L1 → L0A/L0B bandwidth of the model.
const L0LoadBytesPerCycle = 256

// GMMatrix is a row-major matrix in GM, with the facts about its values
// that kernels use to pick an exact fast path, found by one scan on the
// host before a launch.
type GMMatrix struct {
	T          *tensor.Tensor
	Rows, Cols int
	// MaxAbs and MinNonZero are the largest and the smallest non-zero
	// magnitude of the finite values (MinNonZero is +Inf if there is none;
	// both NaN for fp16, where they are not computed); NonFinite reports an
	// Inf or NaN.
	MaxAbs, MinNonZero float64
	NonFinite          bool
	// zeroFree reports that the matrix holds no ±0, so that the cube's
	// zero-skipping paths never skip on a tile of it (see mmadGer).
	zeroFree bool
	// NZ reports that the operand lies in GM as FRACTAL_NZ (32-byte C0
	// lanes, 16-row fractals), as Ascend's matmul consumes it. T holds
	// its ND form, which the cube reads (the same values, so the bits do
	// not depend on the layout), and LoadL1 charges each block as read
	// from the NZ form: a burst per column fractal of whole fractal rows,
	// not a burst per row.
	NZ bool
}

// NewGMMatrix scans a 2-D fp16, bf16, fp32 or int8 tensor.
func NewGMMatrix(t *tensor.Tensor) (*GMMatrix, error) {
	if t == nil || len(t.Shape) != 2 {
		return nil, fmt.Errorf("NewGMMatrix: want a 2-D tensor, got %v", t)
	}
	g := &GMMatrix{T: t, Rows: t.Shape[0], Cols: t.Shape[1], MinNonZero: math.Inf(1)}
	switch t.DType {
	case tensor.Int8:
		for _, v := range t.I8() {
			if a := math.Abs(float64(v)); a > 0 {
				g.MaxAbs, g.MinNonZero = max(g.MaxAbs, a), min(g.MinNonZero, a)
			}
		}
		return g, nil
	case tensor.Float16:
		// Every finite fp16 product is exact in fp32; only Inf/NaN matter.
		// The scan reads the whole operand, so a large one (a decoding
		// gemm's B of tens of MiB) is scanned on all cores.
		v := t.F16()
		var mu sync.Mutex
		zero := false
		parallel.For(len(v), scanF16Grain, func(lo, hi int) {
			nf, z := scanF16(v[lo:hi])
			mu.Lock()
			g.NonFinite, zero = g.NonFinite || nf, zero || z
			mu.Unlock()
		})
		g.zeroFree = !zero
		g.MaxAbs, g.MinNonZero = math.NaN(), math.NaN()
		return g, nil
	case tensor.BFloat16:
		g.scan(func(yield func(float32)) {
			for _, v := range t.BF16s() {
				yield(v.Float32())
			}
		})
	case tensor.Float32:
		g.scan(func(yield func(float32)) {
			for _, v := range t.F32() {
				yield(v)
			}
		})
	default:
		return nil, fmt.Errorf("NewGMMatrix: dtype %s not supported by the cube", t.DType)
	}
	return g, nil
}

// scan sets g's facts from the values each yields.
func (g *GMMatrix) scan(each func(yield func(float32))) {
	var hi, lo float32 = 0, float32(math.Inf(1))
	g.zeroFree = true
	each(func(v float32) {
		a := float32(math.Abs(float64(v)))
		switch {
		case a != a || a > math.MaxFloat32:
			g.NonFinite = true
		case a > 0:
			hi, lo = max(hi, a), min(lo, a)
		default:
			g.zeroFree = false
		}
	})
	g.MaxAbs, g.MinNonZero = float64(hi), float64(lo)
}

// L1Tile is a dense row-major [Rows × Cols] tile in L1 (its buffer holds
// the dtype's bytes) with the decoded view the cube reads: row r of the
// tile starts at view element r·ld (ld = Cols), padding decoded as zeros.
type L1Tile struct {
	Buf        *Buffer
	DType      tensor.DType
	Rows, Cols int
	f, fOwn    []float32
	i, iOwn    []int32
	ld         int
	zeroFree   bool // the float view holds no ±0 (GMMatrix.zeroFree, and no padding)
	finite     bool // the float view holds no Inf or NaN (!GMMatrix.NonFinite)
}

// LoadL1 DMAs the [rows × cols] block at (row0, col0) of src into t as a
// [tileRows × tileCols] tile, zero-padded (DataCopy2DIn: one transfer of
// rows·cols elements; of the block's whole fractal rows when src.NZ), and
// decodes it into the tile's view.
func (c *Core) LoadL1(t *L1Tile, src *GMMatrix, row0, col0, rows, cols, tileRows, tileCols int) error {
	if t == nil || t.Buf == nil || t.Buf.space != L1 {
		return fmt.Errorf("LoadL1: tile buffer must be in L1")
	}
	if src == nil {
		return fmt.Errorf("LoadL1: nil source")
	}
	if err := c.copy2DIn("DataCopy2DIn", t.Buf, src.T, src.Cols, row0, col0, rows, cols, tileCols, tileRows, src.NZ); err != nil {
		return err
	}
	t.DType, t.Rows, t.Cols = src.T.DType, tileRows, tileCols
	n := tileRows * tileCols
	padded := rows != tileRows || cols != tileCols
	t.ld, t.zeroFree, t.finite = tileCols, src.zeroFree && !padded, !src.NonFinite
	if src.T.DType == tensor.Int8 {
		if cap(t.iOwn) < n {
			putSlice(&i32Pool, t.iOwn)
			t.iOwn = getSlice[int32](&i32Pool, n)
		}
		t.i, t.f = t.iOwn[:n], nil
		if c.costOnly {
			return nil
		}
		decodeBlock(t.i, tileCols, src.T.I8(), src.Cols, row0, col0, rows, cols, tileRows, decodeI8Row)
		return nil
	}
	if cap(t.fOwn) < n {
		putSlice(&f32Pool, t.fOwn)
		t.fOwn = getSlice[float32](&f32Pool, n)
	}
	t.f, t.i = t.fOwn[:n], nil
	if c.costOnly {
		return nil // nothing will read the view (WithCostOnly)
	}
	switch src.T.DType {
	case tensor.Float16:
		decodeBlock(t.f, tileCols, src.T.F16(), src.Cols, row0, col0, rows, cols, tileRows, decodeF16Row)
	case tensor.BFloat16:
		decodeBlock(t.f, tileCols, src.T.BF16s(), src.Cols, row0, col0, rows, cols, tileRows, decodeBF16Row)
	default:
		decodeBlock(t.f, tileCols, src.T.F32(), src.Cols, row0, col0, rows, cols, tileRows, decodeF32Row)
	}
	return nil
}

// decodeBlock decodes the [rows × cols] block at (row0, col0) of src (ld
// per row) into dst (dstLd per row, dstRows rows) a row at a time with
// row, zero-filling the rest.
func decodeBlock[S any, D float32 | int32](dst []D, dstLd int, src []S, ld, row0, col0, rows, cols, dstRows int, row func(d []D, s []S)) {
	for r := 0; r < dstRows; r++ {
		d := dst[r*dstLd : (r+1)*dstLd]
		if r >= rows {
			clear(d)
			continue
		}
		row(d[:cols], src[(row0+r)*ld+col0:][:cols])
		clear(d[cols:])
	}
}

// The rows of decodeBlock: fp16 by tensor.F16ToF32s (F16C), bf16
// as the upper half of an fp32, fp32 as itself, int8 widened.
func decodeF16Row(d []float32, s []float16.Float16) { tensor.F16ToF32s(d, s) }

func decodeBF16Row(d []float32, s []tensor.BF16) {
	for j, v := range s {
		d[j] = v.Float32()
	}
}

func decodeF32Row(d, s []float32) { copy(d, s) }

func decodeI8Row(d []int32, s []int8) {
	for j, v := range s {
		d[j] = int32(v)
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
	finite     bool // the float view holds no Inf or NaN (from the L1 tile)
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
	t.DType, t.Rows, t.Cols, t.ld, t.zeroFree, t.finite = dtype, rows, cols, src.ld, src.zeroFree, src.finite
	n := rows * cols
	t.f, t.i = nil, nil
	if src.i != nil {
		t.i = src.i[row0*src.ld+col0:]
	} else {
		t.f = src.f[row0*src.ld+col0:]
	}
	if n > 0 {
		// The operands are the bytes the block reads: its rows of the
		// tile, one range when they span the tile's width (a B slice),
		// else a strided range, one a row (an A slice). The whole tile for every slice
		// made the sanitizer's shadow walk every panel once per slice: at
		// a decoding step's 16×4096×11008 that was most of the kernel's
		// time.
		cyc := int64((n*size + L0LoadBytesPerCycle - 1) / L0LoadBytesPerCycle)
		in := rd(src.Buf, (row0*src.Cols+col0)*size, rows*cols*size)
		if cols != src.Cols && rows > 1 {
			in.n, in.rows, in.stride = cols*size, rows, src.Cols*size
		}
		c.issue(PipeMTE1, op, cyc, gmAccess{}, in, wr(t.Buf, 0, n*size))
		c.noteL0Load(t.Buf)
	}
	return nil
}

// Tiles' decoded views are made for every core of every launch; recycle
// them.
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
	if cap(s) > 0 && cap(s) < unpooled {
		p.Put(&s)
	}
}

// unpooled is the length from which the emulator's pools keep no slice:
// a view that large (a tile is far smaller) amortises its own
// allocation, and pooling it would keep it alive through the reference
// and the verification that follow the launch (a pool survives one
// collection).
const unpooled = 1 << 20

// Release returns the tile's decoded view to a pool; the tile (and L0
// tiles loaded from it) must not be used after.
func (t *L1Tile) Release() {
	putSlice(&f32Pool, t.fOwn)
	putSlice(&i32Pool, t.iOwn)
	t.f, t.i, t.fOwn, t.iOwn = nil, nil, nil, nil
}

// scanF16Grain is the fewest fp16 values NewGMMatrix scans on a core of
// their own (a variable for the test that scans small operands in parts).
var scanF16Grain = 1 << 16

// scanF16Go reports whether src holds Inf or NaN, and whether it holds
// ±0: the portable form of scanF16, and its tail after the sixteen-value
// groups of scanF16AVX2 (TestScanF16Lanes holds both to the definition).
// It reads four values at a time as the 16-bit lanes of a word, each
// lane's magnitude a = v & 0x7FFF: a + 0x0400 reaches bit 15 exactly when
// a ≥ 0x7C00 (Inf and NaN), with no carry into the next lane (a ≤ 0x7FFF);
// and the word's a − 1 in every lane sets bit 15 of a lane only where a
// is 0 or a borrow came up from a zero lane below it, so it has one iff
// some lane is 0.
func scanF16Go(src []float16.Float16) (nonFinite, zero bool) {
	const (
		mag  = 0x7FFF7FFF7FFF7FFF
		inf  = 0x0400040004000400
		ones = 0x0001000100010001
		top  = 0x8000800080008000
	)
	b := asBytes(src)
	var nf, z uint64
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.NativeEndian.Uint64(b[i:]) & mag
		nf |= x + inf
		z |= x - ones
	}
	for _, v := range src[i/2:] {
		x := uint64(v) & 0x7FFF
		nf |= x + 0x0400
		z |= x - 1
	}
	return nf&top != 0, z&top != 0
}
