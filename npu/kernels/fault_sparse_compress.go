package kernels

import "github.com/npuverify/npuverify/npu"

// sparse_compress faults.
const (
	// FaultSCTiesHigh: equal scores go to the higher index.
	FaultSCTiesHigh npu.Fault = "sparse_compress/ties-to-higher-index"
	// FaultSCSinkDropped: one sink too few is reserved when keep < L.
	FaultSCSinkDropped npu.Fault = "sparse_compress/sink-dropped"
	// FaultSCAbsNotSquare: importance from |k| instead of k².
	FaultSCAbsNotSquare npu.Fault = "sparse_compress/abs-not-square"
	// FaultSCFP16Accum: the sum over D is accumulated in fp16.
	FaultSCFP16Accum npu.Fault = "sparse_compress/fp16-accumulation"
	// FaultSCWrongHead: k rows are copied from the next head.
	FaultSCWrongHead npu.Fault = "sparse_compress/row-from-wrong-head"
	// FaultSCMaskOffByOne: the mask marks token i+1 for kept token i.
	FaultSCMaskOffByOne npu.Fault = "sparse_compress/mask-off-by-one"
	// FaultSCNaNFirst: a NaN score ranks above every number.
	FaultSCNaNFirst npu.Fault = "sparse_compress/nan-ranked-first"
)

// SparseCompressFaults is sparse_compress's fault catalogue.
var SparseCompressFaults = []FaultInfo{
	{FaultSCTiesHigh, "sparse_compress", "ties of importance resolved to the higher index"},
	{FaultSCSinkDropped, "sparse_compress", "a sink dropped when keep < L"},
	{FaultSCAbsNotSquare, "sparse_compress", "importance from |k| instead of k²"},
	{FaultSCFP16Accum, "sparse_compress", "importance accumulated in fp16"},
	{FaultSCWrongHead, "sparse_compress", "k row copied from the wrong head"},
	{FaultSCMaskOffByOne, "sparse_compress", "mask off by one"},
	{FaultSCNaNFirst, "sparse_compress", "NaN scores ranked first"},
}
