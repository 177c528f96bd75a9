package npu

// CoreCost holds the counters one core accumulates while a kernel runs.
// Every primitive adds to them; nothing is measured from wall time, so
// the same kernel on the same inputs always yields the same counters.
type CoreCost struct {
	DMACycles    int64 `json:"dma_cycles"`    // cycles spent moving data GM↔UB/L1
	VectorCycles int64 `json:"vector_cycles"` // cycles of vector-unit work
	CubeCycles   int64 `json:"cube_cycles"`   // cycles of cube-unit work
	Cycles       int64 `json:"cycles"`        // modeled cycles: the end of the core's schedule (pipe.go)
	// DMABusyCycles and ComputeBusyCycles are the cycles in which a DMA
	// pipe (MTE2, MTE3), respectively a compute pipe (V, M), is busy, and
	// OverlapCycles those in which both are: Cost.Overlap is read off them.
	DMABusyCycles     int64 `json:"dma_busy_cycles"`
	ComputeBusyCycles int64 `json:"compute_busy_cycles"`
	OverlapCycles     int64 `json:"overlap_cycles"`
	// MTE1BusyCycles and CubeBusyCycles are the cycles in which MTE1
	// (L1 → L0A/L0B), respectively the cube (M), is busy, and
	// CubeLoadOverlapCycles those in which both are: how much of the
	// cube's operand loads run under its products (Cost.CubeLoadOverlap).
	MTE1BusyCycles        int64 `json:"mte1_busy_cycles,omitempty"`
	CubeBusyCycles        int64 `json:"cube_busy_cycles,omitempty"`
	CubeLoadOverlapCycles int64 `json:"cube_load_overlap_cycles,omitempty"`
	// BarrierWaitCycles are the cycles the core spent at SyncAll waiting
	// for the last core to arrive: part of Cycles, not work, so
	// Cost.LoadBalance leaves them out.
	BarrierWaitCycles int64 `json:"barrier_wait_cycles,omitempty"`
	GMBytesIn         int64 `json:"gm_bytes_in"`
	GMBytesOut        int64 `json:"gm_bytes_out"`
	// GMBurstBytesIn and GMBurstBytesOut are the whole GM blocks the
	// core's transfers moved in and out (what its DMA time is charged
	// on; GMBytesIn/Out count the elements only).
	GMBurstBytesIn  int64 `json:"gm_burst_bytes_in"`
	GMBurstBytesOut int64 `json:"gm_burst_bytes_out"`
	// GMBursts are the contiguous GM runs the core's copies moved (a
	// strided copy is one per row); each moves whole GM blocks.
	GMBursts    int64 `json:"gm_bursts"`
	VectorBytes int64 `json:"vector_bytes"` // bytes processed by vector instructions
	CubeMACs    int64 `json:"cube_macs"`    // multiply-accumulates issued (including fractal padding)
	// CubeUsefulMACs are the multiply-accumulates of the problem itself
	// (excluding fractal padding); CubeUtil weighs CubeCycles by
	// CubeUsefulMACs/CubeMACs.
	CubeUsefulMACs int64 `json:"cube_useful_macs"`
	UBPeakBytes    int64 `json:"ub_peak_bytes"`
	// UBLoadBytes, UBReadBytes and UBOutBytes are the UB traffic that
	// Cost.UBReuse is derived from; see there for what each counts.
	UBLoadBytes int64 `json:"ub_load_bytes"`
	UBReadBytes int64 `json:"ub_read_bytes"`
	UBOutBytes  int64 `json:"ub_out_bytes"`
}

// Cost is the deterministic cost of one kernel launch, derived from the
// per-core counters and the device profile.
type Cost struct {
	Device     string  `json:"device"`
	BlockDim   int     `json:"block_dim"`    // cores launched
	Cycles     int64   `json:"cycles"`       // the modeled kernel time: max over cores, or HBMCycles when larger (Bound)
	Seconds    float64 `json:"seconds"`      // Cycles / clock
	CoreCycles []int64 `json:"core_cycles"`  // per core
	GMBytesIn  int64   `json:"gm_bytes_in"`  // summed over cores
	GMBytesOut int64   `json:"gm_bytes_out"` // summed over cores
	GMBursts   int64   `json:"gm_bursts"`    // contiguous GM runs copied, summed over cores (CoreCost.GMBursts)
	// HBMBytes is the launch's traffic to HBM: with an L2, the distinct
	// GM blocks read plus those written when they fit the L2, else every
	// block moved (l2.go); without, every block moved. L2HitBytes are the
	// bytes the cores read that L2 served (0 without L2). HBMCycles is
	// HBMBytes at the whole HBM bandwidth, and Bound which bound set
	// Cycles: "cores" (the slowest core's schedule) or "hbm" (HBMCycles).
	HBMBytes    int64   `json:"hbm_bytes"`
	L2HitBytes  int64   `json:"l2_hit_bytes"`
	HBMCycles   int64   `json:"hbm_cycles"`
	Bound       string  `json:"bound"`
	UBPeakBytes int64   `json:"ub_peak_bytes"` // max over cores
	VectorUtil  float64 `json:"vector_util"`   // vector busy cycles / (Cycles · launched cores), in [0,1]
	CubeUtil    float64 `json:"cube_util"`     // useful MACs / (peak MACs per cycle · Cycles · launched cores)
	Overlap     float64 `json:"overlap"`       // DMA/compute overlap: cycles both busy / min(DMA busy, compute busy), summed over cores, in [0,1]
	LoadBalance float64 `json:"load_balance"`  // min/max over launched cores of cycles less barrier waits (CoreCost.BarrierWaitCycles), 1 when balanced
	// CubeLoadOverlap is the MTE1/cube overlap: cycles in which MTE1 and
	// M are both busy / min(MTE1 busy, M busy), summed over cores, in
	// [0,1]; 0 when no core both loads L0 and multiplies.
	CubeLoadOverlap float64 `json:"cube_load_overlap,omitempty"`
	// UBReuse is the fraction of compute's reads of UB served without a
	// fresh GM load: 1 − UBLoadBytes / UBReadBytes, clamped to [0, 1], and
	// 0 when compute reads no UB (UBReadBytes = 0; a judge must look at
	// UBReadBytes before reading 0 as "no reuse"). The counters, summed
	// over cores, are pure bookkeeping (they add no cycles):
	//
	//   - UBLoadBytes: GM bytes DMA'd into UB (DataCopyIn, DataCopyPadIn
	//     and DataCopy2DIn with a UB destination), GM bytes only, not the
	//     UB padding a pad copy zero-fills. Copies into L1 are not UB
	//     loads.
	//   - UBReadBytes: bytes compute reads out of UB. Add, Sub and Mul read
	//     both sources (2·n·size), Cast its source (n·from size), Duplicate
	//     nothing; VectorFused reads its operands' ReadBytes;
	//     ChargeVector and VectorWork, given only a byte count, read it once
	//     (one operand stream, a lower bound); ChargeCube, a product the
	//     kernel computes on its UB buffers, reads both operands
	//     ((m·k + k·n)·input size); MmadSparse reads its index (M·K/2
	//     bytes) when the index is in UB. Mmad reads L0A and L0B, filled
	//     from L1, never from UB; FixpipeToUB writes UB.
	//   - UBOutBytes: bytes DMA'd out of UB to GM (DataCopyOut,
	//     DataCopyPadOut, DataCopy2DOut), counted separately and left out
	//     of the ratio: a store is not compute, and counting it would give
	//     a pure streaming kernel (load, one instruction, store) reuse it
	//     does not have.
	//
	// So a streaming kernel that loads every operand it reads scores 0,
	// and one whose compute reads data produced on chip (vector results,
	// accumulators moved from L0C after a K loop) or reads a loaded byte
	// more than once scores higher. Bytes a kernel loads and never reads
	// can push 1 − load/read below 0, hence the clamp.
	UBReuse     float64    `json:"ub_reuse"`
	UBLoadBytes int64      `json:"ub_load_bytes"` // summed over cores; see UBReuse
	UBReadBytes int64      `json:"ub_read_bytes"` // summed over cores; see UBReuse
	UBOutBytes  int64      `json:"ub_out_bytes"`  // summed over cores; see UBReuse
	Cores       []CoreCost `json:"cores,omitempty"`
	// Findings are the sanitizer's findings on the launch's explicit-mode
	// blocks (sanitizer.go); empty for a clean launch.
	Findings []Finding `json:"sanitizer,omitempty"`
}
