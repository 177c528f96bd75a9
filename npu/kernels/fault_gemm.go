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
)

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
}

// gemmFaults is gemm's fault plan for one launch: which of its catalogue
// faults are on, resolved once from the launch's context (GEMM builds it)
// and consulted through the hooks below, each called at the spot of the
// kernel where its real bug would sit. The zero value is the correct
// kernel: every hook returns what the kernel uses anyway.
type gemmFaults struct {
	fp16Acc, betaIgnored, alphaScalesC, bTransposed bool
	lastKDropped, scalesSwapped, paddingRowsStored  bool
	paddingLeaks                                    bool
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
	}
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
