package npu

import (
	"math"
	"math/bits"
	"slices"
)

// L2: the on-chip cache between GM (HBM) and the cores (Profile.L2Bytes,
// L2BytesPerCycle, L2LatencyCycles). A profile without L2 keeps the
// model of device.go: each transfer at the core's share of HBM.
//
// With L2, the model is deterministic by construction: blocks run on
// goroutines in any order, so "which core touched a line first" is not
// a fact the model may depend on. Instead:
//
//   - every GM transfer of a core travels its L2 port: L2LatencyCycles +
//     ceil(burst bytes / L2BytesPerCycle) on MTE2 (reads) or MTE3
//     (writes), whether the line was in L2 or not;
//   - the launch's HBM traffic is the distinct GM blocks (ub_block_bytes,
//     the unit a burst moves) read by any core, a union per tensor that
//     does not depend on order, plus the distinct blocks written (each
//     written back once), when read and written blocks together fit the
//     L2 capacity. When they do not, the model makes no claim about which
//     lines stay: every block a transfer reads counts as read from HBM
//     (no reuse at all, the conservative bound), and every block written
//     as written;
//   - the launch's Cycles are the larger of the slowest core's schedule
//     and its HBM bytes at the whole HBM bandwidth (Cost.Bound says
//     which); L2HitBytes are the bytes the cores' reads moved that HBM
//     did not (read burst bytes − HBM read bytes).
//
// Misses pay the same latency as hits: the model cannot say which
// transfer missed without an order; the HBM bound carries their cost in
// bandwidth.

// gmSpan is one transfer's GM blocks, logged for the L2 model: rows runs
// of rowBytes bytes, stride apart, from byte start of the tensor key.
type gmSpan struct {
	key                        uintptr
	start, rowBytes, stride, n int
	write                      bool
}

// Bounds a launch's Cycles can come from (Cost.Bound).
const (
	BoundCores = "cores" // the slowest core's schedule
	BoundHBM   = "hbm"   // the launch's HBM bytes at the HBM bandwidth
)

// logSpan records a transfer's GM blocks for the L2 model.
func (c *Core) logSpan(key uintptr, b dmaBursts, write bool) {
	if !c.prof.HasL2() || key == 0 || b.rows <= 0 || b.rowBytes <= 0 {
		return
	}
	c.l2log = append(c.l2log, gmSpan{key: key, start: b.start, rowBytes: b.rowBytes, stride: b.stride, n: b.rows, write: write})
}

// applyHBM sets cost's HBM figures from the launch's logged transfers
// (spans) and its read and written burst bytes, and bounds Cycles by the
// HBM time. Without L2 the per-core shares of HBM already price HBM:
// the HBM bytes are the burst bytes and the cores bound Cycles.
func (d *Device) applyHBM(cost *Cost, spans []gmSpan, readBurst, writeBurst int64) {
	p := &d.prof
	cost.Bound = BoundCores
	if !p.HasL2() {
		cost.HBMBytes = readBurst + writeBurst
		cost.HBMCycles = ceilCycles(float64(cost.HBMBytes) / p.HBMBytesPerCycle())
		return
	}
	blk := p.UBBlockBytes
	rd, wr := distinctBlocks(spans, blk, false), distinctBlocks(spans, blk, true)
	hbmRead, hbmWrite := rd*int64(blk), wr*int64(blk)
	if hbmRead+hbmWrite > p.L2Bytes {
		hbmRead, hbmWrite = readBurst, writeBurst
	}
	cost.HBMBytes = hbmRead + hbmWrite
	cost.L2HitBytes = max(0, readBurst-hbmRead)
	cost.HBMCycles = ceilCycles(float64(cost.HBMBytes) / p.HBMBytesPerCycle())
	if cost.HBMCycles > cost.Cycles {
		cost.Cycles, cost.Bound = cost.HBMCycles, BoundHBM
		cost.Seconds = float64(cost.Cycles) / p.ClockHz()
		d.rescaleUtil(cost)
	}
}

// rescaleUtil recomputes the utilisations of cost against its Cycles
// (after the HBM bound raised them): busy cycles over Cycles · cores.
func (d *Device) rescaleUtil(cost *Cost) {
	var vec, cube float64
	for _, cc := range cost.Cores {
		vec += float64(cc.VectorCycles)
		if cc.CubeMACs > 0 {
			cube += float64(cc.CubeCycles) * float64(cc.CubeUsefulMACs) / float64(cc.CubeMACs)
		}
	}
	if busy := float64(cost.Cycles) * float64(len(cost.Cores)); busy > 0 {
		cost.VectorUtil, cost.CubeUtil = vec/busy, cube/busy
	}
}

// distinctBlocks counts the distinct blk-byte GM blocks the spans of one
// direction (write or not) touch, per tensor: the union is a bitmap per
// tensor, so the count does not depend on the spans' order.
func distinctBlocks(spans []gmSpan, blk int, write bool) int64 {
	var sel []gmSpan
	for _, s := range spans {
		if s.write == write {
			sel = append(sel, s)
		}
	}
	slices.SortFunc(sel, func(a, b gmSpan) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		return 0
	})
	var total int64
	for i := 0; i < len(sel); {
		j := i
		end := 0
		for ; j < len(sel) && sel[j].key == sel[i].key; j++ {
			s := sel[j]
			end = max(end, s.start+(s.n-1)*s.stride+s.rowBytes)
		}
		bm := make([]uint64, (end/blk+64)/64)
		for _, s := range sel[i:j] {
			for r := range s.n {
				lo := s.start + r*s.stride
				setBits(bm, lo/blk, (lo+s.rowBytes+blk-1)/blk)
			}
		}
		for _, w := range bm {
			total += int64(bits.OnesCount64(w))
		}
		i = j
	}
	return total
}

// setBits sets bits [lo, hi) of bm.
func setBits(bm []uint64, lo, hi int) {
	for lo < hi {
		w, b := lo/64, lo%64
		n := min(64-b, hi-lo)
		mask := uint64(math.MaxUint64)
		if n < 64 {
			mask = (uint64(1)<<n - 1) << b
		}
		bm[w] |= mask
		lo += n
	}
}
