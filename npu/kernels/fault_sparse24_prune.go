package kernels

import (
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

// sparse24_prune faults: bugs of the per-group selection.
const (
	// FaultSparse24PruneTiesHigh: equal magnitudes go to the higher index
	// (a >= where the compare-and-select wanted >).
	FaultSparse24PruneTiesHigh npu.Fault = "sparse24_prune/ties-to-higher-index"
	// FaultSparse24PruneNaNNotLargest: a NaN compares below every number
	// (an ordered compare returns false for it), so it is pruned instead
	// of kept.
	FaultSparse24PruneNaNNotLargest npu.Fault = "sparse24_prune/nan-not-largest"
	// FaultSparse24PruneIndex16Bit: the GM element offsets of a tile (of
	// w, values and meta) are held in 16 bits, so tiles past 2^16 elements
	// read and write at their offset mod 2^16 (the index overflow of vLLM
	// #1486 at a 16-bit width). Only w of more than 2^16 elements shows
	// it.
	FaultSparse24PruneIndex16Bit npu.Fault = "sparse24_prune/index-16-bit"
	// FaultSparse24PruneWeightsPrunedInPlace: the kernel also prunes w in
	// place, storing each group with its two pruned values zeroed back
	// over w (the outputs are right; the dense weights are clobbered).
	FaultSparse24PruneWeightsPrunedInPlace npu.Fault = "sparse24_prune/w-pruned-in-place"
)

// Sparse24PruneFaults is sparse24_prune's fault catalogue.
var Sparse24PruneFaults = []FaultInfo{
	{FaultSparse24PruneTiesHigh, "sparse24_prune", "ties of |w| resolved to the higher index"},
	{FaultSparse24PruneNaNNotLargest, "sparse24_prune", "NaN ranked below every number instead of largest"},
	{FaultSparse24PruneIndex16Bit, "sparse24_prune", "tile offsets held in 16 bits: wrong past 2^16 elements (vLLM #1486 index overflow)"},
	{FaultSparse24PruneWeightsPrunedInPlace, "sparse24_prune", "w pruned in place (pruned values zeroed in the input)"},
}

// sparse24PruneFaults is sparse24_prune's fault plan for one launch
// (Sparse24PruneKernel builds it from the launch's context), consulted
// through the hooks below at the spot of each bug. The zero value is the
// correct kernel.
type sparse24PruneFaults struct {
	tiesHigh, nanNotLargest, index16, prunedInPlace bool
}

func newSparse24PruneFaults(fs npu.Faults) sparse24PruneFaults {
	return sparse24PruneFaults{
		tiesHigh:      fs.Has(FaultSparse24PruneTiesHigh),
		nanNotLargest: fs.Has(FaultSparse24PruneNaNNotLargest),
		index16:       fs.Has(FaultSparse24PruneIndex16Bit),
		prunedInPlace: fs.Has(FaultSparse24PruneWeightsPrunedInPlace),
	}
}

// nanKey is the compare key of a NaN magnitude: above every number
// (0x7c01, one past +Inf), or below every one under nan-not-largest.
func (f sparse24PruneFaults) nanKey() int32 {
	if f.nanNotLargest {
		return -1
	}
	return 0x7c01
}

// tieBeats reports whether index i wins a tie of equal magnitudes against
// j: the lower index, or the higher under ties-to-higher-index.
func (f sparse24PruneFaults) tieBeats(i, j int) bool {
	if f.tiesHigh {
		return i > j
	}
	return i < j
}

// gmOffset is the GM element offset a tile copy uses for element off:
// off, or off mod 2^16 under index-16-bit.
func (f sparse24PruneFaults) gmOffset(off int) int {
	if f.index16 {
		return int(uint16(off))
	}
	return off
}

// pruneInPlace runs after a tile of n groups of w (UB buffer wb, its GM
// element offset off) has been pruned: under w-pruned-in-place it zeroes
// every group's two pruned values in wb (keep holds the kept pair of each
// group) and stores the tile back over w.
func (f sparse24PruneFaults) pruneInPlace(c *npu.Core, w *tensor.Tensor, off int, wb *npu.Buffer, keep [][2]int) error {
	if !f.prunedInPlace {
		return nil
	}
	x := wb.F16()
	for g, k := range keep {
		for j := range 4 {
			if j != k[0] && j != k[1] {
				x[4*g+j] = 0
			}
		}
	}
	return c.DataCopyPadOut(w, off, wb, 4*len(keep))
}
