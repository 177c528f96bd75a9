package npu

// CoreCost holds the counters one core accumulates while a kernel runs.
// Every primitive adds to them; nothing is measured from wall time, so
// the same kernel on the same inputs always yields the same counters.
type CoreCost struct {
	DMACycles    int64 `json:"dma_cycles"`    // cycles spent moving data GM↔UB/L1
	VectorCycles int64 `json:"vector_cycles"` // cycles of vector-unit work
	CubeCycles   int64 `json:"cube_cycles"`   // cycles of cube-unit work
	Cycles       int64 `json:"cycles"`        // modeled cycles: serial or overlapped per the kernel's pipelining
	GMBytesIn    int64 `json:"gm_bytes_in"`
	GMBytesOut   int64 `json:"gm_bytes_out"`
	VectorBytes  int64 `json:"vector_bytes"` // bytes processed by vector instructions
	CubeMACs     int64 `json:"cube_macs"`    // multiply-accumulates issued (including fractal padding)
	// CubeUsefulMACs are the multiply-accumulates of the problem itself
	// (excluding fractal padding); CubeUtil weighs CubeCycles by
	// CubeUsefulMACs/CubeMACs.
	CubeUsefulMACs int64 `json:"cube_useful_macs"`
	UBPeakBytes    int64 `json:"ub_peak_bytes"`
}

// Cost is the deterministic cost of one kernel launch, derived from the
// per-core counters and the device profile.
type Cost struct {
	Device      string     `json:"device"`
	BlockDim    int        `json:"block_dim"`     // cores launched
	Cycles      int64      `json:"cycles"`        // max over cores: the modeled kernel time
	Seconds     float64    `json:"seconds"`       // Cycles / clock
	CoreCycles  []int64    `json:"core_cycles"`   // per core
	GMBytesIn   int64      `json:"gm_bytes_in"`   // summed over cores
	GMBytesOut  int64      `json:"gm_bytes_out"`  // summed over cores
	UBPeakBytes int64      `json:"ub_peak_bytes"` // max over cores
	VectorUtil  float64    `json:"vector_util"`   // vector busy cycles / (Cycles · launched cores), in [0,1]
	CubeUtil    float64    `json:"cube_util"`     // useful MACs / (peak MACs per cycle · Cycles · launched cores)
	Overlap     float64    `json:"overlap"`       // DMA/compute overlap: hidden cycles / min(DMA, compute), in [0,1]
	LoadBalance float64    `json:"load_balance"`  // min/max core cycles over launched cores, 1 when balanced
	Cores       []CoreCost `json:"cores,omitempty"`
}
