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
