package kernels

import "github.com/npuverify/npuverify/npu"

// The fault catalogue: realistic kernel bugs that can be switched on in
// the emulator (emulator.WithFaults, or npu.WithFaults on the context of a
// launch) to measure how many of them the verification suite catches (the
// mutation score, package mutation). Each fault is consulted at the one
// spot of its kernel where the real bug would sit, through its op's
// per-launch fault plan (fault_vector_add.go, fault_gemm.go); with no
// fault switched on the kernels behave exactly as without the hooks.

// vector_add faults.
const (
	// FaultVectorAddTailDropped: the unaligned tail of the output (the
	// last N mod 32-byte-block elements) is never copied out, as when a
	// kernel rounds the DataCopy length down to whole blocks instead of
	// using DataCopyPad for the tail.
	FaultVectorAddTailDropped npu.Fault = "vector_add/tail-dropped"
	// FaultVectorAddCoreOffByOne: every core after the first computes its
	// start offset one element too low (an inclusive/exclusive mix-up at
	// the core boundary), so each share overlaps the previous one by an
	// element and the last element of the output is never written.
	FaultVectorAddCoreOffByOne npu.Fault = "vector_add/core-offset-off-by-one"
	// FaultVectorAddLastCoreSkipped: the last core's share is never
	// computed (a `blockIdx < blockDim-1` loop bound, or a host launching
	// one block too few).
	FaultVectorAddLastCoreSkipped npu.Fault = "vector_add/last-core-skipped"
	// FaultVectorAddLastTileSkipped: a core with more than one tile stops
	// before its last tile (tile loop bound off by one); only inputs
	// larger than one tile per core show it.
	FaultVectorAddLastTileSkipped npu.Fault = "vector_add/last-tile-skipped"
	// FaultVectorAddStaleBuffer: from the second tile on, the Add reads
	// the y buffer of the previous tile (the ping-pong index of the y
	// queue is not advanced): a stale double-buffer tile is reused.
	FaultVectorAddStaleBuffer npu.Fault = "vector_add/stale-double-buffer"
	// FaultVectorAddWritePastEnd: the copy-out of the unaligned last tile
	// moves one element more than it holds (length cnt+1), writing one
	// element past the end of z in GM. Only a guard band shows it.
	FaultVectorAddWritePastEnd npu.Fault = "vector_add/write-past-end"
	// FaultVectorAddInputModified: the kernel also copies each result tile
	// over x in GM (an in-place variant left switched on); z itself is
	// right. Only the inputs-unchanged check shows it.
	FaultVectorAddInputModified npu.Fault = "vector_add/input-modified"
	// FaultVectorAddYReadAsX: the y copy-in reads from x's GM address (a
	// copy-pasted operand), so z = x + x.
	FaultVectorAddYReadAsX npu.Fault = "vector_add/y-read-as-x"
	// FaultVectorAddCastTruncates: the fp32 → fp16/bf16 conversion of the
	// sum truncates (rounds toward zero) instead of rounding to nearest
	// even, as with a CAST_TRUNC / RZ mode where CAST_RINT was meant.
	FaultVectorAddCastTruncates npu.Fault = "vector_add/cast-truncates"
	// FaultVectorAddSaturatesNotInf: results saturate (±Inf → ±max,
	// NaN → 0) on a part whose profile says IEEE overflow to Inf (a
	// saturation mode left on from an older part).
	FaultVectorAddSaturatesNotInf npu.Fault = "vector_add/saturates-not-inf"
	// FaultVectorAddInfNotSaturated: the reverse: on a part whose profile
	// says saturate, results overflow to ±Inf and NaN stays NaN.
	FaultVectorAddInfNotSaturated npu.Fault = "vector_add/inf-not-saturated"
	// FaultVectorAddSubnormalsFlushed: subnormal results are flushed to
	// zero on a part whose profile keeps them (a flush-to-zero mode left
	// on).
	FaultVectorAddSubnormalsFlushed npu.Fault = "vector_add/subnormals-flushed"
	// FaultVectorAddInt8Wraps: int8 sums wrap around (two's complement)
	// instead of saturating to [−128, 127].
	FaultVectorAddInt8Wraps npu.Fault = "vector_add/int8-wraps"
	// FaultVectorAddInt8Clamp127: int8 sums clamp to the symmetric
	// quantisation range [−127, 127] instead of the arithmetic range
	// [−128, 127].
	FaultVectorAddInt8Clamp127 npu.Fault = "vector_add/int8-clamp-127"
	// FaultVectorAddBF16AsFP16: bf16 data is added with the fp16
	// instruction (the dtype template argument of the Add is wrong), so
	// the bits are reinterpreted.
	FaultVectorAddBF16AsFP16 npu.Fault = "vector_add/bf16-as-fp16"
	// FaultVectorAddIndex16Bit: the GM element offset of each tile is held
	// in 16 bits, so from element 2^16 on every tile reads x and y and
	// writes z at its offset mod 2^16 (vLLM #1486: an int32 block index
	// that overflows at 64K blocks; here the same overflow at a 16-bit
	// width). Only inputs of more than 2^16 elements show it.
	FaultVectorAddIndex16Bit npu.Fault = "vector_add/index-16-bit"
	// FaultVectorAddTiesAwayFromZero: the cast of the sum to the output
	// dtype rounds half away from zero (CAST_ROUND, C's round()) where the
	// contract says round to nearest, ties to even (CAST_RINT). Only sums
	// that sit exactly halfway between two neighbours show it, and only an
	// exact judgement does: a half-ulp bound accepts both neighbours of a
	// tie.
	FaultVectorAddTiesAwayFromZero npu.Fault = "vector_add/ties-away-from-zero"
	// FaultVectorAddMissingWait: the Add reads the x and y tiles before
	// dequeuing them (the WaitFlag<MTE2, V> of the hand-off comes after
	// the instruction it should guard): on the device the vector unit may
	// add bytes the copy in has not landed yet. The emulator computes in
	// program order, so only the sanitizer (RAW) shows it.
	FaultVectorAddMissingWait npu.Fault = "vector_add/missing-wait-after-copy-in"
	// FaultVectorAddPingPongReuse: from the second tile on, the Add
	// writes into the previous tile's z buffer, whose copy out may still
	// be draining on MTE3 (the ping-pong index of the output is not
	// advanced, the queue's hand-off bypassed). Right numbers in program
	// order; only the sanitizer (WAR) shows it.
	FaultVectorAddPingPongReuse npu.Fault = "vector_add/ping-pong-reused-before-store-drains"
	// FaultVectorAddWholeTileAdd: the Add runs over the whole tile
	// instead of the tile's element count, reading UB bytes that no copy
	// wrote on a short tile; the copy out stores only the count, so the
	// numbers are right and only the sanitizer (uninit) shows it.
	FaultVectorAddWholeTileAdd npu.Fault = "vector_add/add-reads-uninitialised-tile-tail"
)

// FaultInfo describes one fault of the catalogue.
type FaultInfo struct {
	Fault  npu.Fault `json:"fault"`
	Op     string    `json:"op"`
	Models string    `json:"models"` // the real bug it models
}

// VectorAddFaults is vector_add's fault catalogue.
var VectorAddFaults = []FaultInfo{
	{FaultVectorAddTailDropped, "vector_add", "unaligned tail not copied out (DataCopy length rounded down, no DataCopyPad)"},
	{FaultVectorAddCoreOffByOne, "vector_add", "core start offset one element low at every core boundary"},
	{FaultVectorAddLastCoreSkipped, "vector_add", "last core's share never computed"},
	{FaultVectorAddLastTileSkipped, "vector_add", "tile loop stops before a core's last tile"},
	{FaultVectorAddStaleBuffer, "vector_add", "stale double-buffer y tile reused from the second tile on"},
	{FaultVectorAddWritePastEnd, "vector_add", "one element written past the end of z"},
	{FaultVectorAddInputModified, "vector_add", "result also copied over input x"},
	{FaultVectorAddYReadAsX, "vector_add", "y read from x's address (z = x + x)"},
	{FaultVectorAddCastTruncates, "vector_add", "fp32→fp16/bf16 cast truncates instead of RNE"},
	{FaultVectorAddSaturatesNotInf, "vector_add", "saturation where the profile expects inf"},
	{FaultVectorAddInfNotSaturated, "vector_add", "inf/NaN where the profile expects saturation"},
	{FaultVectorAddSubnormalsFlushed, "vector_add", "subnormal results flushed to zero"},
	{FaultVectorAddInt8Wraps, "vector_add", "int8 sum wraps around instead of saturating"},
	{FaultVectorAddInt8Clamp127, "vector_add", "int8 sum clamped to [−127, 127] instead of [−128, 127]"},
	{FaultVectorAddBF16AsFP16, "vector_add", "bf16 added with the fp16 instruction"},
	{FaultVectorAddIndex16Bit, "vector_add", "tile offset held in 16 bits: wrong past 2^16 elements (vLLM #1486 index overflow)"},
	{FaultVectorAddTiesAwayFromZero, "vector_add", "cast rounds ties away from zero where RNE is required"},
	{FaultVectorAddMissingWait, "vector_add", "Add issued before the x/y hand-off's wait (missing WaitFlag<MTE2, V> after the copy in)"},
	{FaultVectorAddPingPongReuse, "vector_add", "ping-pong z buffer reused while its copy out still drains"},
	{FaultVectorAddWholeTileAdd, "vector_add", "Add over the whole tile reads uninitialised UB past a short tile"},
}
