package kernels

import (
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
)

// kv_update faults.
const (
	// FaultKVUpdatePaddingSlot0: a padding entry (seq_id −1, slot_mapping
	// −1) is not skipped but written to cache row 0, as when the −1 is
	// cast to an unsigned slot and masked, or clamped to 0.
	FaultKVUpdatePaddingSlot0 npu.Fault = "kv_update/padding-slot-written-to-slot-0"
	// FaultKVUpdateBlockBoundary: at the first slot of a new block (pos
	// mod BS = 0) the physical block is looked up for pos−1 and the offset
	// taken one past it: off by one at a block boundary.
	FaultKVUpdateBlockBoundary npu.Fault = "kv_update/block-boundary-off-by-one"
	// FaultKVUpdateScaleWrongToken: the int8 scale is stored at the
	// previous token's row (scale index computed before the increment).
	FaultKVUpdateScaleWrongToken npu.Fault = "kv_update/int8-scale-at-wrong-token"
	// FaultKVUpdateSeqLensStale: seq_lens is not incremented after the
	// write.
	FaultKVUpdateSeqLensStale npu.Fault = "kv_update/seq-lens-not-incremented"
	// FaultKVUpdateFullSequenceOverwritten: a full sequence (seq_len = L)
	// is not skipped; its write position is clamped to L−1, overwriting
	// its last token.
	FaultKVUpdateFullSequenceOverwritten npu.Fault = "kv_update/full-sequence-overwritten"
	// FaultKVUpdatePageIndexUint16: the physical block index is held in 16
	// bits, so pages past 2^16 wrap (a uint16 page id in the slot
	// computation).
	FaultKVUpdatePageIndexUint16 npu.Fault = "kv_update/page-index-truncated-past-2^16"
	// FaultKVUpdateWrittenWrong: written is set for every non-padding
	// entry, full sequences included.
	FaultKVUpdateWrittenWrong npu.Fault = "kv_update/written-flags-wrong"
	// FaultKVUpdateXOverwritten: the projection is done in place: each new
	// v row is stored over its row of the input activations x as well
	// (outputs right, x clobbered for every later reader of it).
	FaultKVUpdateXOverwritten npu.Fault = "kv_update/x-overwritten-in-place"
	// FaultKVUpdateMissingWait: MTE1 loads each x and weight panel into
	// L0A/L0B without waiting for its copy into L1 (the
	// SetFlag/WaitFlag<MTE2, MTE1> pair after the load is missing): on
	// the device it may read the previous panel's bytes. The emulator
	// computes in program order, so only the sanitizer (RAW) shows it.
	FaultKVUpdateMissingWait npu.Fault = "kv_update/missing-wait-after-weight-load"
	// FaultKVUpdateFlagOverwrittenBeforeStore: the scalar sets a value in
	// the one-block flag buffer (SetValue: an entry's written flag, then
	// its new seq_len) without waiting for the store of what the buffer
	// held before (the SetFlag/WaitFlag<MTE3, S> pair is missing): on the
	// device the written flag may leave with the seq_len's bytes. The
	// emulator computes in program order, so only the sanitizer (a WAR on
	// pipe S) shows it.
	FaultKVUpdateFlagOverwrittenBeforeStore npu.Fault = "kv_update/flag-overwritten-before-store"
)

// KVUpdateFaults is kv_update's fault catalogue.
var KVUpdateFaults = []FaultInfo{
	{FaultKVUpdatePaddingSlot0, "kv_update", "padding entry (seq_id −1) written to slot 0"},
	{FaultKVUpdateBlockBoundary, "kv_update", "write one slot off at a block boundary (block looked up for pos−1)"},
	{FaultKVUpdateScaleWrongToken, "kv_update", "int8 scale stored at the previous token's row"},
	{FaultKVUpdateSeqLensStale, "kv_update", "seq_lens not incremented after the write"},
	{FaultKVUpdateFullSequenceOverwritten, "kv_update", "full sequence's last token overwritten instead of skipped"},
	{FaultKVUpdatePageIndexUint16, "kv_update", "page index truncated to 16 bits past 2^16 blocks"},
	{FaultKVUpdateWrittenWrong, "kv_update", "written flag set for full sequences"},
	{FaultKVUpdateXOverwritten, "kv_update", "projection done in place: new v rows stored over input x"},
	{FaultKVUpdateMissingWait, "kv_update", "L1 → L0 loads read the x row and weight panel without waiting for their copy in (missing WaitFlag<MTE2, MTE1>)"},
	{FaultKVUpdateFlagOverwrittenBeforeStore, "kv_update", "flag buffer set by the scalar (SetValue) while the store of its last value may still read it (missing WaitFlag<MTE3, S>)"},
}

// kvUpdateFaults is kv_update's fault plan for one launch: which of its
// catalogue faults are on, resolved once from the launch's context
// (KVUpdateKernel builds it) and consulted through the hooks below, each
// called at the spot of the kernel where its real bug would sit. The zero
// value is the correct kernel: every hook returns what the kernel uses
// anyway.
type kvUpdateFaults struct {
	paddingSlot0, blockBoundary, scaleWrongToken, seqLensStale bool
	fullOverwritten, pageIndexU16, writtenWrong, xOverwritten  bool
	missingWait, flagNoWait                                    bool // sync faults: only the sanitizer sees them
}

func newKVUpdateFaults(fs npu.Faults) kvUpdateFaults {
	return kvUpdateFaults{
		paddingSlot0:    fs.Has(FaultKVUpdatePaddingSlot0),
		blockBoundary:   fs.Has(FaultKVUpdateBlockBoundary),
		scaleWrongToken: fs.Has(FaultKVUpdateScaleWrongToken),
		seqLensStale:    fs.Has(FaultKVUpdateSeqLensStale),
		fullOverwritten: fs.Has(FaultKVUpdateFullSequenceOverwritten),
		pageIndexU16:    fs.Has(FaultKVUpdatePageIndexUint16),
		writtenWrong:    fs.Has(FaultKVUpdateWrittenWrong),
		xOverwritten:    fs.Has(FaultKVUpdateXOverwritten),
		missingWait:     fs.Has(FaultKVUpdateMissingWait),
		flagNoWait:      fs.Has(FaultKVUpdateFlagOverwrittenBeforeStore),
	}
}

// slot is the cache row the slot computation gives for write position pos
// of sequence s, whose correct row is row: under block-boundary-off-by-one
// the first slot of a new block is looked up through pos−1's block, one
// past it; under page-index-truncated-past-2^16 the physical block index
// wraps at 2^16.
func (f kvUpdateFaults) slot(g ops.KVGeom, bt []int32, s, pos, row int) int {
	if f.blockBoundary && g.Paged && pos%g.BS == 0 && pos > 0 {
		row = g.Row(bt, s, pos-1) + 1
	}
	if f.pageIndexU16 && g.Paged {
		row = int(uint16(bt[s*g.MB+pos/g.BS]))*g.BS + pos%g.BS
	}
	return row
}

// skippedRow is the row an entry the kernel must skip (row < 0) is
// written to after all: a full sequence s (seq_len ≥ L) has its write
// position clamped to L−1 (full-sequence-overwritten), a padding entry
// (s < 0) has its slot −1 taken as 0 (padding-slot-written-to-slot-0).
// Otherwise row, unchanged.
func (f kvUpdateFaults) skippedRow(g ops.KVGeom, bt, lens []int32, s, row int) int {
	switch {
	case s < 0 && f.paddingSlot0:
		return 0
	case s >= 0 && row < 0 && f.fullOverwritten && int(lens[s]) >= g.L:
		return g.Row(bt, s, g.L-1)
	}
	return row
}

// written is the written flag of an entry of sequence s whose correct flag
// is flag: 1 for every non-padding entry under written-flags-wrong.
func (f kvUpdateFaults) written(flag uint8, s int) uint8 {
	if f.writtenWrong && s >= 0 {
		return 1
	}
	return flag
}

// scaleIndex is the scale element the int8 scale of head h at cache row
// row is stored to: the previous token's (the next one's at row 0) under
// int8-scale-at-wrong-token.
func (f kvUpdateFaults) scaleIndex(row, h, heads int) int {
	if !f.scaleWrongToken {
		return row*heads + h
	}
	if row == 0 {
		return heads + h
	}
	return (row-1)*heads + h
}

// bumpsSeqLen reports whether the kernel stores seq_len+1 after a write:
// never under seq-lens-not-incremented.
func (f kvUpdateFaults) bumpsSeqLen() bool { return !f.seqLensStale }

// overX reports whether the projected row just computed for weight w is
// stored over its row of the input x as well: the v projection's, under
// x-overwritten-in-place (after the k projection has read x).
func (f kvUpdateFaults) overX(w string) bool { return f.xOverwritten && w == "w_v" }
