package kernels

import (
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// decode_attention faults.
const (
	// FaultDecodeAttentionReadsPastSeqLen: the context loop runs to
	// seq_len inclusive (an off-by-one bound), reading the unwritten
	// position seq_len.
	FaultDecodeAttentionReadsPastSeqLen npu.Fault = "decode_attention/reads-past-seq-len"
	// FaultDecodeAttentionGQAHeadModulo: query head h reads kv head h mod
	// Hkv instead of h / (Hq/Hkv).
	FaultDecodeAttentionGQAHeadModulo npu.Fault = "decode_attention/gqa-head-h-mod-hkv"
	// FaultDecodeAttentionSoftmaxWithoutMaxSubtraction: softmax
	// exponentiates the raw scores, without subtracting the maximum
	// (overflows for large scores).
	FaultDecodeAttentionSoftmaxWithoutMaxSubtraction npu.Fault = "decode_attention/softmax-without-max-subtraction"
	// FaultDecodeAttentionInt8ScaleDropped: int8 K codes are used without
	// their scale.
	FaultDecodeAttentionInt8ScaleDropped npu.Fault = "decode_attention/int8-scale-dropped-on-dequant"
	// FaultDecodeAttentionVScaledByKScale: int8 V is dequantised with the
	// K scale.
	FaultDecodeAttentionVScaledByKScale npu.Fault = "decode_attention/v-scaled-by-k-scale"
	// FaultDecodeAttentionPageIndexUint16: the physical block index is
	// held in 16 bits.
	FaultDecodeAttentionPageIndexUint16 npu.Fault = "decode_attention/page-index-truncated-past-2^16"
	// FaultDecodeAttentionCombineWithoutRescale: the flash-decoding
	// combine adds the partitions' partial sums without rescaling them by
	// exp(m_p − M).
	FaultDecodeAttentionCombineWithoutRescale npu.Fault = "decode_attention/combine-without-rescale"
	// FaultDecodeAttentionQScaledInPlace: q is pre-scaled by 1/√D in
	// place: the scaled rows are stored back over the input q in GM (the
	// attention itself uses the right scores; q is clobbered for every
	// later reader).
	FaultDecodeAttentionQScaledInPlace npu.Fault = "decode_attention/q-scaled-in-place"
	// FaultDecodeAttentionCombineWithoutSyncAll: the flash-decoding
	// combine reads the partitions' records with no SyncAll after the
	// pieces that wrote them: on the device a combining core may read a
	// record another core has not stored yet. The emulator runs the
	// barrier's host wait only (npu.Core.SyncAllSkipped: the blocks still
	// meet on the host, so the combine reads every record, the one
	// interleaving a sequential emulator runs), and the modelled device
	// none of its order: right numbers, deterministic, and only the
	// sanitizer's cross-core check (xcore-race) shows it. Only a case that
	// splits an item over cores has a combine.
	FaultDecodeAttentionCombineWithoutSyncAll npu.Fault = "decode_attention/combine-without-syncall"
	// FaultDecodeAttentionCoreSkipsSyncAll: a core with no combine unit
	// returns before the SyncAll (an early `if (nothing to combine)
	// return;` above the barrier): the device hangs, the other cores
	// waiting forever. The emulator releases them when the core ends
	// (it stored its records first, so the numbers are right) and reports
	// the deadlock naming the core. Only a split case with a core that
	// combines nothing shows it.
	FaultDecodeAttentionCoreSkipsSyncAll npu.Fault = "decode_attention/core-skips-syncall"
)

// DecodeAttentionFaults is decode_attention's fault catalogue.
var DecodeAttentionFaults = []FaultInfo{
	{FaultDecodeAttentionReadsPastSeqLen, "decode_attention", "context loop reads position seq_len (past the written tail)"},
	{FaultDecodeAttentionGQAHeadModulo, "decode_attention", "GQA query head mapped to kv head h mod Hkv instead of h / g"},
	{FaultDecodeAttentionSoftmaxWithoutMaxSubtraction, "decode_attention", "softmax without max subtraction"},
	{FaultDecodeAttentionInt8ScaleDropped, "decode_attention", "int8 K scale dropped on dequantisation"},
	{FaultDecodeAttentionVScaledByKScale, "decode_attention", "int8 V dequantised with the K scale"},
	{FaultDecodeAttentionPageIndexUint16, "decode_attention", "page index truncated to 16 bits past 2^16 blocks"},
	{FaultDecodeAttentionCombineWithoutRescale, "decode_attention", "flash-decoding partitions combined without exp(m_p − M) rescale"},
	{FaultDecodeAttentionQScaledInPlace, "decode_attention", "q pre-scaled by 1/√D in place in its input buffer"},
	{FaultDecodeAttentionCombineWithoutSyncAll, "decode_attention", "flash-decoding combine reads other cores' records with no SyncAll after the pieces"},
	{FaultDecodeAttentionCoreSkipsSyncAll, "decode_attention", "a core with nothing to combine returns before SyncAll (the others wait forever)"},
}

// decodeAttentionFaults is decode_attention's fault plan for one launch:
// which of its catalogue faults are on, resolved once from the launch's
// context (DecodeAttentionKernel builds it) and consulted through the
// hooks below, each called at the spot of the kernel where its real bug
// would sit. The zero value is the correct kernel: every hook returns what
// the kernel uses anyway.
type decodeAttentionFaults struct {
	readsPastLen, gqaMod, noMaxSub, scaleDropped bool
	vByKScale, pageIndexU16, combineNoRescale    bool
	qScaledInPlace                               bool
	// The synchronisation faults, which only the sanitizer sees.
	combineNoBarrier, skipsBarrier bool
}

func newDecodeAttentionFaults(fs npu.Faults) decodeAttentionFaults {
	return decodeAttentionFaults{
		readsPastLen:     fs.Has(FaultDecodeAttentionReadsPastSeqLen),
		gqaMod:           fs.Has(FaultDecodeAttentionGQAHeadModulo),
		noMaxSub:         fs.Has(FaultDecodeAttentionSoftmaxWithoutMaxSubtraction),
		scaleDropped:     fs.Has(FaultDecodeAttentionInt8ScaleDropped),
		vByKScale:        fs.Has(FaultDecodeAttentionVScaledByKScale),
		pageIndexU16:     fs.Has(FaultDecodeAttentionPageIndexUint16),
		combineNoRescale: fs.Has(FaultDecodeAttentionCombineWithoutRescale),
		qScaledInPlace:   fs.Has(FaultDecodeAttentionQScaledInPlace),
		combineNoBarrier: fs.Has(FaultDecodeAttentionCombineWithoutSyncAll),
		skipsBarrier:     fs.Has(FaultDecodeAttentionCoreSkipsSyncAll),
	}
}

// barrier is the SyncAll between a split launch's pieces and its combine
// on a core with units combine units: the barrier's host wait only under
// combine-without-syncall, none on a core with nothing to combine under
// core-skips-syncall (it then ends, its combine being empty).
func (f decodeAttentionFaults) barrier(c *npu.Core, units int) error {
	switch {
	case f.combineNoBarrier:
		return c.SyncAllSkipped()
	case f.skipsBarrier && units == 0:
		return nil
	}
	return c.SyncAll()
}

// daHeads is one group of query heads [q0, q0+nq) sharing kv head kvh.
type daHeads struct{ kvh, q0, nq int }

// headGroups maps the hq query heads onto the hkv kv heads: g = hq/hkv
// consecutive query heads per kv head (h / g), or under gqa-head-h-mod-hkv
// each query head h on its own, reading kv head h mod hkv.
func (f decodeAttentionFaults) headGroups(hq, hkv int) []daHeads {
	var gs []daHeads
	if f.gqaMod {
		for h := range hq {
			gs = append(gs, daHeads{kvh: h % hkv, q0: h, nq: 1})
		}
		return gs
	}
	grp := hq / hkv
	for h := range hkv {
		gs = append(gs, daHeads{kvh: h, q0: h * grp, nq: grp})
	}
	return gs
}

// row is the cache row of position pos of sequence s (−1: unallocated),
// its physical block index wrapped at 2^16 under
// page-index-truncated-past-2^16.
func (f decodeAttentionFaults) row(g ops.KVGeom, bt []int32, s, pos int) int {
	if f.pageIndexU16 && g.Paged {
		return int(uint16(bt[s*g.MB+pos/g.BS]))*g.BS + pos%g.BS
	}
	return g.Row(bt, s, pos)
}

// contextLen is how many positions the context loop of sequence s (n
// written) runs over: n, or n+1 under reads-past-seq-len when position n
// is in the cache.
func (f decodeAttentionFaults) contextLen(g ops.KVGeom, bt []int32, s, n int) int {
	if f.readsPastLen && s >= 0 && n > 0 && n < g.L && f.row(g, bt, s, n) >= 0 {
		return n + 1
	}
	return n
}

// scaleSource is the GM tensor the dequantisation scales of V are loaded
// from: v_scale, or k_scale under v-scaled-by-k-scale.
func (f decodeAttentionFaults) scaleSource(in map[string]*tensor.Tensor, scale string) *tensor.Tensor {
	if f.vByKScale && scale == "v_scale" {
		return in["k_scale"]
	}
	return in[scale]
}

// dequantScale is the scale a loaded row's int8 codes are multiplied by:
// its scale s, or 1 for K under int8-scale-dropped-on-dequant.
func (f decodeAttentionFaults) dequantScale(isK bool, s float32) float32 {
	if f.scaleDropped && isK {
		return 1
	}
	return s
}

// maxSubtracted is the maximum the softmax subtracts before exp (a
// partition's m_p or the running M): 0 under
// softmax-without-max-subtraction.
func (f decodeAttentionFaults) maxSubtracted(m float32) float32 {
	if f.noMaxSub {
		return 0
	}
	return m
}

// rescale is the combine's pair of factors exp(M − M′) for the running
// sums and exp(m_p − M′) for the partition's: 1 and 1 under
// combine-without-rescale.
func (f decodeAttentionFaults) rescale(a, b float32) (float32, float32) {
	if f.combineNoRescale {
		return 1, 1
	}
	return a, b
}

// qInPlace runs after the copy-in of nq·d query values (qf, fp32; qb, the
// fp16 UB buffer they came from): under q-scaled-in-place it scales them
// by sigma into qb and stores qb back over q at qoff. The kernel goes on
// from qf, so only the input is wrong.
func (f decodeAttentionFaults) qInPlace(c *npu.Core, q *tensor.Tensor, qoff int, qb *npu.Buffer, qf []float32, sigma float32) error {
	if !f.qScaledInPlace {
		return nil
	}
	h := qb.F16()
	for i, v := range qf {
		h[i] = float16.Fromfloat32(v * sigma)
	}
	return c.DataCopyPadOut(q, qoff, qb, len(qf))
}
