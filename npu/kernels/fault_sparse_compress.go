package kernels

import (
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// sparse_compress faults.
const (
	// FaultSparseCompressTiesHigh: equal scores go to the higher index.
	FaultSparseCompressTiesHigh npu.Fault = "sparse_compress/ties-to-higher-index"
	// FaultSparseCompressSinkDropped: one sink too few is reserved when
	// keep < L.
	FaultSparseCompressSinkDropped npu.Fault = "sparse_compress/sink-dropped"
	// FaultSparseCompressAbsNotSquare: importance from |k| instead of k².
	FaultSparseCompressAbsNotSquare npu.Fault = "sparse_compress/abs-not-square"
	// FaultSparseCompressFP16Accumulation: the sum over D is accumulated
	// in fp16.
	FaultSparseCompressFP16Accumulation npu.Fault = "sparse_compress/fp16-accumulation"
	// FaultSparseCompressWrongHead: k rows are copied from the next head.
	FaultSparseCompressWrongHead npu.Fault = "sparse_compress/row-from-wrong-head"
	// FaultSparseCompressMaskOffByOne: the mask marks token i+1 for kept
	// token i.
	FaultSparseCompressMaskOffByOne npu.Fault = "sparse_compress/mask-off-by-one"
	// FaultSparseCompressNaNFirst: a NaN score ranks above every number.
	FaultSparseCompressNaNFirst npu.Fault = "sparse_compress/nan-ranked-first"
	// FaultSparseCompressSecondHeadMisplaced: the output offsets of a head
	// are computed once, from the core's first head, before the head loop,
	// so every later head of a core is stored over its first one. Only
	// more heads than vector cores show it.
	FaultSparseCompressSecondHeadMisplaced npu.Fault = "sparse_compress/second-head-misplaced"
	// FaultSparseCompressKCompactedInPlace: the kept k rows are also
	// compacted in place, each stored over row t of its head in the input
	// k.
	FaultSparseCompressKCompactedInPlace npu.Fault = "sparse_compress/k-compacted-in-place"
	// FaultSparseCompressMissingScalarWait: the scalar unit reads the
	// selection's result (the kept indices in UB; on the chunked path the
	// compares' results and the radix scan's cut) without the
	// SetFlag/WaitFlag<V, S> after the vector instructions that write it:
	// on the device it may read the indices of the previous head, or
	// garbage, and copy those rows. The emulator computes in program
	// order, so the bits are right and only the sanitizer (a RAW on pipe
	// S) shows it.
	FaultSparseCompressMissingScalarWait npu.Fault = "sparse_compress/missing-wait-before-scalar-read"
)

// SparseCompressFaults is sparse_compress's fault catalogue.
var SparseCompressFaults = []FaultInfo{
	{FaultSparseCompressTiesHigh, "sparse_compress", "ties of importance resolved to the higher index"},
	{FaultSparseCompressSinkDropped, "sparse_compress", "a sink dropped when keep < L"},
	{FaultSparseCompressAbsNotSquare, "sparse_compress", "importance from |k| instead of k²"},
	{FaultSparseCompressFP16Accumulation, "sparse_compress", "importance accumulated in fp16"},
	{FaultSparseCompressWrongHead, "sparse_compress", "k row copied from the wrong head"},
	{FaultSparseCompressMaskOffByOne, "sparse_compress", "mask off by one"},
	{FaultSparseCompressNaNFirst, "sparse_compress", "NaN scores ranked first"},
	{FaultSparseCompressSecondHeadMisplaced, "sparse_compress", "a core's second head stored over its first (offset computed outside the head loop)"},
	{FaultSparseCompressKCompactedInPlace, "sparse_compress", "kept k rows compacted in place in the input k"},
	{FaultSparseCompressMissingScalarWait, "sparse_compress", "kept indices read by the scalar (GetValue) before the selection's V → S event (missing WaitFlag<V, S>)"},
}

// sparseCompressFaults is sparse_compress's fault plan for one launch
// (SparseCompressKernel builds it from the launch's context), consulted
// through the hooks below at the spot of each bug. The zero value is the
// correct kernel.
type sparseCompressFaults struct {
	tiesHigh, sinkDropped, absNotSquare, fp16Accum bool
	wrongHead, maskOffByOne, nanFirst              bool
	secondHeadMisplaced, kInPlace                  bool
	noScalarWait                                   bool
}

func newSparseCompressFaults(fs npu.Faults) sparseCompressFaults {
	return sparseCompressFaults{
		tiesHigh:     fs.Has(FaultSparseCompressTiesHigh),
		sinkDropped:  fs.Has(FaultSparseCompressSinkDropped),
		absNotSquare: fs.Has(FaultSparseCompressAbsNotSquare),
		fp16Accum:    fs.Has(FaultSparseCompressFP16Accumulation),
		wrongHead:    fs.Has(FaultSparseCompressWrongHead),
		maskOffByOne: fs.Has(FaultSparseCompressMaskOffByOne),
		nanFirst:     fs.Has(FaultSparseCompressNaNFirst),

		secondHeadMisplaced: fs.Has(FaultSparseCompressSecondHeadMisplaced),
		kInPlace:            fs.Has(FaultSparseCompressKCompactedInPlace),
		noScalarWait:        fs.Has(FaultSparseCompressMissingScalarWait),
	}
}

// square is the per-element term of the importance: v², or |v| under
// abs-not-square.
func (f sparseCompressFaults) square(v float32) float32 {
	if f.absNotSquare {
		return float32(math.Abs(float64(v)))
	}
	return v * v
}

// fp16Sum reports whether the sum over D runs in an fp16 accumulator
// (fp16-accumulation), and returns that sum of xs when it does.
func (f sparseCompressFaults) fp16Sum(xs []float32) (float32, bool) {
	if !f.fp16Accum {
		return 0, false
	}
	return f.fp16SumFrom(0, xs), true
}

// fp16SumFrom continues an fp16 accumulator at s over xs: fp16Sum of a
// row streamed in pieces.
func (f sparseCompressFaults) fp16SumFrom(s float32, xs []float32) float32 {
	for _, x := range xs {
		s = float16.Fromfloat32(s + x).Float32()
	}
	return s
}

// reservedSinks is how many leading tokens the selection reserves: s, or
// one fewer when keep < L under sink-dropped.
func (f sparseCompressFaults) reservedSinks(s, keep, l int) int {
	if f.sinkDropped && keep < l && s > 0 {
		return s - 1
	}
	return s
}

// beats is the selection's ranking of token i (score si) against j: the
// larger score first, a NaN below every number, equal scores (±0 alike)
// and NaNs among themselves to the lower index. Under nan-ranked-first a
// NaN ranks above every number instead, and under ties-to-higher-index
// equal numbers go to the higher index; NaNs among themselves stay with
// the lower index under both, as the chunked path's radix keys order them
// (selectKey, tieSkip).
func (f sparseCompressFaults) beats(si float32, i int, sj float32, j int) bool {
	iNaN, jNaN := si != si, sj != sj
	switch {
	case iNaN && jNaN:
		return i < j
	case iNaN || jNaN:
		return iNaN == f.nanFirst
	case si == sj:
		return (i < j) != f.tiesHigh
	}
	return si > sj
}

// kSourceHead is the head whose k rows the copy of head hh reads: the
// next head under row-from-wrong-head.
func (f sparseCompressFaults) kSourceHead(hh, h int) int {
	if f.wrongHead && h > 1 {
		return (hh + 1) % h
	}
	return hh
}

// maskIndex is the mask position marked for kept token i: i+1 under
// mask-off-by-one.
func (f sparseCompressFaults) maskIndex(i, l int) int {
	if f.maskOffByOne && i+1 < l {
		return i + 1
	}
	return i
}

// outHead is the head whose output rows head hh is stored at: hh, or the
// core's first head under second-head-misplaced.
func (f sparseCompressFaults) outHead(hh, first int) int {
	if f.secondHeadMisplaced {
		return first
	}
	return hh
}

// compactK runs after head hh's outputs are stored (at output head oh):
// under k-compacted-in-place it stores the head's keep kept k rows (rows
// of d, from k_out through the UB row buffer) over the first keep rows of
// head hh in the input k (l rows a head). The outputs are complete, so
// only the input is wrong, on either selection path alike.
func (f sparseCompressFaults) compactK(c *npu.Core, k, kOut *tensor.Tensor, row *npu.Buffer, piece, hh, oh, l, keep, d int) error {
	if !f.kInPlace {
		return nil
	}
	for t := range keep {
		if err := copyRow(c, row, piece, kOut, (oh*keep+t)*d, k, (hh*l+t)*d, d); err != nil {
			return err
		}
	}
	return nil
}

// selectKey is the chunked selection's radix key of a score (the fp32
// bits mapped so that unsigned order is numeric order, ±0 alike): a larger
// key ranks first, equal keys are equal scores. A NaN takes 0, below every
// number (whose keys are ≥ 0x007FFFFF), or 0xFFFFFFFF, above every number
// (≤ 0xFF800000), under nan-ranked-first: beats' order, key by key.
func (f sparseCompressFaults) selectKey(s float32) uint32 {
	if s != s {
		if f.nanFirst {
			return math.MaxUint32
		}
		return 0
	}
	if s == 0 {
		s = 0 // −0 ranks as +0
	}
	b := math.Float32bits(s)
	if b&(1<<31) != 0 {
		return ^b
	}
	return b | 1<<31
}

// tieSkip is how many of the eq tokens whose key equals the cut the
// chunked selection passes over, in index order, before it takes take of
// them: none (ties to the lower index), or eq − take (to the higher
// index) under ties-to-higher-index, which, like beats, leaves NaNs among
// themselves to the lower index.
func (f sparseCompressFaults) tieSkip(eq, take int, nanCut bool) int {
	if f.tiesHigh && !nanCut {
		return eq - take
	}
	return 0
}
