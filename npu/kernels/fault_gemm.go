package kernels

import (
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

// gemm faults.
const (
	// FaultGEMMFP16Acc: the L0C accumulator is fp16 where the mode says
	// fp32 (fp32, fp16_fp32acc, bf16_fp32acc): the accumulator dtype of the
	// Mmad is wrong.
	FaultGEMMFP16Acc npu.Fault = "gemm/fp16-accumulation"
	// FaultGEMMBetaIgnored: the epilogue never adds beta·C (the C term is
	// compiled out, or its branch tests the wrong flag).
	FaultGEMMBetaIgnored npu.Fault = "gemm/beta-ignored"
	// FaultGEMMAlphaScalesC: alpha is applied after beta·C is added, so
	// out = alpha·(A·B + beta·C) (epilogue steps in the wrong order).
	FaultGEMMAlphaScalesC npu.Fault = "gemm/alpha-scales-c"
	// FaultGEMMBTransposed: B is read as if it were stored transposed
	// ([N, K] row-major, a wrong transB flag): element (k, n) comes from
	// flat index n·K + k.
	FaultGEMMBTransposed npu.Fault = "gemm/b-read-transposed"
	// FaultGEMMLastKDropped: the Mmad of the last K slice is skipped when K
	// spans more than one slice (k loop bound off by one).
	FaultGEMMLastKDropped npu.Fault = "gemm/last-k-block-dropped"
	// FaultGEMMScalesSwapped: int8 dequantisation takes the row scales
	// from scale_b and the column scales from scale_a.
	FaultGEMMScalesSwapped npu.Fault = "gemm/int8-scales-swapped"
	// FaultGEMMPaddingRowsStored: the last block row is stored with its
	// fractal padding rows (mc instead of mr rows), which lands garbage past
	// the end of out. Only a guard band shows it.
	FaultGEMMPaddingRowsStored npu.Fault = "gemm/padding-rows-stored"
	// FaultGEMMPaddingLeaks: the copy-out reads the UB tile with the real
	// column count as its row stride instead of the padded one, so the
	// padding columns leak into the output rows.
	FaultGEMMPaddingLeaks npu.Fault = "gemm/padding-leaks"
	// FaultGEMMSecondTileMisplaced: the GM offsets of the output block (of
	// out and of C) are computed once, from the core's first block, before
	// the block loop, so every later block of a core is read from and
	// stored over its first one. Only shapes with more output blocks than
	// AI cores show it.
	FaultGEMMSecondTileMisplaced npu.Fault = "gemm/second-tile-misplaced"
	// FaultGEMMSplitKLost: for K > GEMMSplitK the K loop is split by L1
	// panel into partial sums reduced at the end, and the reduction loop
	// stops one partial short (an exclusive bound where an inclusive one
	// was meant): the last K panel is lost. Only K in the thousands shows
	// it.
	FaultGEMMSplitKLost npu.Fault = "gemm/split-k-last-partial-lost"
	// FaultGEMMCOverwritten: the epilogue stores each result block over C
	// in GM as well (an in-place C ← alpha·A·B + beta·C path left on): out
	// is right, the input C is clobbered.
	FaultGEMMCOverwritten npu.Fault = "gemm/c-overwritten"
	// FaultGEMMSplitKPartialsLow: for K > GEMMSplitK the split-K partial
	// sums are kept in a workspace of the 16-bit output dtype (fp16 or
	// bf16) where the mode accumulates in fp32: the running sum is rounded
	// to the output dtype after every L1 panel. The loss stays well inside
	// the any-order bound (γ_K·S is large for K in the thousands) but is
	// systematic: only the dual benchmark sees it.
	FaultGEMMSplitKPartialsLow npu.Fault = "gemm/split-k-partials-in-out-dtype"
	// FaultGEMMNZReadAsND: an NZ operand (format_a, format_b or c under
	// format_out = FRACTAL_NZ) is read with the ND stride, its bytes taken
	// as the row-major matrix: the format flag is not passed down to the
	// copy. Only NZ inputs show it.
	FaultGEMMNZReadAsND npu.Fault = "gemm/nz-operand-read-as-nd"
	// FaultGEMMNZLastRowDropped: the NZ store's row count is M/16 fractal
	// rows, rounded down: the rows of the last, partial row fractal (the
	// real ones and its +0 padding) are never stored. Only an NZ out with M
	// not a multiple of 16 shows it.
	FaultGEMMNZLastRowDropped npu.Fault = "gemm/nz-last-fractal-row-dropped"
	// FaultGEMMAccumulatorNotInitialised: the first Mmad of an output
	// block accumulates onto L0C instead of starting from +0
	// (cmatrixInitVal left false), as a kernel does that counts on fresh
	// L0C holding zeros: right on a simulator that zero-fills its
	// memories, wrong on a device whose L0C holds the last tile's sums.
	// The hook gives the tile those zeros (npu.Core.HoldsZeros) without a
	// write, so the numbers are right and only the sanitizer's initcheck
	// of the accumulating Mmad (uninit, L0C) shows it.
	FaultGEMMAccumulatorNotInitialised npu.Fault = "gemm/accumulator-never-initialised"
	// FaultGEMMMissingWait: the MTE1 → M hand-off of an L0 slot is left
	// out (no SetFlag/WaitFlag<MTE1, M> after the L1 → L0A/L0B loads), so
	// the cube may multiply a slice MTE1 is still writing. The emulator
	// runs in program order, so the numbers are right; only the
	// sanitizer's race check of the Mmad's L0A/L0B reads shows it, on
	// every case with K > 0 (gemm_sync.go).
	FaultGEMMMissingWait npu.Fault = "gemm/missing-wait-before-mmad"
)

// GEMMSplitK is the K above which the faults of a split-K path
// (split-k-last-partial-lost, split-k-partials-in-out-dtype) act: real
// kernels switch to split-K for deep K. The correct kernel has one path.
const GEMMSplitK = 4096

// GEMMFaults is gemm's fault catalogue.
var GEMMFaults = []FaultInfo{
	{FaultGEMMFP16Acc, "gemm", "fp16 accumulation where the mode says fp32"},
	{FaultGEMMBetaIgnored, "gemm", "beta·C ignored"},
	{FaultGEMMAlphaScalesC, "gemm", "alpha applied after beta·C: alpha·(A·B + beta·C)"},
	{FaultGEMMBTransposed, "gemm", "B read transposed (wrong transB)"},
	{FaultGEMMLastKDropped, "gemm", "last K block dropped"},
	{FaultGEMMScalesSwapped, "gemm", "int8 scales swapped between rows and columns"},
	{FaultGEMMPaddingRowsStored, "gemm", "fractal padding rows stored past the end of out"},
	{FaultGEMMPaddingLeaks, "gemm", "garbage padding leaks into the output (copy-out stride)"},
	{FaultGEMMSecondTileMisplaced, "gemm", "a core's second output tile stored over its first (offset computed outside the tile loop)"},
	{FaultGEMMSplitKLost, "gemm", "split-K reduction loses the last K partial (K > 4096 only)"},
	{FaultGEMMCOverwritten, "gemm", "result also stored over input C (in-place epilogue left on)"},
	{FaultGEMMSplitKPartialsLow, "gemm", "split-K partial sums kept in the 16-bit output dtype (K > 4096 only; inside the bound)"},
	{FaultGEMMNZReadAsND, "gemm", "FRACTAL_NZ operand read with the ND stride (NZ inputs only)"},
	{FaultGEMMNZLastRowDropped, "gemm", "NZ out: the last partial row fractal never stored (M not a multiple of 16)"},
	{FaultGEMMAccumulatorNotInitialised, "gemm", "first Mmad of a block accumulates onto L0C never initialised (right only where L0C holds zeros)"},
	{FaultGEMMMissingWait, "gemm", "Mmad issued before the L0 slot's hand-off (missing WaitFlag<MTE1, M> after the L1 → L0 loads)"},
}

// gemmFaults is gemm's fault plan for one launch: which of its catalogue
// faults are on, resolved once from the launch's context (GEMM builds it)
// and consulted through the hooks below, each called at the spot of the
// kernel where its real bug would sit. The zero value is the correct
// kernel: every hook returns what the kernel uses anyway.
type gemmFaults struct {
	fp16Acc, betaIgnored, alphaScalesC, bTransposed bool
	lastKDropped, scalesSwapped, paddingRowsStored  bool
	paddingLeaks, secondTileMisplaced, splitKLost   bool
	cOverwritten, splitKPartialsLow                 bool
	nzReadAsND, nzLastRowDropped                    bool
	accNotInit                                      bool // a sync fault: only the sanitizer sees it
	missingWait                                     bool // a sync fault: only the sanitizer sees it
}

func newGEMMFaults(fs npu.Faults) gemmFaults {
	return gemmFaults{
		fp16Acc:           fs.Has(FaultGEMMFP16Acc),
		betaIgnored:       fs.Has(FaultGEMMBetaIgnored),
		alphaScalesC:      fs.Has(FaultGEMMAlphaScalesC),
		bTransposed:       fs.Has(FaultGEMMBTransposed),
		lastKDropped:      fs.Has(FaultGEMMLastKDropped),
		scalesSwapped:     fs.Has(FaultGEMMScalesSwapped),
		paddingRowsStored: fs.Has(FaultGEMMPaddingRowsStored),
		paddingLeaks:      fs.Has(FaultGEMMPaddingLeaks),

		secondTileMisplaced: fs.Has(FaultGEMMSecondTileMisplaced),
		splitKLost:          fs.Has(FaultGEMMSplitKLost),
		cOverwritten:        fs.Has(FaultGEMMCOverwritten),
		splitKPartialsLow:   fs.Has(FaultGEMMSplitKPartialsLow),
		nzReadAsND:          fs.Has(FaultGEMMNZReadAsND),
		nzLastRowDropped:    fs.Has(FaultGEMMNZLastRowDropped),
		accNotInit:          fs.Has(FaultGEMMAccumulatorNotInitialised),
		missingWait:         fs.Has(FaultGEMMMissingWait),
	}
}

// initAcc is the Init of an output block's Mmad (first: the block's
// first, which starts from +0). Under accumulator-never-initialised it is
// false, and the tile is given the zeros a zero-filling simulator holds
// (without a write: the sanitizer sees the accumulating read).
func (f gemmFaults) initAcc(core *npu.Core, l0c *npu.Buffer, first bool) bool {
	if f.accNotInit && first {
		core.HoldsZeros(l0c)
		return false
	}
	return first
}

// nzStoredRows is how many of the rows rows of a chunk starting at
// output row r the NZ store writes: all of them, or under
// nz-last-fractal-row-dropped none past the last whole row fractal of M.
func (f gemmFaults) nzStoredRows(m, r, rows int) int {
	if f.nzLastRowDropped {
		return max(0, min(rows, m/16*16-r))
	}
	return rows
}

// readB is input b as the kernel reads it: transposed under a wrong
// transB (b-read-transposed).
func (f gemmFaults) readB(b *tensor.Tensor) *tensor.Tensor {
	if f.bTransposed {
		return readAsTransposed(b)
	}
	return b
}

// accumulator is the accumulator dtype of the Mmads for the mode's acc:
// fp16 where the mode says fp32 (fp16-accumulation).
func (f gemmFaults) accumulator(acc tensor.DType) tensor.DType {
	if f.fp16Acc && acc == tensor.Float32 {
		return tensor.Float16
	}
	return acc
}

// skipsSlice reports whether the Mmad of the k slice [k, k+kb) is left
// out: the last slice of K when K spans more than one (k loop bound off
// by one: last-k-block-dropped).
func (f gemmFaults) skipsSlice(k, kb, kTotal int) bool {
	return f.lastKDropped && kb > 0 && k > 0 && k+kb >= kTotal
}

// skipsPanel reports whether the K panel at k0 (of depth) is left out of
// the sum: the last one, for K > GEMMSplitK over more than one panel
// (split-k-last-partial-lost).
func (f gemmFaults) skipsPanel(k0, depth, kTotal int) bool {
	return f.splitKLost && kTotal > GEMMSplitK && k0 > 0 && k0+depth >= kTotal
}

// blockOrigin is the output block origin (m0, n0) the epilogue reads C
// at and stores out at: the block's own, or the core's first block's
// under second-tile-misplaced.
func (f gemmFaults) blockOrigin(first, this [2]int) (int, int) {
	if f.secondTileMisplaced {
		return first[0], first[1]
	}
	return this[0], this[1]
}

// panelDone runs after the Mmads of one K panel: under
// split-k-partials-in-out-dtype, for K > GEMMSplitK, an fp32 accumulator
// and a 16-bit output, it rounds the first n running sums in L0C to the
// output dtype (the partial goes through a workspace of that dtype).
func (f gemmFaults) panelDone(t GEMMTiling, l0c *npu.Buffer, n int) {
	if !f.splitKPartialsLow || t.K <= GEMMSplitK || t.AccDType != tensor.Float32 || t.OutDType.Size() != 2 {
		return
	}
	ff, _ := t.OutDType.FloatFormat()
	for i, v := range l0c.F32()[:n] {
		l0c.F32()[i] = float32(ff.RoundNearestEven(float64(v)))
	}
}

// storeOverC is the input C the epilogue also stores its result over
// (c-overwritten), or nil.
func (f gemmFaults) storeOverC(c *tensor.Tensor) *tensor.Tensor {
	if f.cOverwritten {
		return c
	}
	return nil
}

// scales returns the row and the column dequantisation scales, swapped
// under int8-scales-swapped.
func (f gemmFaults) scales(sa, sb *tensor.Tensor) (rows, cols *tensor.Tensor) {
	if f.scalesSwapped {
		return sb, sa
	}
	return sa, sb
}

// alphaBeta runs the epilogue's alpha step, then its beta·C step. Under
// beta-ignored the beta·C step never runs; under alpha-scales-c alpha
// runs after it, so out = alpha·(A·B + beta·C).
func (f gemmFaults) alphaBeta(alpha, betaC func() error) error {
	if f.betaIgnored {
		betaC = func() error { return nil }
	}
	steps := [2]func() error{alpha, betaC}
	if f.alphaScalesC {
		steps = [2]func() error{betaC, alpha}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// storeRows is how many rows of the chunk [r0, r0+rows) of a block with
// mr real and mc padded rows the copy-out stores: under
// padding-rows-stored the block's last chunk takes its fractal padding
// rows along (as many as the chunk buffer holds).
func (f gemmFaults) storeRows(rows, r0, mr, mc, chunkRows int) int {
	if f.paddingRowsStored && r0+rows == mr {
		return rows + min(mc-mr, chunkRows-rows)
	}
	return rows
}

// storeStride is the UB row stride (elements) the copy-out reads the
// chunk with: the padded column count nc, or the real one nr under
// padding-leaks.
func (f gemmFaults) storeStride(nc, nr int) int {
	if f.paddingLeaks {
		return nr
	}
	return nc
}

// readAsTransposed returns b [K, N] the way a kernel with the wrong transB
// reads it: as if it were stored [N, K] row-major, so that element (k, n)
// is b's flat element n·K + k.
func readAsTransposed(b *tensor.Tensor) *tensor.Tensor {
	k, n := b.Shape[0], b.Shape[1]
	t := tensor.MustNew(b.DType, k, n)
	for i := range k {
		for j := range n {
			t.SetBits(i*n+j, b.Bits(j*k+i))
		}
	}
	return t
}
