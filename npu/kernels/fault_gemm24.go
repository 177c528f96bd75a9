package kernels

import (
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

// gemm24 faults: bugs of the meta decode in UB.
const (
	// FaultGEMM24MetaBitsSwapped: the decode takes the first index from
	// bits 2–3 and the second from bits 0–1, so each kept value multiplies
	// the other kept row of b.
	FaultGEMM24MetaBitsSwapped npu.Fault = "gemm24/meta-bits-swapped"
	// FaultGEMM24SecondIndexIgnored: the second kept index is never
	// decoded (its field is masked off with the wrong mask), so both
	// values of a group multiply the first kept row.
	FaultGEMM24SecondIndexIgnored npu.Fault = "gemm24/second-index-ignored"
	// FaultGEMM24GroupOffsetOffByOne: the group base offset 4·g is
	// computed for the previous group (g−1) from the second group of a
	// slice on.
	FaultGEMM24GroupOffsetOffByOne npu.Fault = "gemm24/group-offset-off-by-one"
	// FaultGEMM24SplitKLost: gemm's split-k-last-partial-lost in gemm24:
	// for K > GEMMSplitK the reduction of the per-panel partial sums stops
	// one short, losing the last K panel.
	FaultGEMM24SplitKLost npu.Fault = "gemm24/split-k-last-partial-lost"
	// FaultGEMM24SplitKPartialsLow: gemm's split-k-partials-in-out-dtype
	// in gemm24: for K > GEMMSplitK the running sum is rounded to the
	// 16-bit output dtype after every L1 panel, inside the any-order
	// bound.
	FaultGEMM24SplitKPartialsLow npu.Fault = "gemm24/split-k-partials-in-out-dtype"
	// FaultGEMM24MetaRewrittenInPlace: the meta reorder pass (2-bit fields
	// to the nibble layout a_meta is consumed in) writes its result back
	// over the input a_meta after the launch.
	FaultGEMM24MetaRewrittenInPlace npu.Fault = "gemm24/meta-rewritten-in-place"
	// FaultGEMM24NZLastRowDropped: gemm's nz-last-fractal-row-dropped in
	// gemm24's NZ store (format_out = FRACTAL_NZ): the rows of the last,
	// partial row fractal are never stored. Only an NZ out with M not a
	// multiple of 16 shows it.
	FaultGEMM24NZLastRowDropped npu.Fault = "gemm24/nz-last-fractal-row-dropped"
)

// GEMM24Faults is gemm24's fault catalogue.
var GEMM24Faults = []FaultInfo{
	{FaultGEMM24MetaBitsSwapped, "gemm24", "meta fields swapped: first index read from bits 2–3"},
	{FaultGEMM24SecondIndexIgnored, "gemm24", "second kept index ignored: both values multiply the first kept row"},
	{FaultGEMM24GroupOffsetOffByOne, "gemm24", "group offset off by one: group g decoded against base 4·(g−1)"},
	{FaultGEMM24SplitKLost, "gemm24", "split-K reduction loses the last K partial (K > 4096 only)"},
	{FaultGEMM24SplitKPartialsLow, "gemm24", "split-K partial sums kept in the 16-bit output dtype (K > 4096 only; inside the bound)"},
	{FaultGEMM24MetaRewrittenInPlace, "gemm24", "meta reordered in place in the input a_meta"},
	{FaultGEMM24NZLastRowDropped, "gemm24", "NZ out: the last partial row fractal never stored (M not a multiple of 16)"},
}

// gemm24Faults is gemm24's fault plan for one launch (GEMM24Kernel builds
// it from the launch's context), consulted by the meta decode through
// decodeGroup. The zero value is the correct kernel.
type gemm24Faults struct {
	metaBitsSwapped, secondIgnored, groupOffset bool
	splitKLost, splitKPartialsLow, metaInPlace  bool
	nzLastRowDropped                            bool
}

func newGEMM24Faults(fs npu.Faults) gemm24Faults {
	return gemm24Faults{
		metaBitsSwapped: fs.Has(FaultGEMM24MetaBitsSwapped),
		secondIgnored:   fs.Has(FaultGEMM24SecondIndexIgnored),
		groupOffset:     fs.Has(FaultGEMM24GroupOffsetOffByOne),

		splitKLost:        fs.Has(FaultGEMM24SplitKLost),
		splitKPartialsLow: fs.Has(FaultGEMM24SplitKPartialsLow),
		metaInPlace:       fs.Has(FaultGEMM24MetaRewrittenInPlace),
		nzLastRowDropped:  fs.Has(FaultGEMM24NZLastRowDropped),
	}
}

// decodeGroup turns meta byte b of group g of a slice into the two B-row
// indices relative to the slice's first k: 4·g + first, 4·g + second, with
// the fields swapped (meta-bits-swapped), the second replaced by the
// first (second-index-ignored) or the base taken from group g−1
// (group-offset-off-by-one).
func (f gemm24Faults) decodeGroup(b uint8, g int) (uint8, uint8) {
	first, second := b&3, b>>2&3
	if f.metaBitsSwapped {
		first, second = second, first
	}
	if f.secondIgnored {
		second = first
	}
	base := uint8(4 * g)
	if f.groupOffset && g > 0 {
		base -= 4
	}
	return base + first, base + second
}

// gemm is the part of gemm's fault plan gemm24 shares: the split-K hooks
// (skipsPanel, panelDone) of its panel loop, and the epilogue's (the NZ
// store's nzStoredRows).
func (f gemm24Faults) gemm() gemmFaults {
	return gemmFaults{splitKLost: f.splitKLost, splitKPartialsLow: f.splitKPartialsLow, nzLastRowDropped: f.nzLastRowDropped}
}

// afterLaunch runs on the host after the launch: under
// meta-rewritten-in-place it rewrites every meta byte of a_meta from the
// 2-bit fields (first | second<<2) to the nibble layout (first |
// second<<4). The outputs are computed already.
func (f gemm24Faults) afterLaunch(meta *tensor.Tensor) {
	if !f.metaInPlace {
		return
	}
	for i, b := range meta.U8() {
		meta.U8()[i] = b&3 | (b>>2&3)<<4
	}
}
