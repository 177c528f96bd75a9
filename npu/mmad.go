package npu

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/tensor"
)

// The cube's matrix multiply-accumulate (Mmad): validation and cost here,
// the arithmetic in two forms that must agree bit for bit: mmadReference
// (mmad_ref.go), the accumulate model written as plainly as it reads, and
// mmadFast (mmad_fast.go), the paths the emulator runs. The exact
// roundings both use are in cube_round.go.

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
	// no Inf or NaN (the caller checked the inputs: Exact32Operands), so
	// the sequential fp32 model can use a multiply-then-add (SIMD) loop:
	// with exact products it rounds exactly as the fused step. Without
	// Init the model's bits also need accumulators that hold neither −0
	// nor a signalling NaN, as after any earlier Exact32 Mmad that started
	// from Init (sums of exact products from +0 produce neither); on other
	// accumulators a zero a[i,k] leaves its accumulator as it is (the skip
	// of mmadSaxpy).
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
	c.accInit(op, dst, p.M*p.N*4, p.Init)
	if p.Init {
		clear(dst.data[:p.M*p.N*4])
	}
	if p.UsefulK < 0 || p.UsefulK > p.K {
		return fmt.Errorf("%s: UsefulK %d outside [0, K=%d]", op, p.UsefulK, p.K)
	}
	if p.M == 0 || p.N == 0 || p.K == 0 {
		if p.Init && p.M*p.N > 0 {
			// The clear is the cube's work: a zero-cycle instruction that
			// writes the tile, so the sanitizer sees L0C written and a
			// later reader ordered after it.
			c.noteView(dst)
			c.chargeCube(0, 0, 0)
		}
		return nil
	}
	// The accumulators are viewed either way: the view makes them the
	// Mmad's operands in the schedule (pipe.go), which WithCostOnly keeps.
	cf, ci := mmadAccumulators(dst, p)
	if !c.costOnly {
		mmadFast(cf, ci, a, b, p, newMmadGeom(a, b, p))
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

func newMmadGeom(a, b *L0Tile, p MmadParams) mmadGeom {
	return mmadGeom{m: p.M, n: p.N, ku: p.UsefulK, lda: a.ld, ldb: b.ld}
}

// mmadAccumulators returns the [M × N] accumulators at the start of the
// L0C buffer dst: fp32 storage (cf), or int32 for Acc Int32 (ci).
func mmadAccumulators(dst *Buffer, p MmadParams) (cf []float32, ci []int32) {
	if p.Acc == tensor.Int32 {
		return nil, dst.I32()[:p.M*p.N]
	}
	return dst.F32()[:p.M*p.N], nil
}

// Exact32Operands reports whether a·b products of a value of a and a value
// of b (same dtype) are all exact in fp32 and b holds no Inf or NaN: the
// input condition of MmadParams.Exact32. fp16 products have 22 bits and
// exponents in [−48, 31]; bf16 products are exact unless they leave fp32's
// exponent range; fp32 products are not exact in general.
func Exact32Operands(a, b *GMMatrix) bool {
	if a == nil || b == nil || b.NonFinite || a.T.DType != b.T.DType {
		return false
	}
	switch a.T.DType {
	case tensor.Float16:
		return true
	case tensor.BFloat16:
		return a.MaxAbs*b.MaxAbs < math.MaxFloat32/2 &&
			(math.IsInf(a.MinNonZero, 1) || math.IsInf(b.MinNonZero, 1) || a.MinNonZero*b.MinNonZero >= 0x1p-126)
	}
	return false
}
