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
