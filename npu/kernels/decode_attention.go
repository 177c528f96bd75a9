package kernels

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// decode_attention: one work item per (batch entry, kv head) computes the
// attention of the Hq/Hkv query heads that share the kv head (GQA), over
// the sequence's context split into partitions of PartitionLen positions,
// each small enough that its K and V tiles fit in UB. Per partition: the
// K rows (DataCopy2D of every run of consecutive cache rows: a whole
// partition for contiguous caches, a block's share for paged ones) feed
// the cube's q·Kᵀ (fp32 accumulator); the vector unit scales, takes the
// partition maximum m_p, exp(s − m_p), their sum Z_p and, with the V rows,
// N_p = Σ e_j·v_j. Partitions are combined flash-decoding style: with the
// running maximum M, Z ← Z·exp(M − M') + Z_p·exp(m_p − M') and likewise N,
// which is exact in exact arithmetic and never overflows. out = RN16(N/Z).
//
// A partition's (m_p, Z_p, N_p) depends on its own positions only, and the
// combine is a left fold over the partitions in position order; so the
// partitions of one item may be computed on different cores (flash-
// decoding's split over the context, the seed's Cluster pattern) and the
// output bits stay those of one core folding them in turn, provided the
// fold runs in the same order with the same arithmetic. A split item's
// first piece folds its partitions and writes the running (M, Z, N) to a
// GM workspace; every later piece writes each partition's (m_p, Z_p, N_p);
// after SyncAll (a cooperative launch) the cores fold them in order, a
// column range of one head each, and store the output. Host side, the pieces are spread over the cores by LPT
// (longest processing time first, on the cost model's estimate of each
// piece), with the core count and the split chosen for the least
// estimated makespan (decodeAttentionPlan); or statically (whole item i to
// core i mod blockDim) as an option, the baseline LPT is measured against.
//
// A head size whose query row, K row and output row do not fit the UB
// together (D past ~32k for fp16) is tiled over D: the q·k accumulators
// carry over the D chunks (one fp32 accumulator per score, i ascending,
// as untiled), and N_p, the combine and the output stream chunk by chunk;
// every sum keeps its order, so the bits are those of the untiled layout.

// The core schedules of decode_attention.
const (
	ScheduleLPT    = "lpt"
	ScheduleStatic = "static"
)

// DecodeAttentionOptions overrides the tiling; zero fields take the
// default.
type DecodeAttentionOptions struct {
	BlockDim     int    // cores (default: the least estimated makespan, up to min(AI cores, vector cores))
	PartitionLen int    // context positions per partition (default from UB)
	Schedule     string // ScheduleLPT (default) or ScheduleStatic
	// BufferNum is the K/V tile buffers and the query buffers, 1 or 2
	// (the default, where the UB holds two): single-buffered, a tile's
	// copy in waits for the reads of the tile before and a piece's query
	// for the store of the piece before, slower and just as correct.
	BufferNum int
}

// daItem is one work item: query heads [q0, q0+nq) of batch entry b over
// kv head kvh of sequence seq, n positions (the context loop's length).
// parts is its partition count; a split item (ws ≥ 0) has its first
// piece ending at partition first and its workspace records at float
// offset ws, nq·(D+2) floats each (record 0 the first piece's running
// state, record k−first+1 partition k's partial).
type daItem struct {
	b, seq, kvh, q0, nq, n int
	parts, first, ws       int
}

// split reports whether the item's partitions are computed by several
// pieces and combined after the barrier.
func (it daItem) split() bool { return it.ws >= 0 }

// daPiece is partitions [k0, k1) of item item: a phase-1 unit of work.
type daPiece struct{ item, k0, k1 int }

// daUnit is a phase-2 unit of work: columns [c0, c1) of query head h
// (of the item's nq) of split item item. The fold of N is element-wise
// and that of M and Z cheap, so a long context's combine is spread over
// cores by columns, each core folding the scalars itself.
type daUnit struct{ item, h, c0, c1 int }

// DecodeAttentionTiling is the host-side tiling.
type DecodeAttentionTiling struct {
	BlockDim     int
	PartitionLen int
	Schedule     string
	// DChunk is the head-size columns one pass over a K or V tile holds:
	// D, unless D is tiled.
	DChunk  int
	items   []daItem
	pieces  []daPiece
	cores   [][]int // piece indices per core (phase 1)
	units   []daUnit
	combine [][]int // combine unit indices per core (phase 2, after the barrier)
	wsLen   int     // workspace floats
	rbBytes int     // UB staging of records in phase 1 (0: no item is split)
	heads   int     // query heads of the largest item (the UB's query buffer)
	// pingPong: two K/V tile and scales buffers, the next tile's copy in
	// under this one's cast and cube product.
	pingPong bool
	// qPingPong: two query buffers, the next piece's query (and so its
	// K/V tiles, which MTE2 copies after it) loaded while this piece
	// computes and stores its output, which is staged in its own.
	qPingPong bool
}

// DecodePartitionLen is the default partition: the double-buffered K and V
// tiles (2×2 buffers of P·D fp16) take at most half of UB, P a multiple of
// 16.
func DecodePartitionLen(prof npu.Profile, d int) int {
	p := prof.UBBytes / 2 / (4 * d * 2) / 16 * 16
	return max(p, 16)
}

// daUBBytes is what one core's UB holds for partitions of p positions
// and grp query heads of head size d (esz bytes a cache element): the
// query heads, the K or V tile, its int8 scales and the output row, each
// rounded up to the UB alignment (newDACore allocates exactly these).
func daUBBytes(prof npu.Profile, d, esz, p, grp int) int {
	a := prof.UBAlign()
	return roundUp(max(grp*d*2, 1), a) + roundUp(max(p*d*esz, 1), a) + roundUp(max(p*4, 1), a) + roundUp(max(d*2, 1), a)
}

// daTiledPartition is the partition length of the D-tiled layout: what
// DecodePartitionLen gives any D past the UB (its quotient is 0 there), so
// a profile whose UB holds the untiled layout partitions the same way and
// the bits agree.
const daTiledPartition = 16

// decodeLayout is the partition length and the query heads per work item
// that fit the UB. DecodePartitionLen and whole GQA groups when they fit
// (the layout every D up to a few thousand takes); else, when the group's
// query rows alone leave no room for one K row, the group is split into
// items of as many query heads as fill half the UB (each head's attention
// is computed alone, so the split changes only the cost: K and V are read
// once per item); then the longest partition that fits beside them, a
// multiple of 16 while one fits. When even one query row, a K row and its
// scale and the output row do not fit, D is tiled (daDChunk): items of
// one query head, partitions of daTiledPartition positions. A UB that
// cannot hold one column of that is an error naming ub_bytes.
func decodeLayout(prof npu.Profile, d, esz, grp int) (p, heads int, err error) {
	p = DecodePartitionLen(prof, d)
	if daUBBytes(prof, d, esz, p, grp) <= prof.UBBytes {
		return p, grp, nil
	}
	if daUBBytes(prof, d, esz, 1, 1) > prof.UBBytes {
		if daUBBytes(prof, 1, esz, 1, 1) > prof.UBBytes {
			return 0, 0, fmt.Errorf("decode_attention: d %d needs %d bytes of UB for one column (a query element, a K element and its scale, an output element); ub_bytes is %d",
				d, daUBBytes(prof, 1, esz, 1, 1), prof.UBBytes)
		}
		return daTiledPartition, 1, nil
	}
	heads = grp
	if daUBBytes(prof, d, esz, 1, grp) > prof.UBBytes {
		heads = max(1, min(grp, prof.UBBytes/2/(d*2)))
		for daUBBytes(prof, d, esz, 1, heads) > prof.UBBytes { // at most a few steps: d·2 is most of half the UB
			heads--
		}
	}
	a := prof.UBAlign()
	rest := prof.UBBytes - roundUp(heads*d*2, a) - roundUp(d*2, a) - 2*a // 2a: the tile's and the scales' rounding
	p = max(1, rest/(d*esz+4))
	if p >= 16 {
		p = p / 16 * 16
	}
	for p > 1 && daUBBytes(prof, d, esz, p, heads) > prof.UBBytes {
		p--
	}
	return p, heads, nil
}

// daDChunk is the head-size columns per pass for partitions of p
// positions and items of heads query heads: d when the untiled layout
// fits, else the widest chunk (a multiple of 16 while one fits) whose
// query, tile, scales and output fit the UB. 0: not even one column.
func daDChunk(prof npu.Profile, d, esz, p, heads int) int {
	if daUBBytes(prof, d, esz, p, heads) <= prof.UBBytes {
		return d
	}
	a := prof.UBAlign()
	dc := (prof.UBBytes - roundUp(p*4, a) - 3*a) / (heads*2 + p*esz + 2)
	if dc >= 16 {
		dc = dc / 16 * 16
	}
	for dc > 0 && daUBBytes(prof, dc, esz, p, heads) > prof.UBBytes {
		dc--
	}
	return min(dc, d)
}

// DecodeAttentionKernel is decode_attention's KernelFunc.
func DecodeAttentionKernel(ctx context.Context, dev *npu.Device, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	const op = "decode_attention"
	if err := ops.CheckInputs(ops.DecodeAttention, p, in); err != nil {
		return nil, nil, err
	}
	g, err := ops.KVGeomOf(ops.DecodeAttention, p, in)
	if err != nil {
		return nil, nil, err
	}
	f := newDecodeAttentionFaults(npu.FaultsFrom(ctx))
	prof := dev.Profile()
	q := in["q"]
	b, hq := q.Shape[0], q.Shape[1]
	grp := hq / g.H
	lens := in["seq_lens"].I32()
	var bt []int32
	if g.Paged {
		bt = in["block_tables"].I32()
	}
	heads := f.headGroups(hq, g.H)
	esz := 2
	if g.Int8 {
		esz = 1
	}
	part, perItem, err := decodeLayout(prof, g.D, esz, grp)
	if err != nil {
		return nil, nil, err
	}
	// No context is longer than L: a longer partition (a UB far larger
	// than the context) is one partition all the same, and would only
	// size the K and V tiles by the UB rather than by the input.
	part = min(part, roundUp(max(g.L, 1), 16))
	opt := variantOptions[DecodeAttentionOptions](ctx)
	if opt.PartitionLen > 0 {
		part = opt.PartitionLen
	}
	var items []daItem
	for bb, s := range in["seq_ids"].I32() {
		n := 0
		if s >= 0 {
			n = f.contextLen(g, bt, int(s), int(lens[s]))
		}
		for _, hg := range heads {
			for q0 := 0; q0 < hg.nq; q0 += perItem { // a group too large for the UB: several items
				items = append(items, daItem{b: bb, seq: int(s), kvh: hg.kvh, q0: hg.q0 + q0, nq: min(perItem, hg.nq-q0), n: n, ws: -1})
			}
		}
	}
	t, err := newDecodeAttentionTiling(prof, g, f, bt, part, min(perItem, grp), items, opt)
	if err != nil {
		return nil, nil, err
	}
	out, err := npu.NewGuardedOutput("out", tensor.Float16, b, hq, g.D)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	if len(items) == 0 {
		return map[string]*tensor.Tensor{"out": out.Tensor()}, dev.ZeroCost(), nil
	}
	sigma := float32(ops.DecodeScale(p, g.D))
	var ws *tensor.Tensor
	if t.wsLen > 0 {
		if ws, err = dev.Workspace(tensor.Float32, t.wsLen); err != nil {
			return nil, nil, fmt.Errorf("%s: partials workspace: %w", op, err)
		}
	}
	k := daKernel{g: g, f: f, t: t, in: in, out: out, ws: ws, sigma: sigma, hq: hq}
	var cost *npu.Cost
	if ws == nil {
		cost, err = dev.Launch(ctx, t.BlockDim, k.partials)
	} else {
		cost, err = dev.LaunchCooperative(ctx, npu.VectorCore, t.BlockDim, k.splitKernel)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	res := map[string]*tensor.Tensor{"out": out.Tensor()}
	if err := npu.CheckGuards(out); err != nil {
		return res, cost, fmt.Errorf("%s: %w", op, err)
	}
	return res, cost, nil
}

// daKernel is one launch's device code and its operands.
type daKernel struct {
	g     ops.KVGeom
	f     decodeAttentionFaults
	t     DecodeAttentionTiling
	in    map[string]*tensor.Tensor
	out   *npu.GuardedOutput
	ws    *tensor.Tensor // partial records of split items (nil: none)
	sigma float32
	hq    int
}

// splitKernel is the kernel of a launch that splits items: the pieces,
// the barrier, the combine.
func (k daKernel) splitKernel(c *npu.Core) error {
	if err := k.partials(c); err != nil {
		return err
	}
	c.ResetUB() // the pieces' working set; the combine allocates its own
	if err := k.f.barrier(c, len(k.t.combine[c.BlockIdx])); err != nil {
		return err
	}
	return k.combineItems(c)
}

// partials is the first phase: each core computes its pieces, storing
// the outputs of whole items and the records of split ones.
//
// The kernel is explicit (npu.SyncExplicit), held by the sanitizer: each
// K or V tile goes GM → tile slot (MTE2) → fp32 cast (V) → product (M),
// the slot handed back to MTE2 by V and by the cube as each is done with
// it (pipeFlags), so with two slots the copy in of the next tile runs
// under the cast and product of this one; q, the output and the record
// staging buffers hand over between MTE2, V and MTE3 the same way.
func (k daKernel) partials(c *npu.Core) error {
	if err := c.SetSyncMode(npu.SyncExplicit); err != nil {
		return err
	}
	w, err := newDACore(c, k.g, k.t)
	if err != nil {
		return err
	}
	if err := c.SetBufferNum(w.nb); err != nil {
		return err
	}
	for _, pc := range k.t.cores[c.BlockIdx] {
		c.BeginTile()
		if err := w.piece(c, k, k.t.pieces[pc]); err != nil {
			return err
		}
	}
	w.e.drain()
	return nil
}
