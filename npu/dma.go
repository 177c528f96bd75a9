package npu

import (
	"fmt"
	"unsafe"

	"github.com/npuverify/npuverify/tensor"
)

// Global memory (GM) is a tensor; a copy addresses it by element offset.
// DataCopyIn/Out move whole 32-byte blocks: the GM offset and the length,
// in bytes, must be multiples of the local memory's alignment (the UB
// block), as Ascend's DataCopy requires. DataCopyPadIn/Out move any number
// of elements at any offset; the local side is padded to the block.
//
// Each copy is one DMA transfer: it adds its GM bytes to GMBytesIn or
// GMBytesOut, one burst to GMBursts, and DMALatencyCycles + ceil(B /
// per-core HBM share) cycles, B the bytes of the GM blocks the burst
// touches, to DMACycles and to the current tile's in or out stage. A copy of
// zero elements is free. Copies into UB or L1 are allowed; copies out are
// from UB. A copy into UB adds its GM bytes to UBLoadBytes, a copy out
// to UBOutBytes (Cost.UBReuse). A copy in is an instruction on pipe MTE2,
// a copy out one on MTE3 (pipe.go).

// DataCopyIn copies n elements of src starting at element off into the
// start of dst. off·size and n·size must be multiples of the alignment.
func (c *Core) DataCopyIn(dst *Buffer, src *tensor.Tensor, off, n int) error {
	return c.copyIn("DataCopyIn", dst, src, off, n, false)
}

// DataCopyPadIn copies n elements of src starting at element off into the
// start of dst, with no alignment requirement, and fills the rest of the
// last block of dst (up to n·size rounded up to the alignment) with zero
// bytes. dst must hold the rounded length. Only n·size bytes count as GM
// traffic.
func (c *Core) DataCopyPadIn(dst *Buffer, src *tensor.Tensor, off, n int) error {
	return c.copyIn("DataCopyPadIn", dst, src, off, n, true)
}

// DataCopyOut copies the first n elements of src to dst starting at
// element off. off·size and n·size must be multiples of the alignment.
func (c *Core) DataCopyOut(dst *tensor.Tensor, off int, src *Buffer, n int) error {
	return c.copyOut("DataCopyOut", dst, off, src, n, false)
}

// DataCopyPadOut copies the first n elements of src to dst starting at
// element off, with no alignment requirement. Exactly n elements of dst
// are written; the padding stays in UB.
func (c *Core) DataCopyPadOut(dst *tensor.Tensor, off int, src *Buffer, n int) error {
	return c.copyOut("DataCopyPadOut", dst, off, src, n, true)
}

func (c *Core) copyIn(op string, dst *Buffer, src *tensor.Tensor, off, n int, pad bool) error {
	gm, size, err := c.checkGM(op, "src", src, off, n, false)
	if err != nil {
		return err
	}
	space := UB
	if dst != nil && dst.space == L1 {
		space = L1
	}
	align := c.mem[space].align
	bytes, local := n*size, n*size
	if pad {
		local = roundUp(bytes, align)
	} else if err := checkAligned(op, src, off, n, size, align); err != nil {
		return err
	}
	if err := c.checkBufOp(op, "dst", dst, space, local); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	copy(dst.data, gm[off*size:off*size+bytes])
	clear(dst.data[bytes:local])
	c.chargeDMA(true, bytes, c.bursts1D(off*size, bytes), op, gmDMA(gm, off*size, off*size+bytes, false), wr(dst, 0, local))
	if space == UB {
		c.cost.UBLoadBytes += int64(bytes)
	}
	return nil
}

func (c *Core) copyOut(op string, dst *tensor.Tensor, off int, src *Buffer, n int, pad bool) error {
	gm, size, err := c.checkGM(op, "dst", dst, off, n, true)
	if err != nil {
		return err
	}
	align := c.mem[UB].align
	if !pad {
		if err := checkAligned(op, dst, off, n, size, align); err != nil {
			return err
		}
	}
	bytes := n * size
	if err := c.checkBufOp(op, "src", src, UB, bytes); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	copy(gm[off*size:off*size+bytes], src.data)
	c.chargeDMA(false, bytes, c.bursts1D(off*size, bytes), op, gmDMA(gm, off*size, off*size+bytes, true), rd(src, 0, bytes))
	c.cost.UBOutBytes += int64(bytes)
	return nil
}

// checkGM validates a GM operand and returns its bytes and element size:
// those of the launch's copy when t is a copy-on-write input that a DMA
// wrote (write: this one), see CopyOnWrite.
func (c *Core) checkGM(op, what string, t *tensor.Tensor, off, n int, write bool) ([]byte, int, error) {
	// Every DMA sees a cancellation. Done, read once per launch, is nil
	// for a context that cannot be cancelled (a fuzzer's, a test's),
	// where Err walked the whole chain of context values per DMA.
	if c.done != nil {
		select {
		case <-c.done:
			return nil, 0, fmt.Errorf("%s: %w", op, c.ctx.Err())
		default:
		}
	}
	if t == nil {
		return nil, 0, fmt.Errorf("%s: %s tensor is nil", op, what)
	}
	if c.cow != nil {
		t = c.cow.resolve(t, write)
	}
	gm, size := gmBytes(t)
	c.sch.x.noteTensor(gm, t)
	if size == 0 {
		return nil, 0, fmt.Errorf("%s: %s tensor %s has no data", op, what, t)
	}
	if off < 0 || n < 0 || off > len(gm)/size || n > len(gm)/size-off {
		return nil, 0, fmt.Errorf("%s: %s %s: elements [%d, %d+%d) out of range [0, %d)", op, what, t, off, off, n, len(gm)/size)
	}
	return gm, size, nil
}

func checkAligned(op string, t *tensor.Tensor, off, n, size, align int) error {
	if (off*size)%align != 0 {
		return fmt.Errorf("%s: GM offset %d elements (%d bytes) of %s is not %d-byte aligned (use DataCopyPad for unaligned copies)",
			op, off, off*size, t.DType, align)
	}
	if (n*size)%align != 0 {
		return fmt.Errorf("%s: length %d elements (%d bytes) of %s is not a multiple of %d bytes (use DataCopyPad for tails)",
			op, n, n*size, t.DType, align)
	}
	return nil
}

// gmBytes views a tensor's elements as bytes (no copy) and returns the
// element size; size 0 means the tensor has no data.
func gmBytes(t *tensor.Tensor) ([]byte, int) {
	switch t.DType {
	case tensor.Float64:
		return asBytes(t.F64()), 8
	case tensor.Float32:
		return asBytes(t.F32()), 4
	case tensor.Float16:
		return asBytes(t.F16()), 2
	case tensor.BFloat16:
		return asBytes(t.BF16s()), 2
	case tensor.Int8:
		return asBytes(t.I8()), 1
	case tensor.Int32:
		return asBytes(t.I32()), 4
	case tensor.Uint8:
		return t.U8(), 1
	}
	return nil, 0
}

func asBytes[T any](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}
