package kernels

import (
	"fmt"
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

// sparse_compress's explicit synchronisation (npu.SyncExplicit), which the
// sanitizer holds both paths to: every UB buffer has an event id, freed
// eagerly by its last reader and taken by its next producer (pipeFlags,
// pipe_flags.go), the ping-pong pattern of sparse24_prune and transdata.
// Between the phases of the chunked path (importance, radix passes,
// final pass) the buffers change pipes and the scores come back from GM:
// there every pending free event is taken and every pipe waits for every
// other (pipeFlags.phase).

// scTiles is how many tiles the in-UB path cuts a head's importance
// pass into: the copy in of a tile overlaps the vector work of the one
// before, so of V cycles of vector work V/n stay exposed, at the price
// of one more DMA latency a tile; n = √(V / latency) minimises the sum.
// At least 1, at most l.
func scTiles(p npu.Profile, l, d int) int {
	v := float64(l) * float64(d) * 8 / float64(p.VectorBytesPerCycle)
	_, lat := p.GMPath(npu.VectorCore) // a transfer's latency: L2's, or DMALatencyCycles without L2
	n := int(math.Round(math.Sqrt(v / float64(max(lat, 1)))))
	return max(1, min(n, l))
}

// scIDScalar is the event id of the V → S hand-offs (scalarAfterV).
const scIDScalar = 7

// scIDGather is the event id of the in-UB path's first gather buffer (the
// second takes the next).
const scIDGather = 2

// scMergeGap is how many rows a block of kept rows may skip between two
// kept ones, exclusive: copying g more rows costs g·rowBytes / rate
// cycles of the copy in, a copy of their own a latency each way, so a
// gap is worth copying across while g·rowBytes / rate < latency (the
// GM path's, L2's where there is one).
func scMergeGap(p npu.Profile, rowBytes int) int {
	rate, lat := p.GMPath(npu.VectorCore)
	return max(1, int(math.Ceil(float64(lat)*rate/float64(rowBytes))))
}

// scMergeBlock returns the end u of the block of kept rows that starts at
// sel[t], and whether it has gaps (gathered): sel[t:u] span at most tok
// rows, skip fewer than gapMax rows between neighbours, and, with gaps,
// are at most obRows (a gather buffer's rows) (scMergeJoins).
func scMergeBlock(sel []int, t, tok, obRows, gapMax int) (u int, gathered bool) {
	u = t + 1
	for u < len(sel) {
		ok, g := scMergeJoins(sel[t], sel[u-1], sel[u], u-t, gathered, tok, obRows, gapMax)
		if !ok {
			break
		}
		gathered = g
		u++
	}
	return u, gathered
}

// scMergeJoins is scMergeBlock's rule for one more row: whether kept row
// next joins the block of n kept rows from first to last (gathered: with
// gaps), and whether the block then has gaps. The chunked path, which
// finds its kept rows one at a time, grows its blocks with it.
func scMergeJoins(first, last, next, n int, gathered bool, tok, obRows, gapMax int) (joins, withGaps bool) {
	gap := next - last - 1
	if gap >= gapMax || next-first+1 > tok {
		return false, gathered
	}
	g := gathered || gap > 0
	if g && n+1 > obRows {
		return false, gathered
	}
	return true, g
}

// scCopyBlock copies the kept rows blk (ascending token indices, one
// block of scMergeBlock) of one of k and v, the row of token blk[0] at
// element in0 of in, to element out0 of out, GM → UB → GM: MTE2 copies
// the block's span into tile (event id tid) once its last reader, V or
// MTE3, handed it back. A run without gaps goes straight out (MTE2 →
// MTE3; the tile freed MTE3 → MTE2). A block with gaps is gathered by V
// once MTE2 handed the tile over, then copied out contiguously by MTE3
// once V handed the gather over: into gather (event id gid) once the
// last copy out of gather read it (MTE3 → V), the tile freed V → MTE2
// and gather MTE3 → V; or, gather being tile, in place (each kept row
// moved down to its place, in ascending order, so none is overwritten
// before it is read), the tile freed MTE3 → MTE2.
func scCopyBlock(c *npu.Core, e *pipeFlags, blk []int, d int, in *tensor.Tensor, in0 int, out *tensor.Tensor, out0 int, tile *npu.Buffer, tid int, gather *npu.Buffer, gid int) error {
	span := blk[len(blk)-1] - blk[0] + 1
	gathered := span > len(blk)
	if gathered && gather == nil {
		return fmt.Errorf("a block of %d kept rows spanning %d without a gather buffer", len(blk), span)
	}
	inPlace := gather == tile
	e.take(npu.PipeV, npu.PipeMTE2, tid)
	e.take(npu.PipeMTE3, npu.PipeMTE2, tid)
	if err := c.DataCopyPadIn(tile, in, in0, span*d); err != nil {
		return err
	}
	from := tile
	if gathered {
		e.handOff(npu.PipeMTE2, npu.PipeV, tid)
		if !inPlace {
			e.take(npu.PipeMTE3, npu.PipeV, gid)
		}
		rows, dst := tile.F16(), gather.F16()
		for j, i := range blk {
			r := i - blk[0]
			copy(dst[j*d:(j+1)*d], rows[r*d:(r+1)*d])
		}
		c.VectorWork(len(blk) * max(d*2, 1))
		if !inPlace {
			e.set(npu.PipeV, npu.PipeMTE2, tid)
		}
		e.handOff(npu.PipeV, npu.PipeMTE3, gid)
		from = gather
	} else {
		e.handOff(npu.PipeMTE2, npu.PipeMTE3, tid)
	}
	if err := c.DataCopyPadOut(out, out0, from, len(blk)*d); err != nil {
		return err
	}
	if gathered && !inPlace {
		e.set(npu.PipeMTE3, npu.PipeV, gid)
	} else {
		e.set(npu.PipeMTE3, npu.PipeMTE2, tid)
	}
	return nil
}

// scalarAfterV hands what V wrote to the scalar unit, SetFlag then
// WaitFlag(V, S) (Ascend C's HardEvent::V_S; every instruction issued
// after it starts after V's last one), and reads bytes [off, off+n) of b
// on the scalar (npu.Core.ScalarRead): the values that decide the
// addresses or the control flow of what the kernel issues next. The
// fault plan may drop the wait (missing-wait-before-scalar-read).
func scalarAfterV(c *npu.Core, f sparseCompressFaults, b *npu.Buffer, off, n int) error {
	if !f.noScalarWait {
		c.SetFlag(npu.PipeV, npu.PipeS, scIDScalar)
		c.WaitFlag(npu.PipeV, npu.PipeS, scIDScalar)
	}
	if err := c.ScalarRead(b, off, n); err != nil {
		return fmt.Errorf("scalar read of the selection: %w", err)
	}
	return nil
}

// scInUB is one core of the in-UB path, explicit: nb tile buffers kb
// (ping-pong when nb is 2), event id q per buffer, and where the UB holds
// them nb gather buffers ob (event ids scIDGather+q). Per head MTE2 copies
// the rows in tile by tile (tok rows) into kb[q] once its last reader
// handed it back, V computes the tile's importance into the score array
// once the copy landed and hands kb[q] back; V selects, writing the kept
// indices ascending at the head of the score array (over the scores it
// consumed), and the scalar reads them once V signalled (V → S); MTE3
// copies them out (the indices output) once V handed them over. Then the
// kept rows, k then v, a block at a time (scMergeBlock), MTE2 filling
// kb[q] while the block before drains from kb[q^1] or ob[q^1]: a run of
// consecutive indices goes GM → kb[q] → GM, a copy each way; a block
// with gaps is copied in whole, skipped rows and all, V gathers its kept
// rows into ob[q] once MTE2 handed kb[q] over and the last copy out of
// ob[q] read it (MTE3 → V), and MTE3 copies them out contiguously once V
// handed ob[q] over. Under those copies V clears the mask into the score
// array once the indices' copy read it (MTE3 → V), the scalar sets the
// kept tokens' bytes once V signalled (a V → S event of its own), and
// MTE3 copies the mask out after the last kept row once V and the scalar
// handed it over. The next head's importance overwrites the array once
// that copy read it (MTE3 → V). The score array's events take id
// scIDIdx.
func scInUB(c *npu.Core, f sparseCompressFaults, k, v *tensor.Tensor, outs map[string]*tensor.Tensor, keep, sinks, bufNum int, pairwise bool) error {
	h, l, d := k.Shape[0], k.Shape[1], k.Shape[2]
	a := c.Profile().UBAlign()
	scb, err := c.AllocUB(l * 8)
	if err != nil {
		return fmt.Errorf("head scores of L=%d tokens: %w", l, err)
	}
	rowBytes := max(d*2, 1)
	free := c.Profile().UBBytes - c.Used(npu.UB)
	nb := bufNum
	if free < nb*roundUp(rowBytes, a) {
		nb = 1 // a UB that holds the scores and one row (sparseCompressFitsUB)
	}
	// The UB left is cut into 2·nb buffers of obRows rows (at most L):
	// nb tile buffers kb (the importance tiles' and the kept blocks'
	// copies in) and nb gather buffers ob, where each holds two rows;
	// else into the nb tile buffers alone, and the kept rows go in runs
	// of consecutive indices only (gapMax 1).
	room := max(free/nb/a*a/rowBytes, 1)       // rows per buffer, each buffer whole blocks
	obRows := min(free/(2*nb)/a*a/rowBytes, l) // a block spans at most the head
	gapMax := scMergeGap(c.Profile(), rowBytes)
	merge := obRows >= 2 && gapMax > 1
	if merge {
		room = obRows
	} else {
		gapMax = 1 // rows skipped inside a block: none
	}
	tok := min(room, ceilDiv(l, scTiles(c.Profile(), l, d)))
	blk := tok // a kept block's span: a tile buffer's rows
	if merge {
		blk = obRows
	}
	var kb, ob [2]*npu.Buffer
	for i := range nb {
		if kb[i], err = c.AllocUB(blk * rowBytes); err != nil {
			return err
		}
		if merge {
			if ob[i], err = c.AllocUB(obRows * rowBytes); err != nil {
				return err
			}
		}
	}
	if err := c.SetSyncMode(npu.SyncExplicit); err != nil {
		return err
	}
	if err := c.SetBufferNum(nb); err != nil {
		return err
	}
	e := &pipeFlags{c: c}
	q := 0
	// fill takes kb[q] for MTE2: its last reader, V or MTE3, handed it back.
	fill := func() *npu.Buffer {
		e.take(npu.PipeV, npu.PipeMTE2, q)
		e.take(npu.PipeMTE3, npu.PipeMTE2, q)
		return kb[q]
	}
	for hh := c.BlockIdx; hh < h; hh += c.BlockDim {
		c.BeginTile()
		// The score array's last reader: the head before's mask copy.
		e.take(npu.PipeMTE3, npu.PipeV, scIDIdx)
		var scores []float32
		for t0 := 0; t0 < l; t0 += tok {
			n := min(tok, l-t0)
			b := fill()
			if err := c.DataCopyPadIn(b, k, (hh*l+t0)*d, n*d); err != nil {
				return err
			}
			e.handOff(npu.PipeMTE2, npu.PipeV, q)
			scores = scb.F32()[:l]
			rows := b.F16()
			for t := range n {
				scores[t0+t] = importance32(f, rows[t*d:(t+1)*d], pairwise)
			}
			c.VectorWork(n * d * 4 * 2)
			e.set(npu.PipeV, npu.PipeMTE2, q)
			q = (q + 1) % nb
		}
		scores = scb.F32()[:l]
		sel := select32(f, scores, sinks, keep, pairwise)
		for t, i := range sel { // the kept indices ascending, over the scores
			scb.I32()[t] = int32(i)
		}
		c.VectorWork(l * 8 * max(1, bitsLen(l)))
		// The kept rows' copies take their addresses from the selection:
		// the scalar reads the kept indices once V signalled, and issues
		// nothing before.
		if err := scalarAfterV(c, f, scb, 0, keep*4); err != nil {
			return err
		}
		src := f.kSourceHead(hh, h)
		oh := f.outHead(hh, c.BlockIdx)
		e.handOff(npu.PipeV, npu.PipeMTE3, scIDIdx)
		if err := c.DataCopyPadOut(outs["indices"], oh*keep, scb, keep); err != nil {
			return err
		}
		e.set(npu.PipeMTE3, npu.PipeV, scIDIdx)
		// The kept rows, a block at a time (scMergeBlock): a run of
		// consecutive indices a copy each way through kb[q]; a block with
		// gaps copied in whole into kb[q], its kept rows gathered by V
		// into ob[q] and copied out from there.
		for t := 0; t < len(sel); {
			u, _ := scMergeBlock(sel, t, blk, obRows, gapMax)
			for _, kv := range []struct {
				in  *tensor.Tensor
				out string
				hd  int
			}{{k, "k_out", src}, {v, "v_out", hh}} {
				if err := scCopyBlock(c, e, sel[t:u], d, kv.in, (kv.hd*l+sel[t])*d, outs[kv.out], (oh*keep+t)*d, kb[q], q, ob[q], scIDGather+q); err != nil {
					return err
				}
				q = (q + 1) % nb
			}
			t = u
		}
		// The mask, staged in the score array under the kept rows'
		// copies: V clears L bytes once the indices' copy read them, the
		// scalar sets the kept tokens' once V signalled, and MTE3 copies
		// the row out whole after the kept rows.
		e.take(npu.PipeMTE3, npu.PipeV, scIDIdx)
		clear(scb.U8()[:l])
		c.VectorWork(l)
		c.SetFlag(npu.PipeV, npu.PipeS, scIDScalar)
		c.WaitFlag(npu.PipeV, npu.PipeS, scIDScalar)
		for _, i := range sel {
			mi := f.maskIndex(i, l)
			if err := c.ScalarWrite(scb, mi, 1); err != nil {
				return err
			}
			scb.U8()[mi] = 1
		}
		e.handOff(npu.PipeV, npu.PipeMTE3, scIDIdx)
		e.handOff(npu.PipeS, npu.PipeMTE3, scIDIdx)
		if err := c.DataCopyPadOut(outs["mask"], oh*l, scb, l); err != nil {
			return err
		}
		e.set(npu.PipeMTE3, npu.PipeV, scIDIdx)
		if f.kInPlace {
			e.phase() // the fault's copies go through kb[0] with their own barriers
		}
		if err := f.compactK(c, k, outs["k_out"], kb[0], d, hh, oh, l, keep, d); err != nil {
			return err
		}
	}
	e.drain()
	return nil
}
