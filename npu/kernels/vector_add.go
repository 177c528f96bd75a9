package kernels

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// vector_add: z = x + y elementwise, fp32 compute and one rounding to the
// dtype (fp16, bf16, fp32), or saturating int8 arithmetic.
//
// Host side, VectorAddTiling splits the N elements into 32-byte UB blocks
// and deals whole blocks to the cores (the first cores take one block
// more; only the last element range can end in a partial block), then
// sizes a UB tile so that the double-buffered x, y and z queues (2×3
// buffers) fit in UB. Device side, each core loops over its tiles:
// DataCopy x and y in (DataCopyPad for an unaligned tail), Add, DataCopy z
// out, double-buffered. The calls on f (a vectorAddFaults, the launch's
// fault plan, fault_vector_add.go) are the mutation score's fault hooks,
// each at the spot where its bug would sit, and return the correct value
// when no fault is on.

// vectorAddQueues is the number of UB queues of the kernel: x, y and z.
const vectorAddQueues = 3

// VectorAddTiling is the host-side tiling of vector_add.
type VectorAddTiling struct {
	N          int          `json:"n"`
	DType      tensor.DType `json:"dtype"`
	BlockDim   int          `json:"block_dim"`   // cores launched; 0 when N = 0
	BlockElems int          `json:"block_elems"` // elements per UB block (32 B)
	PerCore    int          `json:"per_core"`    // the larger per-core share in elements, a multiple of BlockElems
	BigCores   int          `json:"big_cores"`   // cores [0, BigCores) take PerCore elements, the rest PerCore−BlockElems
	TileElems  int          `json:"tile_elems"`  // elements per UB tile
	TileNum    int          `json:"tile_num"`    // tiles of the largest share: ceil(PerCore/TileElems)
	BufferNum  int          `json:"buffer_num"`  // buffers per queue: 2 (double buffering) unless VectorAddOptions says 1
	// MaxTileElems is the largest tile UB holds with every buffer of every
	// queue allocated: the edge a one-core share crosses into a second tile.
	MaxTileElems int `json:"max_tile_elems"`
}

// VectorAddOptions overrides the tiling; zero fields take the default.
// BlockDim is used exactly (cores beyond the block count get no work);
// TileElems need not be a multiple of the block, in which case tiles whose
// GM range is unaligned are copied with DataCopyPad.
type VectorAddOptions struct {
	BlockDim  int
	TileElems int
	// BufferNum is the buffers per queue, 1 or 2 (the default): a
	// single-buffered kernel is slower but just as correct, and its
	// queue hand-offs must satisfy the sanitizer as well.
	BufferNum int
}

// CoreRange returns the first element and the element count of core i's
// share. Shares are contiguous, ascending, and cover [0, N) exactly.
func (t VectorAddTiling) CoreRange(i int) (off, n int) {
	if i < 0 || i >= t.BlockDim {
		return 0, 0
	}
	if i < t.BigCores {
		off, n = i*t.PerCore, t.PerCore
	} else {
		small := t.PerCore - t.BlockElems
		off, n = t.BigCores*t.PerCore+(i-t.BigCores)*small, small
	}
	off = min(off, t.N)
	return off, max(0, min(n, t.N-off))
}

// NewVectorAddTiling computes the default tiling of n elements of dtype on
// prof. It is VectorAddTilingWith with no overrides.
func NewVectorAddTiling(prof npu.Profile, n int, dtype tensor.DType) (VectorAddTiling, error) {
	return VectorAddTilingWith(prof, n, dtype, VectorAddOptions{})
}

// VectorAddTilingWith computes the tiling of n elements of dtype on prof.
//
// Default: BlockDim = min(vector cores, blocks), so no core is idle; the
// blocks are dealt so that shares differ by at most one block, which keeps
// the modeled load balance ≥ 0.9 once every core has work. The tile is the
// largest that lets the 2×3 buffers fit in UB, then shrunk evenly so every
// tile of the largest share is about the same size (a core never ends on a
// sliver tile, and cores with one block less still have the same number of
// tiles).
func VectorAddTilingWith(prof npu.Profile, n int, dtype tensor.DType, opt VectorAddOptions) (VectorAddTiling, error) {
	if err := prof.ValidateFields(); err != nil {
		return VectorAddTiling{}, err
	}
	if err := vectorAddDType(dtype); err != nil {
		return VectorAddTiling{}, err
	}
	if n < 0 || n > tensor.MaxElements {
		return VectorAddTiling{}, fmt.Errorf("vector_add: n=%d out of range [0, %d]", n, tensor.MaxElements)
	}
	if opt.BlockDim < 0 || opt.BlockDim > prof.VectorCores {
		return VectorAddTiling{}, fmt.Errorf("vector_add: BlockDim %d out of range [1, %d]", opt.BlockDim, prof.VectorCores)
	}
	if opt.BufferNum < 0 || opt.BufferNum > 2 {
		return VectorAddTiling{}, fmt.Errorf("vector_add: BufferNum %d out of range [1, 2]", opt.BufferNum)
	}
	if opt.TileElems < 0 {
		return VectorAddTiling{}, fmt.Errorf("vector_add: TileElems %d is negative", opt.TileElems)
	}
	size, align := dtype.Size(), prof.UBAlign()
	t := VectorAddTiling{N: n, DType: dtype, BlockElems: align / size, BufferNum: 2}
	if opt.BufferNum > 0 {
		t.BufferNum = opt.BufferNum
	}
	if n == 0 {
		return t, nil
	}
	blocks := (n + t.BlockElems - 1) / t.BlockElems
	t.BlockDim = min(prof.VectorCores, blocks)
	if opt.BlockDim > 0 {
		t.BlockDim = opt.BlockDim
	}
	base, rem := blocks/t.BlockDim, blocks%t.BlockDim
	t.PerCore, t.BigCores = base*t.BlockElems, t.BlockDim
	if rem > 0 {
		t.PerCore, t.BigCores = (base+1)*t.BlockElems, rem
	}
	// UB budget per buffer: whole blocks.
	maxTileBytes := prof.UBBytes / (t.BufferNum * vectorAddQueues) / align * align
	t.MaxTileElems = maxTileBytes / size
	if opt.TileElems > 0 {
		if need := t.BufferNum * vectorAddQueues * roundUp(opt.TileElems*size, align); opt.TileElems > maxTileBytes/size || need > prof.UBBytes {
			return VectorAddTiling{}, fmt.Errorf("vector_add: TileElems %d: %d×%d buffers of %d bytes exceed UB (%d bytes)",
				opt.TileElems, t.BufferNum, vectorAddQueues, roundUp(opt.TileElems*size, align), prof.UBBytes)
		}
		t.TileElems = opt.TileElems
	} else {
		maxTile := maxTileBytes / size
		if maxTile < t.BlockElems {
			return VectorAddTiling{}, fmt.Errorf("vector_add: UB of %d bytes cannot hold %d×%d buffers of one %d-byte block",
				prof.UBBytes, t.BufferNum, vectorAddQueues, align)
		}
		tiles := (t.PerCore + maxTile - 1) / maxTile
		t.TileElems = roundUp((t.PerCore+tiles-1)/tiles, t.BlockElems)
	}
	t.TileNum = (t.PerCore + t.TileElems - 1) / t.TileElems
	return t, nil
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

func vectorAddDType(dt tensor.DType) error {
	switch dt {
	case tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8:
		return nil
	}
	return fmt.Errorf("vector_add: dtype %s not supported (want fp16, bf16, fp32 or int8)", dt)
}

// VectorAdd computes z = x + y on dev. x and y must have the same dtype
// (fp16, bf16, fp32 or int8) and the same shape; z has them too. An empty
// input launches nothing and returns dev.ZeroCost(). z is written to GM
// between guard bands (npu.GuardedOutput); if the launch wrote a guard, z
// and the cost are returned together with a wrapped *npu.GuardError.
func VectorAdd(ctx context.Context, dev *npu.Device, x, y *tensor.Tensor, opt VectorAddOptions) (*tensor.Tensor, *npu.Cost, error) {
	switch {
	case dev == nil:
		return nil, nil, fmt.Errorf("vector_add: nil device")
	case x == nil || y == nil:
		return nil, nil, fmt.Errorf("vector_add: nil input tensor")
	case x.DType != y.DType:
		return nil, nil, fmt.Errorf("vector_add: dtype mismatch: x is %s, y is %s", x.DType, y.DType)
	case !x.SameShape(y.Shape):
		return nil, nil, fmt.Errorf("vector_add: shape mismatch: x is %v, y is %v", x.Shape, y.Shape)
	}
	if err := vectorAddDType(x.DType); err != nil {
		return nil, nil, err
	}
	n := x.Len()
	if n != y.Len() {
		return nil, nil, fmt.Errorf("vector_add: x has %d elements, y has %d", n, y.Len())
	}
	t, err := VectorAddTilingWith(dev.Profile(), n, x.DType, opt)
	if err != nil {
		return nil, nil, err
	}
	if t.BlockDim == 0 {
		z, err := tensor.New(x.DType, x.Shape...)
		if err != nil {
			return nil, nil, fmt.Errorf("vector_add: %w", err)
		}
		return z, dev.ZeroCost(), nil
	}
	// z lives in GM between guard bands: a write past either end lands in
	// a guard and is reported, not lost.
	zg, err := npu.NewGuardedOutput("z", x.DType, x.Shape...)
	if err != nil {
		return nil, nil, fmt.Errorf("vector_add: %w", err)
	}
	cost, err := dev.Launch(ctx, t.BlockDim, vectorAddKernel(t, newVectorAddFaults(npu.FaultsFrom(ctx)), x, y, zg))
	if err != nil {
		return nil, nil, fmt.Errorf("vector_add: %w", err)
	}
	// z is a copy: the GM allocation goes back to the pool for the next
	// launch of this length (a fuzzer's mutations mostly keep it).
	z, gerr := zg.Tensor(), npu.CheckGuards(zg)
	zg.Release()
	if gerr != nil {
		return z, cost, fmt.Errorf("vector_add: %w", gerr)
	}
	return z, cost, nil
}

// vectorAddKernel is the device side: one block per core, written as an
// Ascend C kernel with explicit synchronisation (npu.SyncExplicit), which
// the sanitizer holds it to: two VECIN queues (x, y: MTE2 → V) and a
// VECOUT queue (z: V → MTE3) of BufferNum buffers each, so that the copy
// in of tile k+1 and the copy out of tile k−1 run while tile k adds.
// z[i] is GM element z.Base()+i; f is the launch's fault plan.
func vectorAddKernel(t VectorAddTiling, f vectorAddFaults, x, y *tensor.Tensor, z *npu.GuardedOutput) npu.Kernel {
	return func(c *npu.Core) error {
		off, n := t.CoreRange(c.BlockIdx)
		off, n = f.share(t, c.BlockIdx, off, n)
		if n == 0 {
			return nil
		}
		if err := c.SetSyncMode(npu.SyncExplicit); err != nil {
			return err
		}
		if err := c.SetBufferNum(t.BufferNum); err != nil {
			return err
		}
		size, align := t.DType.Size(), c.Profile().UBAlign()
		bufBytes := roundUp(t.TileElems*size, align)
		inX, err := c.NewTQue("x", npu.PipeMTE2, npu.PipeV, t.BufferNum, bufBytes)
		if err != nil {
			return err
		}
		inY, err := c.NewTQue("y", npu.PipeMTE2, npu.PipeV, t.BufferNum, bufBytes)
		if err != nil {
			return err
		}
		outZ, err := c.NewTQue("z", npu.PipeV, npu.PipeMTE3, t.BufferNum, bufBytes)
		if err != nil {
			return err
		}
		zgm, base := z.GM(), z.Base()
		var prevZ *npu.Buffer // the previous tile's z buffer (a fault's)
		for k, done := 0, 0; done < n; k, done = k+1, done+t.TileElems {
			c.BeginTile()
			cnt, g := min(t.TileElems, n-done), off+done
			copyIn, copyOut := c.DataCopyIn, c.DataCopyOut
			if (g*size)%align != 0 || (cnt*size)%align != 0 {
				copyIn, copyOut = c.DataCopyPadIn, c.DataCopyPadOut
			}
			gi := f.gmIndex(g)
			// CopyIn: MTE2 fills a free x and y buffer and hands them to V.
			xb, err := inX.AllocTensor()
			if err != nil {
				return err
			}
			yb, err := inY.AllocTensor()
			if err != nil {
				return err
			}
			if err := copyIn(xb, x, gi, cnt); err != nil {
				return err
			}
			if err := copyIn(yb, f.ySource(x, y), gi, cnt); err != nil {
				return err
			}
			if err := inX.EnQue(xb); err != nil {
				return err
			}
			if err := inY.EnQue(yb); err != nil {
				return err
			}
			// Compute: V takes them, adds into a free z buffer, hands z to
			// MTE3 and the inputs back to MTE2.
			zb, err := outZ.AllocTensor()
			if err != nil {
				return err
			}
			zw := f.zTarget(zb, prevZ)
			var xl, yl *npu.Buffer
			dequeue := func() error {
				if xl, err = inX.DeQue(); err != nil {
					return err
				}
				yl, err = inY.DeQue()
				return err
			}
			if !f.missingWait {
				if err := dequeue(); err != nil {
					return err
				}
			}
			ya := f.yForAdd(inY.Buffers(), k)
			if err := c.Add(f.addDType(t.DType), zw, xb, ya, f.addCount(t, cnt)); err != nil {
				return err
			}
			if f.missingWait {
				if err := dequeue(); err != nil {
					return err
				}
			}
			f.convert(c, t.DType, zw, xb, ya, cnt)
			if err := outZ.EnQue(zb); err != nil {
				return err
			}
			if err := inX.FreeTensor(xl); err != nil {
				return err
			}
			if err := inY.FreeTensor(yl); err != nil {
				return err
			}
			// CopyOut: MTE3 takes z, stores it and frees it for V.
			zo, err := outZ.DeQue()
			if err != nil {
				return err
			}
			if err := copyOut(zgm, base+gi, zw, f.outCount(t, g, cnt, size, align)); err != nil {
				return err
			}
			if err := f.afterStore(c, x, g, zw, cnt); err != nil {
				return err
			}
			if err := outZ.FreeTensor(zo); err != nil {
				return err
			}
			prevZ = zw
		}
		return nil
	}
}

// VectorAddKernel is vector_add's KernelFunc: param dtype, inputs x and y,
// output z.
func VectorAddKernel(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	const op = "vector_add"
	ds, ok := p["dtype"]
	if !ok {
		return nil, nil, fmt.Errorf("%s: param dtype is missing", op)
	}
	dt, err := tensor.ParseDType(ds)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: param dtype: %w", op, err)
	}
	if err := onlyInputs(op, in, "x", "y"); err != nil {
		return nil, nil, err
	}
	x, err := input(op, in, "x")
	if err != nil {
		return nil, nil, err
	}
	y, err := input(op, in, "y")
	if err != nil {
		return nil, nil, err
	}
	for _, v := range []struct {
		name string
		t    *tensor.Tensor
	}{{"x", x}, {"y", y}} {
		if v.t.DType != dt {
			return nil, nil, fmt.Errorf("%s: input %q: dtype %s, want %s (param dtype)", op, v.name, v.t.DType, dt)
		}
	}
	z, cost, err := VectorAdd(ctx, dev, x, y, variantOptions[VectorAddOptions](ctx))
	if err != nil {
		if z != nil { // a guard violation: z was produced, and a guard written
			return map[string]*tensor.Tensor{"z": z}, cost, err
		}
		return nil, nil, err
	}
	return map[string]*tensor.Tensor{"z": z}, cost, nil
}
