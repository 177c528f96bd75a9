package npu

import (
	"fmt"

	"github.com/npuverify/npuverify/tensor"
)

// 2-D DMA: strided blocks of a row-major GM matrix to and from a dense
// local tile, the copies of the cube's operand panels (GM → L1) and of the
// GEMM store (UB → GM). Each call is one DMA transfer, like DataCopyIn/Out,
// whatever the number of rows; only the block's rows·cols elements count
// as GM bytes (and as UB load or out bytes when the local side is UB,
// Cost.UBReuse).

// DataCopy2DIn copies the [rows × cols] block at (row0, col0) of the
// row-major GM matrix src (ld elements per row) into dst (UB or L1) as a
// dense row-major [dstRows × dstLd] tile, zero-filling the padding columns
// cols..dstLd−1 and rows rows..dstRows−1. One DMA transfer; only
// rows·cols elements count as GM bytes.
func (c *Core) DataCopy2DIn(dst *Buffer, src *tensor.Tensor, ld, row0, col0, rows, cols, dstLd, dstRows int) error {
	return c.copy2DIn("DataCopy2DIn", dst, src, ld, row0, col0, rows, cols, dstLd, dstRows, false)
}

// copy2DIn is DataCopy2DIn; nz charges the copy as the block's read from
// the FRACTAL_NZ form of src ([ceil(cols/C0), ceil(rows/16), 16, C0], C0
// = 32 bytes): one burst per column fractal the block touches, of its
// rows' whole 32-byte fractal rows (padding lanes included), where ND
// takes a burst per row.
func (c *Core) copy2DIn(op string, dst *Buffer, src *tensor.Tensor, ld, row0, col0, rows, cols, dstLd, dstRows int, nz bool) error {
	if dst == nil || (dst.space != UB && dst.space != L1) {
		return fmt.Errorf("%s: dst must be a UB or L1 buffer", op)
	}
	gm, size, err := c.checkGM(op, "src", src, 0, 0, false)
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
	lo := (row0*ld + col0) * size
	gmBytes, bursts := rows*cols*size, c.burstsOf(lo, cols*size, ld*size, rows)
	if nz && rows > 0 && cols > 0 {
		c0 := 32 / size
		lanes := (col0+cols-1)/c0 - col0/c0 + 1 // column fractals touched
		gmBytes = lanes * rows * 32
		bursts.n, bursts.bytes = int64(lanes), int64(gmBytes)
	}
	// The block's rows, each cols elements, ld apart (the cross-core
	// check's ranges: a core reading one column block of rows another
	// core writes other columns of does not race with it).
	g := gmDMA(gm, lo, lo+cols*size, false)
	g.rows, g.stride = rows, ld*size
	c.chargeDMA(true, gmBytes, bursts, op, g, wr(dst, 0, dstLd*dstRows*size))
	if dst.space == UB {
		c.cost.UBLoadBytes += int64(gmBytes)
	}
	return nil
}

// DataCopy2DOut copies the [rows × cols] block of the dense row-major UB
// tile src (srcLd elements per row) to (row0, col0) of the GM matrix dst
// (ld elements per row). One DMA transfer of rows·cols elements.
func (c *Core) DataCopy2DOut(dst *tensor.Tensor, ld, row0, col0, rows, cols int, src *Buffer, srcLd int) error {
	const op = "DataCopy2DOut"
	gm, size, err := c.checkGM(op, "dst", dst, 0, 0, true)
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
	// The block's rows, each cols elements, ld apart: two cores writing
	// column blocks of the same rows do not overlap.
	g := gmDMA(gm, (row0*ld+col0)*size, (row0*ld+col0+cols)*size, true)
	g.rows, g.stride = rows, ld*size
	c.chargeDMA(false, rows*cols*size, c.burstsOf((row0*ld+col0)*size, cols*size, ld*size, rows), op, g, rd(src, 0, srcLd*rows*size))
	c.cost.UBOutBytes += int64(rows * cols * size)
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
