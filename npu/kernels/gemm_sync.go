package kernels

import "github.com/npuverify/npuverify/npu"

// gemm's and gemm24's explicit synchronisation (npu.SyncExplicit), which
// the sanitizer holds both kernels to, written as an Ascend C matmul
// writes it. The pipes of one output block:
//
//	MTE2  A and B k-panels GM → L1 (L1 slot q, ping-pong over panels);
//	      C rows, int8 scales and gemm24's meta GM → UB
//	MTE1  baseK slices L1 → L0A/L0B (L0 slot l, ping-pong over slices)
//	V     gemm24: the slice's meta decoded into B-row indices (slot l)
//	M     Mmad (MmadSparse) into the block's L0C accumulators
//	FIX   the accumulators L0C → UB, a row chunk at a time
//	V     the epilogue: dequantise, alpha, beta·C, the cast
//	MTE3  the chunk UB → GM
//
// Each pair of pipes hands a filled buffer over with a set and a wait in
// a row (pipeFlags.handOff: MTE2 → MTE1 the panel landed in L1, MTE1 → M
// the slice is in L0A/L0B, M → FIX the block's Mmads are done, FIX → V
// the chunk is in UB, V → MTE3 it is cast, MTE2 → V C, the scales or the
// meta landed, V → M gemm24's indices are decoded). The consumer hands
// the buffer back with a free event, set as soon as its last read is
// issued, that the producer takes just before it overwrites the buffer
// (pipeFlags.set/take): MTE1 → MTE2 per L1 slot, M → MTE1 per L0 slot,
// FIX → M for L0C, V → FIX and MTE3 → FIX for the chunk, MTE3 → V for the
// cast rows, V → MTE2 for C, the scales and the meta, M → V for gemm24's
// indices. So MTE1 loads slice s+1 into one L0 slot while the cube
// multiplies slice s out of the other, MTE2 loads the next k-panel while
// both work on this one, and the next block's first panel loads while
// the epilogue drains this block's accumulators; with BufferNum 1 (one
// slot per stage) each load waits for the consumer of the last. Event ids
// are per pipe pair: a slot's index for the L1 and L0 slots, the
// gemmEv constants for the rest.
const (
	gemmEvL0C   = 0 // L0C: M ↔ FIX
	gemmEvAcc   = 0 // the fp32 chunk in UB (and the NZ store's stage): FIX ↔ V, MTE3
	gemmEvOut   = 1 // the cast chunk in UB: V ↔ MTE3
	gemmEvC     = 2 // the C chunk in UB: MTE2 ↔ V
	gemmEvScale = 3 // the int8 scales in UB: MTE2 ↔ V
	gemmEvMeta  = 4 // gemm24's meta panels in UB, + L1 slot: MTE2 ↔ V
	gemmEvIdx   = 6 // gemm24's decoded indices in UB, + L0 slot: V ↔ M
	// gemmEvResident … + gemmResidentEvents − 1 free the resident panels
	// of GEMMTiling.Reuse (MTE1 → MTE2, beside the L1 slots' 0 and 1):
	// panel ri's is gemmResidentEv(ri).
	gemmEvResident     = 2
	gemmResidentEvents = 4
)

// gemmResidentEv is the free event of resident panel ri. MTE1 sets it
// when the last block of a group has issued its slices of panel ri, and
// MTE2 takes it before the next group's first block overwrites the
// panel, so the next group's panel 0 loads while this block's later
// panels still run (one event for all of them would hold it until the
// last). A device has a few event ids per pipe pair, so panels share
// gemmResidentEvents of them round-robin: a take then also waits for the
// later panels of its id (pipeFlags.take takes every pending set), later
// than needed but never too early.
func gemmResidentEv(ri int) int { return gemmEvResident + ri%gemmResidentEvents }

// gemmSync is a gemm core's explicit synchronisation: its pending free
// events, and whether the launch's fault plan drops the MTE1 → M
// hand-off (gemm's missing-wait fault, fault_gemm.go).
type gemmSync struct {
	pipeFlags
	missingWait bool
}

// startGEMMSync puts core in explicit sync mode (before any instruction).
func startGEMMSync(core *npu.Core, missingWait bool) (*gemmSync, error) {
	if err := core.SetSyncMode(npu.SyncExplicit); err != nil {
		return nil, err
	}
	return &gemmSync{pipeFlags: pipeFlags{c: core}, missingWait: missingWait}, nil
}

// panelLoaded hands L1 slot q's A and B panels from MTE2 to MTE1.
func (e *gemmSync) panelLoaded(q int) { e.handOff(npu.PipeMTE2, npu.PipeMTE1, q) }

// sliceLoaded hands L0 slot l's slices from MTE1 to the cube; under the
// missing-wait fault it does not, and the Mmad reads L0A/L0B while MTE1
// may still be writing them (the same bits in program order, a RAW
// finding for the sanitizer).
func (e *gemmSync) sliceLoaded(l int) {
	if !e.missingWait {
		e.handOff(npu.PipeMTE1, npu.PipeM, l)
	}
}

// stageStored hands the NZ store's stage (the chunk's UB copy) back after
// MTE3 has read it: to V, which stages the next rows there, and to FIX,
// which moves the next chunk there.
func (e *gemmSync) stageStored() {
	e.set(npu.PipeMTE3, npu.PipeV, gemmEvAcc)
	e.set(npu.PipeMTE3, npu.PipeFIX, gemmEvAcc)
}
