package kernels

import "github.com/npuverify/npuverify/npu"

// sparse24_prune faults: bugs of the per-group selection.
const (
	// FaultP24TiesHigh: equal magnitudes go to the higher index (a >= where
	// the compare-and-select wanted >).
	FaultP24TiesHigh npu.Fault = "sparse24_prune/ties-to-higher-index"
	// FaultP24NaNNotLargest: a NaN compares below every number (an
	// ordered compare returns false for it), so it is pruned instead of
	// kept.
	FaultP24NaNNotLargest npu.Fault = "sparse24_prune/nan-not-largest"
)

// Sparse24PruneFaults is sparse24_prune's fault catalogue.
var Sparse24PruneFaults = []FaultInfo{
	{FaultP24TiesHigh, "sparse24_prune", "ties of |w| resolved to the higher index"},
	{FaultP24NaNNotLargest, "sparse24_prune", "NaN ranked below every number instead of largest"},
}

// sparse24PruneFaults is sparse24_prune's fault plan for one launch
// (Sparse24PruneKernel builds it from the launch's context), consulted
// through the hooks below at the spot of each bug. The zero value is the
// correct kernel.
type sparse24PruneFaults struct {
	tiesHigh, nanNotLargest bool
}

func newSparse24PruneFaults(fs npu.Faults) sparse24PruneFaults {
	return sparse24PruneFaults{
		tiesHigh:      fs.Has(FaultP24TiesHigh),
		nanNotLargest: fs.Has(FaultP24NaNNotLargest),
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
