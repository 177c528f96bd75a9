package kernels

import (
	"context"
	"math"
	"reflect"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// decode_attention's cross-core combine: the second phase of a launch
// whose items were split over cores. On the device it follows a SyncAll
// in the same kernel (every core's records are in GM before any core
// reads another's); the emulator has no barrier yet, so daSyncAll runs
// the second phase as a second launch after the first has finished, and
// prices the pair as one kernel with a barrier between its phases
// (daAfterBarrier). The records' GM writes and reads are ordinary DMA and
// count as GM traffic and cycles like any other.

// daSyncAll is where the barrier goes: it runs the combine phase of k
// after the partials phase whose cost is first, and returns the cost of
// both. Once npu offers SyncAll, partials and combine become one kernel
// with the barrier between them, and this function a call to it.
func daSyncAll(ctx context.Context, dev *npu.Device, first *npu.Cost, k daKernel) (*npu.Cost, error) {
	n := 0
	for c, items := range k.t.combine {
		if len(items) > 0 {
			n = c + 1
		}
	}
	if n == 0 {
		return first, nil
	}
	second, err := dev.Launch(ctx, n, k.combineItems)
	if err != nil {
		return nil, err
	}
	return daAfterBarrier(dev.Profile(), first, second), nil
}

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
	w := &daCore{d: d, dc: d}
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
			if err := c.DataCopy2DIn(mzb, k.ws, size, row0+r, col, nr, 2, 2, nr); err != nil {
				return err
			}
			if err := c.DataCopy2DIn(nb, k.ws, size, row0+r, col+2+u.c0, nr, cw, cw, nr); err != nil {
				return err
			}
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
		o := w.ob.F16()[:cw]
		for i, v := range nacc {
			o[i] = float16.Fromfloat32(float32(num.Round(float64(npu.CanonNaN(v/w.zRun[0])), tensor.Float16)))
		}
		c.ChargeVector(cw * 4)
		if err := c.DataCopyPadOut(k.out.GM(), k.out.Base()+qoff+u.h*d+u.c0, w.ob, cw); err != nil {
			return err
		}
	}
	return nil
}

// daCombineRows is how many records' M, Z and cw columns of N one load
// of the combine brings into room bytes of UB: all recs when they fit,
// at least 1.
func daCombineRows(room, align, cw, recs int) int {
	return max(1, min(recs, (room-2*align)/((cw+2)*4)))
}

// daAfterBarrier is the cost of a kernel whose phases first and second
// are separated by a barrier across its cores: the makespan is first's
// plus second's (no core starts the second phase before every core ends
// the first); each core's cycles are its busy cycles in both phases, so
// the load balance (min over max) counts a core waiting at the barrier as
// idle, not as busy. Counters add up core by core (every int64 counter of
// npu.CoreCost, the UB peak taken as the larger); the derived figures
// follow npu's definitions (vector and cube utilisation over the launched
// cores and the makespan, UB reuse over the summed UB counters), the
// overlap as the phases' overlaps weighted by their overlappable cycles
// (min of DMA and compute, summed over cores).
func daAfterBarrier(prof npu.Profile, first, second *npu.Cost) *npu.Cost {
	n := max(first.BlockDim, second.BlockDim)
	cores := make([]npu.CoreCost, n)
	for _, ph := range []*npu.Cost{first, second} {
		for i := range ph.Cores {
			dst, src := reflect.ValueOf(&cores[i]).Elem(), reflect.ValueOf(ph.Cores[i])
			for f := range dst.NumField() {
				if dst.Field(f).Kind() != reflect.Int64 {
					continue
				}
				a, b := dst.Field(f).Int(), src.Field(f).Int()
				if dst.Type().Field(f).Name == "UBPeakBytes" {
					dst.Field(f).SetInt(max(a, b))
				} else {
					dst.Field(f).SetInt(a + b)
				}
			}
		}
	}
	out := &npu.Cost{Device: first.Device, BlockDim: n, Cycles: first.Cycles + second.Cycles, CoreCycles: make([]int64, n), Cores: cores, LoadBalance: 1}
	out.Seconds = float64(out.Cycles) / prof.ClockHz()
	minC := int64(math.MaxInt64)
	var vec, cube float64
	for i, cc := range cores {
		out.CoreCycles[i] = cc.Cycles
		minC = min(minC, cc.Cycles)
		out.GMBytesIn += cc.GMBytesIn
		out.GMBytesOut += cc.GMBytesOut
		out.UBPeakBytes = max(out.UBPeakBytes, cc.UBPeakBytes)
		out.UBLoadBytes += cc.UBLoadBytes
		out.UBReadBytes += cc.UBReadBytes
		out.UBOutBytes += cc.UBOutBytes
		vec += float64(cc.VectorCycles)
		if cc.CubeMACs > 0 {
			cube += float64(cc.CubeCycles) * float64(cc.CubeUsefulMACs) / float64(cc.CubeMACs)
		}
	}
	if out.Cycles > 0 {
		busy := float64(out.Cycles) * float64(n)
		out.VectorUtil = vec / busy
		out.CubeUtil = cube / busy
		out.LoadBalance = float64(minC) / float64(out.Cycles)
	}
	w1, w2 := daOverlappable(first), daOverlappable(second)
	if w1+w2 > 0 {
		out.Overlap = (first.Overlap*w1 + second.Overlap*w2) / (w1 + w2)
	}
	out.UBReuse = npu.UBReuse(out.UBLoadBytes, out.UBReadBytes)
	// Any other list the launches report (findings, events) is the two
	// phases' together.
	o, a, b := reflect.ValueOf(out).Elem(), reflect.ValueOf(first).Elem(), reflect.ValueOf(second).Elem()
	for f := range o.NumField() {
		if name := o.Type().Field(f).Name; o.Field(f).Kind() != reflect.Slice || name == "CoreCycles" || name == "Cores" {
			continue
		}
		if a.Field(f).Len()+b.Field(f).Len() > 0 {
			o.Field(f).Set(reflect.AppendSlice(reflect.AppendSlice(reflect.MakeSlice(o.Field(f).Type(), 0, a.Field(f).Len()+b.Field(f).Len()), a.Field(f)), b.Field(f)))
		}
	}
	return out
}

// daOverlappable is a launch's cycles that DMA and compute could share:
// per core the lesser of the two, summed.
func daOverlappable(c *npu.Cost) float64 {
	var w float64
	for _, cc := range c.Cores {
		w += float64(min(cc.DMACycles, cc.VectorCycles+cc.CubeCycles))
	}
	return w
}
