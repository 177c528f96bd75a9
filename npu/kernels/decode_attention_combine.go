package kernels

import (
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// decode_attention's cross-core combine: the second phase of a launch
// whose items were split over cores, after SyncAll (every core's records
// are in GM before any core reads another's). The records' GM writes and
// reads are ordinary DMA and count as GM traffic and cycles like any
// other. Explicit, as the first phase: the records' buffers go back to
// MTE2 once V folded them, the output row to V once MTE3 stored it.

// combineItems is the combine phase on one core: for each combine unit
// it was given (a column range of one query head of a split item), the
// item's records are read, their M and Z and the unit's columns of N, in
// as few loads as the UB holds, folded in partition order (record 0, the
// first piece's running state, then each later partition's partial: the
// left fold one core computes for an unsplit item), normalised and
// stored.
func (k daKernel) combineItems(c *npu.Core) error {
	mine := k.t.combine[c.BlockIdx]
	if len(mine) == 0 {
		return nil
	}
	d := k.g.D
	align := c.Profile().UBAlign()
	maxCw, maxRecs := 0, 0
	for _, u := range mine {
		un := k.t.units[u]
		maxCw = max(maxCw, un.c1-un.c0)
		maxRecs = max(maxRecs, k.t.items[un.item].parts-k.t.items[un.item].first+1)
	}
	w := &daCore{d: d, dc: d, e: &pipeFlags{c: c}}
	defer w.e.drain()
	var err error
	if w.ob, err = c.AllocUB(roundUp(max(maxCw*2, 1), align)); err != nil {
		return err
	}
	room := c.Profile().UBBytes - w.ob.Len()
	if k.f.qScaledInPlace {
		if w.qb, err = c.AllocUB(roundUp(max(k.t.heads*d*2, 1), align)); err != nil {
			return err
		}
		w.qf = make([]float32, k.t.heads*d)
		room -= w.qb.Len()
	}
	rows := daCombineRows(room, align, maxCw, maxRecs)
	mzb, err := c.AllocUB(roundUp(rows*2*4, align))
	if err != nil {
		return err
	}
	nb, err := c.AllocUB(roundUp(max(rows*maxCw*4, 1), align))
	if err != nil {
		return err
	}
	w.nacc = [][]float32{make([]float32, maxCw)}
	w.mRun, w.zRun = make([]float32, 1), make([]float32, 1)
	num := c.Profile().Numerics
	for _, ui := range mine {
		c.BeginTile()
		u := k.t.units[ui]
		it := k.t.items[u.item]
		size, cw := it.nq*(d+2), u.c1-u.c0
		row0, col := it.ws/size, u.h*(d+2)
		recs := it.parts - it.first + 1
		nacc := w.nacc[0][:cw]
		for r := 0; r < recs; r += rows {
			nr := min(rows, recs-r)
			w.e.take(npu.PipeV, npu.PipeMTE2, daIDMZ) // the last batch's fold read them
			if err := c.DataCopy2DIn(mzb, k.ws, size, row0+r, col, nr, 2, 2, nr); err != nil {
				return err
			}
			if err := c.DataCopy2DIn(nb, k.ws, size, row0+r, col+2+u.c0, nr, cw, cw, nr); err != nil {
				return err
			}
			w.e.handOff(npu.PipeMTE2, npu.PipeV, daIDMZ)
			mz, nv := mzb.F32(), nb.F32()
			for j := range nr {
				np := nv[j*cw : (j+1)*cw]
				if r+j == 0 {
					w.mRun[0], w.zRun[0] = mz[0], mz[1]
					copy(nacc, np)
					continue
				}
				a, bsc := w.foldScalars(k.f, 0, mz[2*j], mz[2*j+1])
				daFoldN(nacc, np, a, bsc)
				c.ChargeVector(cw * 4 * 2)
			}
			w.e.set(npu.PipeV, npu.PipeMTE2, daIDMZ)
		}
		qoff := (it.b*k.hq + it.q0) * d
		if k.f.qScaledInPlace && u.h == 0 && u.c0 == 0 {
			// Under q-scaled-in-place the clobbering store comes after
			// the barrier, when no piece of the item reads q any more
			// (before it, which pieces saw the scaled q would depend on
			// the cores' timing).
			if err := w.loadQ(c, k.in["q"], qoff, it.nq, d); err != nil {
				return err
			}
			if err := k.f.qInPlace(c, k.in["q"], qoff, w.qb, w.qf[:it.nq*d], k.sigma); err != nil {
				return err
			}
		}
		w.e.take(npu.PipeMTE3, npu.PipeV, daIDOb) // the last unit's store read ob
		o := w.ob.F16()[:cw]
		for i, v := range nacc {
			o[i] = float16.Fromfloat32(float32(num.Round(float64(npu.CanonNaN(v/w.zRun[0])), tensor.Float16)))
		}
		c.ChargeVector(cw * 4)
		w.e.handOff(npu.PipeV, npu.PipeMTE3, daIDOb)
		if err := c.DataCopyPadOut(k.out.GM(), k.out.Base()+qoff+u.h*d+u.c0, w.ob, cw); err != nil {
			return err
		}
		w.e.set(npu.PipeMTE3, npu.PipeV, daIDOb)
	}
	return nil
}

// daCombineRows is how many records' M, Z and cw columns of N one load
// of the combine brings into room bytes of UB: all recs when they fit,
// at least 1.
func daCombineRows(room, align, cw, recs int) int {
	return max(1, min(recs, (room-2*align)/((cw+2)*4)))
}
