package kernels

import "github.com/npuverify/npuverify/npu"

// kv_update faults.
const (
	// FaultKVPaddingSlot0: a padding entry (seq_id −1, slot_mapping −1)
	// is not skipped but written to cache row 0, as when the −1 is cast
	// to an unsigned slot and masked, or clamped to 0.
	FaultKVPaddingSlot0 npu.Fault = "kv_update/padding-slot-written-to-slot-0"
	// FaultKVBlockBoundary: at the first slot of a new block (pos mod BS
	// = 0) the physical block is looked up for pos−1 and the offset taken
	// one past it: off by one at a block boundary.
	FaultKVBlockBoundary npu.Fault = "kv_update/block-boundary-off-by-one"
	// FaultKVScaleWrongToken: the int8 scale is stored at the previous
	// token's row (scale index computed before the increment).
	FaultKVScaleWrongToken npu.Fault = "kv_update/int8-scale-at-wrong-token"
	// FaultKVSeqLensStale: seq_lens is not incremented after the write.
	FaultKVSeqLensStale npu.Fault = "kv_update/seq-lens-not-incremented"
	// FaultKVFullOverwritten: a full sequence (seq_len = L) is not skipped;
	// its write position is clamped to L−1, overwriting its last token.
	FaultKVFullOverwritten npu.Fault = "kv_update/full-sequence-overwritten"
	// FaultKVPageIndexU16: the physical block index is held in 16 bits,
	// so pages past 2^16 wrap (a uint16 page id in the slot computation).
	FaultKVPageIndexU16 npu.Fault = "kv_update/page-index-truncated-past-2^16"
	// FaultKVWrittenWrong: written is set for every non-padding entry,
	// full sequences included.
	FaultKVWrittenWrong npu.Fault = "kv_update/written-flags-wrong"
)

// KVUpdateFaults is kv_update's fault catalogue.
var KVUpdateFaults = []FaultInfo{
	{FaultKVPaddingSlot0, "kv_update", "padding entry (seq_id −1) written to slot 0"},
	{FaultKVBlockBoundary, "kv_update", "write one slot off at a block boundary (block looked up for pos−1)"},
	{FaultKVScaleWrongToken, "kv_update", "int8 scale stored at the previous token's row"},
	{FaultKVSeqLensStale, "kv_update", "seq_lens not incremented after the write"},
	{FaultKVFullOverwritten, "kv_update", "full sequence's last token overwritten instead of skipped"},
	{FaultKVPageIndexU16, "kv_update", "page index truncated to 16 bits past 2^16 blocks"},
	{FaultKVWrittenWrong, "kv_update", "written flag set for full sequences"},
}

// decode_attention faults.
const (
	// FaultDAReadsPastLen: the context loop runs to seq_len inclusive (an
	// off-by-one bound), reading the unwritten position seq_len.
	FaultDAReadsPastLen npu.Fault = "decode_attention/reads-past-seq-len"
	// FaultDAGQAMod: query head h reads kv head h mod Hkv instead of
	// h / (Hq/Hkv).
	FaultDAGQAMod npu.Fault = "decode_attention/gqa-head-h-mod-hkv"
	// FaultDANoMaxSub: softmax exponentiates the raw scores, without
	// subtracting the maximum (overflows for large scores).
	FaultDANoMaxSub npu.Fault = "decode_attention/softmax-without-max-subtraction"
	// FaultDAScaleDropped: int8 K codes are used without their scale.
	FaultDAScaleDropped npu.Fault = "decode_attention/int8-scale-dropped-on-dequant"
	// FaultDAVByKScale: int8 V is dequantised with the K scale.
	FaultDAVByKScale npu.Fault = "decode_attention/v-scaled-by-k-scale"
	// FaultDAPageIndexU16: the physical block index is held in 16 bits.
	FaultDAPageIndexU16 npu.Fault = "decode_attention/page-index-truncated-past-2^16"
	// FaultDACombineNoRescale: the flash-decoding combine adds the
	// partitions' partial sums without rescaling them by exp(m_p − M).
	FaultDACombineNoRescale npu.Fault = "decode_attention/combine-without-rescale"
)

// DecodeAttentionFaults is decode_attention's fault catalogue.
var DecodeAttentionFaults = []FaultInfo{
	{FaultDAReadsPastLen, "decode_attention", "context loop reads position seq_len (past the written tail)"},
	{FaultDAGQAMod, "decode_attention", "GQA query head mapped to kv head h mod Hkv instead of h / g"},
	{FaultDANoMaxSub, "decode_attention", "softmax without max subtraction"},
	{FaultDAScaleDropped, "decode_attention", "int8 K scale dropped on dequantisation"},
	{FaultDAVByKScale, "decode_attention", "int8 V dequantised with the K scale"},
	{FaultDAPageIndexU16, "decode_attention", "page index truncated to 16 bits past 2^16 blocks"},
	{FaultDACombineNoRescale, "decode_attention", "flash-decoding partitions combined without exp(m_p − M) rescale"},
}
