package kernels

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// transdata on the vector cores, as the Ascend C TransData kernels are
// written. Both fractal formats are the same thing seen from the kernel:
// per outer index o (N, or the ND batch) a stack of C1 slabs of [Rp × C0]
// (NC1HWC0: Rp = H·W rows; FRACTAL_NZ: Rp = M rounded up to 16, the
// channel dim being K), against a plain side that is a row-major [R × C]
// matrix (NHWC, ND) or its transpose [C × R] (NCHW). The host deals the
// O·C1·ceil(Rp/T) tiles of T rows (T a multiple of 16, sized so four
// tiles of T·32 bytes fit the UB: input and output double-buffered) to the
// vector cores in contiguous shares. Toward the fractal format a tile is
// one strided 2-D DataCopy of the plain block into UB with the padding
// lanes and rows zero-filled (the transposed side lands as [C0 × T] and a
// vector transpose turns it into [T × C0]), then one contiguous DataCopy
// out; back from it, one contiguous DataCopy in of the tile's real rows,
// the transpose where the plain side is NCHW, and one strided 2-D
// DataCopy out of the real channels only, so the source's padding never
// reaches the output. Values move as bytes: the result is exact.

// TransDataOptions overrides the tiling (a valid variant): the core
// count, the rows per tile (rounded down to a multiple of 16) and the
// order tiles are dealt in (Interleave: round-robin instead of
// contiguous shares).
type TransDataOptions struct {
	BlockDim, TileRows int
	Interleave         bool
}

// transDataGeom is the host tiling's view of one conversion.
type transDataGeom struct {
	size          int  // bytes per element
	toFrac        bool // destination is NC1HWC0 / FRACTAL_NZ
	transposed    bool // the plain side is NCHW ([C × R] per outer index)
	outer         int  // N, or the product of ND's leading dims
	rows, rowsPad int  // R (H·W or M) and Rp (R, or M rounded up to 16)
	realRows      int  // rows the kernel copies (R, less under last-row-dropped)
	ch, c0, c1    int  // C (or K), C0, C1 = ceil(C/C0) as the kernel computes it
	outStride     int  // elements per outer index of the fractal side
	// pad: the whole-row copies go through DataCopyPad, because the UB
	// alignment does not divide a 32-byte row (a profile with blocks over
	// 32 bytes), as a kernel written for any such device would.
	pad bool
}

// fracOff is the fractal side's element offset of (o, q, r, 0).
func (g transDataGeom) fracOff(o, q, r int) int {
	return o*g.outStride + (q*g.rowsPad+r)*g.c0
}

// TransDataKernel is transdata's KernelFunc.
func TransDataKernel(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	vp, err := ops.TransData.Validate(p)
	if err != nil {
		return nil, nil, err
	}
	if err := ops.CheckInputs(ops.TransData, vp, in); err != nil {
		return nil, nil, err
	}
	opt := variantOptions[TransDataOptions](ctx)
	f := newTransDataFaults(npu.FaultsFrom(ctx))
	x := in["x"]
	g, dstShape, err := transDataTiling(vp, x, f)
	if err != nil {
		return nil, nil, fmt.Errorf("transdata: %w", err)
	}
	var y *npu.GuardedOutput
	switch {
	case g.toFrac:
		y, err = npu.NewGuardedOutput("y", x.DType, dstShape...)
	case g.transposed:
		y, err = npu.NewGuardedMatrix("y", x.DType, g.outer*g.ch, g.rows)
	default:
		y, err = npu.NewGuardedMatrix("y", x.DType, g.outer*g.rows, g.ch)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("transdata: %w", err)
	}
	defer y.Release()
	result := func() map[string]*tensor.Tensor {
		t := y.Tensor()
		t.Shape = dstShape
		return map[string]*tensor.Tensor{"y": t}
	}
	prof := dev.Profile()
	g.pad = 32%prof.UBAlign() != 0
	tile := opt.TileRows / ops.TransDataM0 * ops.TransDataM0
	if tile <= 0 {
		// The UB's tile, no taller than the slab (rounded up to M0): a
		// large UB must not make large buffers for a small input.
		tile = min(transDataTile(prof), roundUp(max(g.rowsPad, 1), ops.TransDataM0))
	}
	if tile < ops.TransDataM0 {
		return nil, nil, fmt.Errorf("transdata: ub_bytes %d cannot hold four tiles of %d rows of 32 bytes", prof.UBBytes, ops.TransDataM0)
	}
	tilesPerSlab := ceilDiv(g.rowsPad, tile)
	work := g.outer * g.c1 * tilesPerSlab
	if work == 0 || y.Len() == 0 {
		return result(), dev.ZeroCost(), nil
	}
	blockDim := min(prof.VectorCores, work)
	if opt.BlockDim > 0 {
		blockDim = min(opt.BlockDim, work)
	}
	per := ceilDiv(work, blockDim)
	cost, err := dev.Launch(ctx, blockDim, func(c *npu.Core) error {
		items := transDataShare(c.BlockIdx, blockDim, per, work, opt.Interleave)
		if len(items) == 0 {
			return nil
		}
		if err := c.SetBufferNum(2); err != nil {
			return err
		}
		var inUB, outUB [2]*npu.Buffer
		for i := range 2 {
			var err error
			if inUB[i], err = c.AllocUB(roundUp(tile*32, prof.UBAlign())); err != nil {
				return err
			}
			if outUB[i], err = c.AllocUB(roundUp(tile*32, prof.UBAlign())); err != nil {
				return err
			}
		}
		// Explicit synchronisation, held by the sanitizer: ping-pong
		// buffers q = 0, 1, event id q per buffer. A tile starts once
		// buffer q's last reads are done (V and MTE3 → MTE2, MTE3 → V);
		// within it the copy in hands over to V (tdSync.loaded) and V to
		// the copy out (tdSync.computed). The freeing events start set
		// and are taken once more at the end.
		if err := c.SetSyncMode(npu.SyncExplicit); err != nil {
			return err
		}
		for q := range 2 {
			c.SetFlag(npu.PipeV, npu.PipeMTE2, q)
			c.SetFlag(npu.PipeMTE3, npu.PipeMTE2, q)
			c.SetFlag(npu.PipeMTE3, npu.PipeV, q)
		}
		for qi, it := range items {
			q := qi & 1
			c.BeginTile()
			c.WaitFlag(npu.PipeV, npu.PipeMTE2, q)
			c.WaitFlag(npu.PipeMTE3, npu.PipeMTE2, q)
			c.WaitFlag(npu.PipeMTE3, npu.PipeV, q)
			sy := tdSync{c, q, f.noStoreWait}
			o, rest := it/(g.c1*tilesPerSlab), it%(g.c1*tilesPerSlab)
			s, r0 := rest/tilesPerSlab, rest%tilesPerSlab*tile
			var err error
			if g.toFrac {
				err = transDataToFrac(c, sy, g, f, x, y, o, s, r0, tile, inUB[q], outUB[q])
			} else {
				err = transDataFromFrac(c, sy, g, x, y, o, s, r0, tile, inUB[q], outUB[q])
			}
			if err != nil {
				return err
			}
			c.SetFlag(npu.PipeV, npu.PipeMTE2, q)
			c.SetFlag(npu.PipeMTE3, npu.PipeMTE2, q)
			c.SetFlag(npu.PipeMTE3, npu.PipeV, q)
		}
		for q := range 2 {
			c.WaitFlag(npu.PipeV, npu.PipeMTE2, q)
			c.WaitFlag(npu.PipeMTE3, npu.PipeMTE2, q)
			c.WaitFlag(npu.PipeMTE3, npu.PipeV, q)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("transdata: %w", err)
	}
	res := result()
	if err := npu.CheckGuards(y); err != nil {
		return res, cost, fmt.Errorf("transdata: %w", err)
	}
	return res, cost, nil
}

// transDataShare lists the tiles block b handles: a contiguous share of
// per, or every blockDim-th from b when interleaved.
func transDataShare(b, blockDim, per, work int, interleave bool) []int {
	var out []int
	if interleave {
		for i := b; i < work; i += blockDim {
			out = append(out, i)
		}
		return out
	}
	for i := b * per; i < min(work, (b+1)*per); i++ {
		out = append(out, i)
	}
	return out
}

// transDataTiling is the host side: the geometry of the conversion and
// the destination shape, from validated params and x (held to the
// contract). The fault plan's hooks sit where the host computes C0, C1,
// the spatial dims, the real rows and the outer stride.
func transDataTiling(p ops.Params, x *tensor.Tensor, f transDataFaults) (transDataGeom, []int, error) {
	src, dst := p["src_format"], p["dst_format"]
	size := x.DType.Size()
	g := transDataGeom{size: size, c0: f.c0(size)}
	s := x.Shape
	param := func(name string) int { n, _ := strconv.Atoi(p[name]); return n }
	var dstShape []int
	switch src {
	case ops.FormatNCHW, ops.FormatNHWC:
		n, c, h, w := s[0], s[1], s[2], s[3]
		if src == ops.FormatNHWC {
			h, w, c = s[1], s[2], s[3]
		}
		g.toFrac, g.transposed = true, src == ops.FormatNCHW
		g.outer, g.rows, g.rowsPad, g.ch = n, h*w, h*w, c
		g.c1 = f.c1(c, g.c0)
		h, w = f.spatial(h, w)
		dstShape = []int{n, g.c1, h, w, g.c0}
	case ops.FormatNC1HWC0:
		n, h, w, c := s[0], s[2], s[3], param("c")
		if c == 0 { // no padding lanes
			c = s[1] * g.c0
		}
		g.transposed = dst == ops.FormatNCHW
		g.outer, g.rows, g.rowsPad, g.ch = n, h*w, h*w, c
		g.c1 = f.c1(c, g.c0)
		h, w = f.spatial(h, w)
		dstShape = []int{n, c, h, w}
		if dst == ops.FormatNHWC {
			dstShape = []int{n, h, w, c}
		}
	case ops.FormatND:
		r := len(s)
		lead := s[:r-2]
		outer, _ := tensor.NumElements(lead)
		m, k := s[r-2], s[r-1]
		g.toFrac = true
		g.outer, g.rows, g.rowsPad, g.ch = outer, m, roundUp(m, ops.TransDataM0), k
		g.c1 = ceilDiv(k, g.c0)
		dstShape = append(slices.Clone(lead), g.c1, g.rowsPad/ops.TransDataM0, ops.TransDataM0, g.c0)
	case ops.FormatFractalNZ:
		r := len(s)
		lead := s[:r-4]
		outer, _ := tensor.NumElements(lead)
		m, k := param("m"), param("k")
		if m == 0 { // no padding rows or lanes
			m = s[r-3] * ops.TransDataM0
		}
		if k == 0 {
			k = s[r-4] * g.c0
		}
		g.outer, g.rows, g.rowsPad, g.ch = outer, m, roundUp(m, ops.TransDataM0), k
		g.c1 = ceilDiv(k, g.c0)
		dstShape = append(slices.Clone(lead), m, k)
	default:
		return g, nil, fmt.Errorf("param %q: unknown format %q", "src_format", src)
	}
	g.realRows = f.realRows(g.rows, src == ops.FormatFractalNZ || dst == ops.FormatFractalNZ)
	g.outStride = f.outStride(g.c1*g.c0*g.rowsPad, g.ch*g.rowsPad)
	return g, dstShape, nil
}

// tdSync is the hand-off of one tile on ping-pong buffer q: the copy in
// to V (loaded), V to the copy out (computed).
type tdSync struct {
	c *npu.Core
	q int
	// noStoreWait drops the V → MTE3 hand-off (a fault's).
	noStoreWait bool
}

func (s tdSync) loaded() {
	s.c.SetFlag(npu.PipeMTE2, npu.PipeV, s.q)
	s.c.WaitFlag(npu.PipeMTE2, npu.PipeV, s.q)
}

func (s tdSync) computed() {
	if s.noStoreWait {
		return
	}
	s.c.SetFlag(npu.PipeV, npu.PipeMTE3, s.q)
	s.c.WaitFlag(npu.PipeV, npu.PipeMTE3, s.q)
}

// transDataToFrac converts one tile toward the fractal format: rows
// r0…r0+T of slab s (channels s·C0…) of outer index o.
func transDataToFrac(c *npu.Core, sy tdSync, g transDataGeom, f transDataFaults, x *tensor.Tensor, y *npu.GuardedOutput, o, s, r0, tile int, inB, outB *npu.Buffer) error {
	tileRows := min(tile, g.rowsPad-r0)
	valid := max(0, min(tileRows, g.realRows-r0))
	cs := min(g.c0, g.ch-s*g.c0)
	stale := f.snapshot(outB, tileRows*g.c0*g.size)
	if g.transposed {
		// [cs × valid] of the [C × R] plane → [C0 × tileRows], zero-padded.
		if err := c.DataCopy2DIn(inB, x, g.rows, o*g.ch+s*g.c0, r0, cs, valid, tileRows, g.c0); err != nil {
			return err
		}
		sy.loaded()
		transposeBytes(outB.Bytes(), inB.Bytes(), g.c0, tileRows, g.size)
		c.VectorWork(tileRows * g.c0 * g.size)
	} else if err := c.DataCopy2DIn(outB, x, g.ch, o*g.rows+r0, s*g.c0, valid, cs, g.c0, tileRows); err != nil {
		return err
	} else {
		sy.loaded()
	}
	f.garbagePadding(outB, stale, valid, cs, tileRows, g.c0, g.size)
	sy.computed()
	if g.pad {
		return c.DataCopyPadOut(y.GM(), y.Base()+g.fracOff(o, s, r0), outB, tileRows*g.c0)
	}
	return c.DataCopyOut(y.GM(), y.Base()+g.fracOff(o, s, r0), outB, tileRows*g.c0)
}

// transDataFromFrac converts one tile back from the fractal format: the
// real rows of the tile are copied in, the real channels out.
func transDataFromFrac(c *npu.Core, sy tdSync, g transDataGeom, x *tensor.Tensor, y *npu.GuardedOutput, o, s, r0, tile int, inB, outB *npu.Buffer) error {
	valid := min(tile, g.realRows-r0)
	cs := min(g.c0, g.ch-s*g.c0)
	if valid <= 0 || cs <= 0 {
		return nil
	}
	load := c.DataCopyIn
	if g.pad {
		load = c.DataCopyPadIn
	}
	if err := load(inB, x, g.fracOff(o, s, r0), valid*g.c0); err != nil {
		return err
	}
	sy.loaded()
	if !g.transposed {
		sy.computed()
		return c.DataCopy2DOut(y.GM(), g.ch, y.BaseRow()+o*g.rows+r0, s*g.c0, valid, cs, inB, g.c0)
	}
	// [valid × C0] → [C0 × valid]; the first cs rows go out.
	transposeBytes(outB.Bytes(), inB.Bytes(), valid, g.c0, g.size)
	c.VectorWork(valid * g.c0 * g.size)
	sy.computed()
	return c.DataCopy2DOut(y.GM(), g.rows, y.BaseRow()+o*g.ch+s*g.c0, r0, cs, valid, outB, valid)
}

// transposeBytes writes the transpose of the row-major [rows × cols]
// matrix of size-byte elements in src into dst as [cols × rows].
func transposeBytes(dst, src []byte, rows, cols, size int) {
	for r := 0; r < rows; r++ {
		for col := 0; col < cols; col++ {
			d, s := (col*rows+r)*size, (r*cols+col)*size
			copy(dst[d:d+size], src[s:s+size])
		}
	}
}

// transDataTile is the rows of the default tile on prof: four buffers of
// T rows × 32 bytes (in and out, double-buffered) with their alignment
// padding, T a multiple of M0. Below M0 the profile cannot run transdata
// (checkTransData refuses it when the profile is loaded).
func transDataTile(prof npu.Profile) int {
	return roundDown((prof.UBBytes-4*prof.UBAlign())/(4*32), ops.TransDataM0)
}
