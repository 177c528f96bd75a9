package kernels

import "github.com/npuverify/npuverify/npu"

// The fault catalogue: realistic kernel bugs that can be switched on in
// the emulator (backend.WithFaults, or npu.WithFaults on the context of a
// launch) to measure how many of them the verification suite catches (the
// mutation score, package mutation). Each fault is consulted at the one
// spot of its kernel where the real bug would sit, through its op's
// per-launch fault plan (fault_vector_add.go, fault_gemm.go); with no
// fault switched on the kernels behave exactly as without the hooks.

// vector_add faults.
const (
	// FaultVATailDropped: the unaligned tail of the output (the last
	// N mod 32-byte-block elements) is never copied out, as when a kernel
	// rounds the DataCopy length down to whole blocks instead of using
	// DataCopyPad for the tail.
	FaultVATailDropped npu.Fault = "vector_add/tail-dropped"
	// FaultVACoreOffByOne: every core after the first computes its start
	// offset one element too low (an inclusive/exclusive mix-up at the core
	// boundary), so each share overlaps the previous one by an element and
	// the last element of the output is never written.
	FaultVACoreOffByOne npu.Fault = "vector_add/core-offset-off-by-one"
	// FaultVALastCoreSkipped: the last core's share is never computed (a
	// `blockIdx < blockDim-1` loop bound, or a host launching one block
	// too few).
	FaultVALastCoreSkipped npu.Fault = "vector_add/last-core-skipped"
	// FaultVALastTileSkipped: a core with more than one tile stops before
	// its last tile (tile loop bound off by one); only inputs larger than
	// one tile per core show it.
	FaultVALastTileSkipped npu.Fault = "vector_add/last-tile-skipped"
	// FaultVAStaleBuffer: from the second tile on, the Add reads the y
	// buffer of the previous tile (the ping-pong index of the y queue is
	// not advanced): a stale double-buffer tile is reused.
	FaultVAStaleBuffer npu.Fault = "vector_add/stale-double-buffer"
	// FaultVAWritePastEnd: the copy-out of the unaligned last tile moves
	// one element more than it holds (length cnt+1), writing one element
	// past the end of z in GM. Only a guard band shows it.
	FaultVAWritePastEnd npu.Fault = "vector_add/write-past-end"
	// FaultVAInputModified: the kernel also copies each result tile over
	// x in GM (an in-place variant left switched on); z itself is right.
	// Only the inputs-unchanged check shows it.
	FaultVAInputModified npu.Fault = "vector_add/input-modified"
	// FaultVAYReadAsX: the y copy-in reads from x's GM address (a
	// copy-pasted operand), so z = x + x.
	FaultVAYReadAsX npu.Fault = "vector_add/y-read-as-x"
	// FaultVACastTruncates: the fp32 → fp16/bf16 conversion of the sum
	// truncates (rounds toward zero) instead of rounding to nearest even,
	// as with a CAST_TRUNC / RZ mode where CAST_RINT was meant.
	FaultVACastTruncates npu.Fault = "vector_add/cast-truncates"
	// FaultVASaturatesNotInf: results saturate (±Inf → ±max, NaN → 0) on
	// a part whose profile says IEEE overflow to Inf (a saturation mode
	// left on from an older part).
	FaultVASaturatesNotInf npu.Fault = "vector_add/saturates-not-inf"
	// FaultVAInfNotSaturated: the reverse: on a part whose profile says
	// saturate, results overflow to ±Inf and NaN stays NaN.
	FaultVAInfNotSaturated npu.Fault = "vector_add/inf-not-saturated"
	// FaultVASubnormalsFlushed: subnormal results are flushed to zero on
	// a part whose profile keeps them (a flush-to-zero mode left on).
	FaultVASubnormalsFlushed npu.Fault = "vector_add/subnormals-flushed"
	// FaultVAInt8Wraps: int8 sums wrap around (two's complement) instead
	// of saturating to [−128, 127].
	FaultVAInt8Wraps npu.Fault = "vector_add/int8-wraps"
	// FaultVAInt8Clamp127: int8 sums clamp to the symmetric quantisation
	// range [−127, 127] instead of the arithmetic range [−128, 127].
	FaultVAInt8Clamp127 npu.Fault = "vector_add/int8-clamp-127"
	// FaultVABF16AsFP16: bf16 data is added with the fp16 instruction (the
	// dtype template argument of the Add is wrong), so the bits are
	// reinterpreted.
	FaultVABF16AsFP16 npu.Fault = "vector_add/bf16-as-fp16"
	// FaultVAIndex16: the GM element offset of each tile is held in 16
	// bits, so from element 2^16 on every tile reads x and y and writes z
	// at its offset mod 2^16 (vLLM #1486: an int32 block index that
	// overflows at 64K blocks; here the same overflow at a 16-bit width).
	// Only inputs of more than 2^16 elements show it.
	FaultVAIndex16 npu.Fault = "vector_add/index-16-bit"
	// FaultVATiesAway: the cast of the sum to the output dtype rounds
	// half away from zero (CAST_ROUND, C's round()) where the contract
	// says round to nearest, ties to even (CAST_RINT). Only sums that sit
	// exactly halfway between two neighbours show it, and only an exact
	// judgement does: a half-ulp bound accepts both neighbours of a tie.
	FaultVATiesAway npu.Fault = "vector_add/ties-away-from-zero"
)

// FaultInfo describes one fault of the catalogue.
type FaultInfo struct {
	Fault  npu.Fault `json:"fault"`
	Op     string    `json:"op"`
	Models string    `json:"models"` // the real bug it models
}

// VectorAddFaults is vector_add's fault catalogue.
var VectorAddFaults = []FaultInfo{
	{FaultVATailDropped, "vector_add", "unaligned tail not copied out (DataCopy length rounded down, no DataCopyPad)"},
	{FaultVACoreOffByOne, "vector_add", "core start offset one element low at every core boundary"},
	{FaultVALastCoreSkipped, "vector_add", "last core's share never computed"},
	{FaultVALastTileSkipped, "vector_add", "tile loop stops before a core's last tile"},
	{FaultVAStaleBuffer, "vector_add", "stale double-buffer y tile reused from the second tile on"},
	{FaultVAWritePastEnd, "vector_add", "one element written past the end of z"},
	{FaultVAInputModified, "vector_add", "result also copied over input x"},
	{FaultVAYReadAsX, "vector_add", "y read from x's address (z = x + x)"},
	{FaultVACastTruncates, "vector_add", "fp32→fp16/bf16 cast truncates instead of RNE"},
	{FaultVASaturatesNotInf, "vector_add", "saturation where the profile expects inf"},
	{FaultVAInfNotSaturated, "vector_add", "inf/NaN where the profile expects saturation"},
	{FaultVASubnormalsFlushed, "vector_add", "subnormal results flushed to zero"},
	{FaultVAInt8Wraps, "vector_add", "int8 sum wraps around instead of saturating"},
	{FaultVAInt8Clamp127, "vector_add", "int8 sum clamped to [−127, 127] instead of [−128, 127]"},
	{FaultVABF16AsFP16, "vector_add", "bf16 added with the fp16 instruction"},
	{FaultVAIndex16, "vector_add", "tile offset held in 16 bits: wrong past 2^16 elements (vLLM #1486 index overflow)"},
	{FaultVATiesAway, "vector_add", "cast rounds ties away from zero where RNE is required"},
}
