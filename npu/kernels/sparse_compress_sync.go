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

// scInUB is one core of the in-UB path, explicit: nb tile buffers kb of
// tok rows each (ping-pong when nb is 2), event id q per buffer. Per head
// MTE2 copies the rows in tile by tile into kb[q] once its last reader
// handed it back, V computes the tile's importance into the score array
// once the copy landed and hands kb[q] back; V selects, writing the kept
// indices ascending at the head of the score array (over the scores it
// consumed), and the scalar reads them once V signalled (V → S); MTE3
// copies them out (the indices output) once V handed them over, and the
// kept rows go GM → kb[q] → GM in runs of consecutive indices (one copy
// in and one out a run), MTE2 filling kb[q] while MTE3 drains kb[q^1].
// Under those copies V clears the mask into the score array once the
// indices' copy read it (MTE3 → V), the scalar sets the kept tokens'
// bytes once V signalled (a V → S event of its own), and MTE3 copies the
// mask out after the last kept row once V and the scalar handed it over.
// The next head's importance overwrites the array once that copy read it
// (MTE3 → V). The buffer's events take id scIDIdx.
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
	room := max(free/nb/a*a/rowBytes, 1) // rows per buffer, each buffer whole blocks
	tok := min(room, ceilDiv(l, scTiles(c.Profile(), l, d)))
	var kb [2]*npu.Buffer
	for i := range nb {
		if kb[i], err = c.AllocUB(tok * rowBytes); err != nil {
			return err
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
		// The kept rows, a run of consecutive indices (at most tok rows)
		// a copy each way.
		for t := 0; t < len(sel); {
			n := 1
			for t+n < len(sel) && n < tok && sel[t+n] == sel[t]+n {
				n++
			}
			for _, kv := range []struct {
				in  *tensor.Tensor
				out string
				hd  int
			}{{k, "k_out", src}, {v, "v_out", hh}} {
				b := fill()
				if err := c.DataCopyPadIn(b, kv.in, (kv.hd*l+sel[t])*d, n*d); err != nil {
					return err
				}
				e.handOff(npu.PipeMTE2, npu.PipeMTE3, q)
				if err := c.DataCopyPadOut(outs[kv.out], (oh*keep+t)*d, b, n*d); err != nil {
					return err
				}
				e.set(npu.PipeMTE3, npu.PipeMTE2, q)
				q = (q + 1) % nb
			}
			t += n
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
