package kernels

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
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
// Host side, items are spread over the cores by LPT (longest processing
// time first: items sorted by context length, each to the least loaded
// core), or statically (item i to core i mod blockDim) as an option; the
// modeled cost's LoadBalance shows the difference on skewed length mixes.

// The core schedules of decode_attention.
const (
	ScheduleLPT    = "lpt"
	ScheduleStatic = "static"
)

// DecodeAttentionOptions overrides the tiling; zero fields take the
// default.
type DecodeAttentionOptions struct {
	BlockDim     int    // cores (default min(AI cores, items))
	PartitionLen int    // context positions per partition (default from UB)
	Schedule     string // ScheduleLPT (default) or ScheduleStatic
}

// daItem is one work item: query heads [q0, q0+nq) of batch entry b over
// kv head kvh of sequence seq, n positions.
type daItem struct{ b, seq, kvh, q0, nq, n int }

// DecodeAttentionTiling is the host-side tiling.
type DecodeAttentionTiling struct {
	BlockDim     int
	PartitionLen int
	Schedule     string
	items        []daItem
	cores        [][]int // item indices per core
	heads        int     // query heads of the largest item (the UB's query buffer)
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

// decodeLayout is the partition length and the query heads per work item
// that fit the UB. DecodePartitionLen and whole GQA groups when they fit
// (the layout every D up to a few thousand takes); else, when the group's
// query rows alone leave no room for one K row, the group is split into
// items of as many query heads as fill half the UB (each head's attention
// is computed alone, so the split changes only the cost: K and V are read
// once per item); then the longest partition that fits beside them, a
// multiple of 16 while one fits. A UB that cannot hold one query row, a
// K row and its scale and the output row is an error naming ub_bytes.
func decodeLayout(prof npu.Profile, d, esz, grp int) (p, heads int, err error) {
	p = DecodePartitionLen(prof, d)
	if daUBBytes(prof, d, esz, p, grp) <= prof.UBBytes {
		return p, grp, nil
	}
	if daUBBytes(prof, d, esz, 1, 1) > prof.UBBytes {
		return 0, 0, fmt.Errorf("decode_attention: d %d needs %d bytes of UB (a query row, a K row and its scale, the output row); ub_bytes is %d",
			d, daUBBytes(prof, d, esz, 1, 1), prof.UBBytes)
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

// newDecodeAttentionTiling computes the tiling of the items on prof, with
// partitions of part positions (decodeLayout) unless opt says otherwise.
func newDecodeAttentionTiling(prof npu.Profile, d, part int, items []daItem, opt DecodeAttentionOptions) (DecodeAttentionTiling, error) {
	t := DecodeAttentionTiling{PartitionLen: part, Schedule: ScheduleLPT, items: items}
	if opt.PartitionLen > 0 {
		t.PartitionLen = opt.PartitionLen
	}
	if opt.Schedule != "" {
		if opt.Schedule != ScheduleLPT && opt.Schedule != ScheduleStatic {
			return t, fmt.Errorf("decode_attention: schedule %q (want %s or %s)", opt.Schedule, ScheduleLPT, ScheduleStatic)
		}
		t.Schedule = opt.Schedule
	}
	t.BlockDim = min(prof.AICores, prof.VectorCores, max(len(items), 1))
	if opt.BlockDim > 0 {
		t.BlockDim = min(opt.BlockDim, prof.VectorCores)
	}
	t.cores = make([][]int, t.BlockDim)
	cost := func(it daItem) int { return it.nq*it.n + 64 } // positions × heads, plus a fixed setup
	if t.Schedule == ScheduleStatic {
		for i := range items {
			t.cores[i%t.BlockDim] = append(t.cores[i%t.BlockDim], i)
		}
		return t, nil
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cost(items[b]) - cost(items[a]) })
	load := make([]int, t.BlockDim)
	for _, i := range order {
		c := 0
		for k := range load {
			if load[k] < load[c] {
				c = k
			}
		}
		load[c] += cost(items[i])
		t.cores[c] = append(t.cores[c], i)
	}
	return t, nil
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
	q := in["q"]
	b, hq := q.Shape[0], q.Shape[1]
	grp := hq / g.H
	lens := in["seq_lens"].I32()
	heads := f.headGroups(hq, g.H)
	esz := 2
	if g.Int8 {
		esz = 1
	}
	part, perItem, err := decodeLayout(dev.Profile(), g.D, esz, grp)
	if err != nil {
		return nil, nil, err
	}
	// No context is longer than L: a longer partition (a UB far larger
	// than the context) is one partition all the same, and would only
	// size the K and V tiles by the UB rather than by the input.
	part = min(part, roundUp(max(g.L, 1), 16))
	var items []daItem
	for bb, s := range in["seq_ids"].I32() {
		n := 0
		if s >= 0 {
			n = int(lens[s])
		}
		for _, hg := range heads {
			for q0 := 0; q0 < hg.nq; q0 += perItem { // a group too large for the UB: several items
				items = append(items, daItem{b: bb, seq: int(s), kvh: hg.kvh, q0: hg.q0 + q0, nq: min(perItem, hg.nq-q0), n: n})
			}
		}
	}
	t, err := newDecodeAttentionTiling(dev.Profile(), g.D, part, items, variantOptions[DecodeAttentionOptions](ctx))
	if err != nil {
		return nil, nil, err
	}
	t.heads = min(perItem, grp)
	out, err := npu.NewGuardedOutput("out", tensor.Float16, b, hq, g.D)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	if len(items) == 0 {
		return map[string]*tensor.Tensor{"out": out.Tensor()}, dev.ZeroCost(), nil
	}
	sigma := float32(ops.DecodeScale(p, g.D))
	cost, err := dev.Launch(ctx, t.BlockDim, decodeAttentionDevice(g, f, t, in, out, sigma, hq))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	res := map[string]*tensor.Tensor{"out": out.Tensor()}
	if err := npu.CheckGuards(out); err != nil {
		return res, cost, fmt.Errorf("%s: %w", op, err)
	}
	return res, cost, nil
}

// daRun is a run of consecutive cache rows: positions [pos, pos+n) at
// rows [row, row+n).
type daRun struct{ pos, row, n int }

// daCore is one core's working set: its UB buffers and the vector unit's
// fp32 registers of the item in flight, allocated once per launch so the
// loops over items and partitions allocate nothing.
type daCore struct {
	hq              int // query heads per batch entry
	qb, kb, ksb, ob *npu.Buffer
	qf              []float32   // the item's query heads, cast to fp32
	tf              []float32   // the loaded K or V tile after Cast / dequantisation
	sc              [][]float32 // per query head: the partition's scores, then exp(s − m_p)
	nacc, np        [][]float32 // per query head: running numerator N, the partition's N_p
	mRun, zRun      []float32   // per query head: running maximum M and sum Z
	partF           []float32   // per query head: the partition's exp(m_p − M′)
	runs            []daRun
}

// newDACore allocates a core's working set for partitions of P
// positions and items of up to grp query heads of hq a batch entry.
func newDACore(c *npu.Core, g ops.KVGeom, P, grp, hq int) (*daCore, error) {
	d := g.D
	align := c.Profile().UBAlign()
	esz := 2
	if g.Int8 {
		esz = 1
	}
	w := &daCore{hq: hq}
	for _, a := range []struct {
		b     **npu.Buffer
		bytes int
	}{{&w.qb, grp * d * 2}, {&w.kb, P * d * esz}, {&w.ksb, P * 4}, {&w.ob, d * 2}} {
		b, err := c.AllocUB(roundUp(max(a.bytes, 1), align))
		if err != nil {
			return nil, err
		}
		*a.b = b
	}
	w.qf = make([]float32, grp*d)
	w.sc, w.nacc, w.np = make([][]float32, grp), make([][]float32, grp), make([][]float32, grp)
	for i := range grp {
		w.nacc[i], w.np[i] = make([]float32, d), make([]float32, d)
	}
	w.mRun, w.zRun, w.partF = make([]float32, grp), make([]float32, grp), make([]float32, grp)
	return w, nil
}

func decodeAttentionDevice(g ops.KVGeom, f decodeAttentionFaults, t DecodeAttentionTiling, in map[string]*tensor.Tensor, out *npu.GuardedOutput, sigma float32, hq int) npu.Kernel {
	return func(c *npu.Core) error {
		w, err := newDACore(c, g, t.PartitionLen, t.heads, hq)
		if err != nil {
			return err
		}
		for _, it := range t.cores[c.BlockIdx] {
			c.BeginTile()
			if err := w.item(c, g, f, t.PartitionLen, in, out, sigma, t.items[it]); err != nil {
				return err
			}
		}
		return nil
	}
}

// item computes one work item: its query heads' attention over the
// context, partition by partition, then normalises and stores them.
func (w *daCore) item(c *npu.Core, g ops.KVGeom, f decodeAttentionFaults, P int, in map[string]*tensor.Tensor, out *npu.GuardedOutput, sigma float32, item daItem) error {
	d, nq := g.D, item.nq
	var bt []int32
	if g.Paged {
		bt = in["block_tables"].I32()
	}
	n := f.contextLen(g, bt, item.seq, item.n)
	qoff := (item.b*w.hq + item.q0) * d
	if n > 0 {
		if err := c.DataCopyPadIn(w.qb, in["q"], qoff, nq*d); err != nil {
			return err
		}
		tensor.F16ToF32s(w.qf[:nq*d], w.qb.F16()[:nq*d])
		if err := f.qInPlace(c, in["q"], qoff, w.qb, w.qf[:nq*d], sigma); err != nil {
			return err
		}
	}
	for h := range nq {
		w.mRun[h], w.zRun[h] = float32(math.Inf(-1)), 0
		clear(w.nacc[h])
	}
	for p0 := 0; p0 < n; p0 += P {
		p1 := min(n, p0+P)
		w.fit(p1-p0, d)
		w.runs = w.runs[:0]
		for pos := p0; pos < p1; pos++ {
			r := f.row(g, bt, item.seq, pos)
			if k := len(w.runs) - 1; k >= 0 && w.runs[k].row+w.runs[k].n == r {
				w.runs[k].n++
				continue
			}
			w.runs = append(w.runs, daRun{pos: pos, row: r, n: 1})
		}
		// scores: q·Kᵀ on the cube, σ on the vector unit
		for _, r := range w.runs {
			if err := w.load(c, g, f, in, "k_cache", "k_scale", r, item.kvh, true); err != nil {
				return err
			}
			daScores(w.sc[:nq], r.pos-p0, w.qf[:nq*d], w.tf[:r.n*d], d, sigma)
			c.ChargeCube(nq, d, r.n, !g.Int8)
		}
		// softmax of the partition on the vector unit
		m := p1 - p0
		for h := range nq {
			w.softmax(f, h, m)
		}
		c.ChargeVector(nq * m * 4 * 4) // max, sub, exp, sum
		// weighted sum of V rows
		for _, r := range w.runs {
			if err := w.load(c, g, f, in, "v_cache", "v_scale", r, item.kvh, false); err != nil {
				return err
			}
			daWeightedSum(w.np[:nq], w.sc[:nq], r.pos-p0, w.tf[:r.n*d])
			c.ChargeCube(nq, r.n, d, !g.Int8)
		}
		for h := range nq {
			nacc, np, pf := w.nacc[h][:d], w.np[h][:d], w.partF[h]
			for i := range nacc {
				nacc[i] += float32(np[i] * pf)
			}
		}
		c.ChargeVector(nq * d * 4 * 2)
	}
	// normalise and store
	num := c.Profile().Numerics
	for h := range nq {
		o := w.ob.F16()[:d]
		for i := range d {
			v := float32(0)
			if n > 0 {
				v = w.nacc[h][i] / w.zRun[h]
			}
			// Every output is arithmetic (exp, sums, the division): a NaN
			// is the default NaN, whichever the host's float32 made.
			o[i] = float16.Fromfloat32(float32(num.Round(float64(npu.CanonNaN(v)), tensor.Float16)))
		}
		c.ChargeVector(d * 4)
		if err := c.DataCopyPadOut(out.GM(), out.Base()+qoff+h*d, w.ob, d); err != nil {
			return err
		}
	}
	return nil
}

// fit grows the partition's scratch (w.tf, w.sc) to m positions of d
// values: a partition holds up to PartitionLen positions (thousands for a
// small d), but a short context far fewer, and scratch sized for the
// longest would be allocated by every block of every launch (800 KB an
// exec of FuzzDecodeAttention's seeds).
func (w *daCore) fit(m, d int) {
	if len(w.tf) < m*d {
		w.tf = make([]float32, m*d)
	}
	for h := range w.sc {
		if len(w.sc[h]) < m {
			w.sc[h] = make([]float32, m)
		}
	}
}

// load copies the K or V rows of run r (kv head kvh) and, for int8, their
// scales into UB, and casts them to fp32 into w.tf on the vector unit
// (fp16: exact; int8: RN32(code·scale)). isK says which scale applies.
func (w *daCore) load(c *npu.Core, g ops.KVGeom, f decodeAttentionFaults, in map[string]*tensor.Tensor, cache, scale string, r daRun, kvh int, isK bool) error {
	d := g.D
	if err := c.DataCopy2DIn(w.kb, in[cache], g.H*d, r.row, kvh*d, r.n, d, d, r.n); err != nil {
		return err
	}
	n := r.n * d
	if !g.Int8 {
		tensor.F16ToF32s(w.tf[:n], w.kb.F16()[:n])
		c.ChargeVector(n * 2)
		return nil
	}
	if err := c.DataCopy2DIn(w.ksb, f.scaleSource(in, scale), g.H, r.row, kvh, r.n, 1, 1, r.n); err != nil {
		return err
	}
	codes, scales := w.kb.I8()[:n], w.ksb.F32()[:r.n]
	for j, s := range scales {
		s = f.dequantScale(isK, s)
		row := w.tf[j*d : (j+1)*d]
		for i, q := range codes[j*d : (j+1)*d] {
			row[i] = float32(q) * s
		}
	}
	c.ChargeVector(n * 4)
	return nil
}

// softmax turns query head h's m scores of the partition into
// exp(s − m_p), and folds the partition's maximum and sum into the running
// M and Z (rescaling N), leaving exp(m_p − M′) for the combine of N_p.
func (w *daCore) softmax(f decodeAttentionFaults, h, m int) {
	sc := w.sc[h][:m]
	mp := float32(math.Inf(-1))
	for _, s := range sc {
		mp = max(mp, s)
	}
	mp = f.maxSubtracted(mp)
	var zp float32
	for j, s := range sc {
		e := float32(math.Exp(float64(s - mp)))
		sc[j] = e
		zp += e
	}
	mNew := f.maxSubtracted(max(w.mRun[h], mp))
	a, bsc := f.rescale(float32(math.Exp(float64(w.mRun[h]-mNew))), float32(math.Exp(float64(mp-mNew))))
	if w.mRun[h] == float32(math.Inf(-1)) {
		a = 0
	}
	w.zRun[h] = float32(w.zRun[h]*a) + float32(zp*bsc)
	nacc := w.nacc[h]
	for i := range nacc {
		nacc[i] *= a
	}
	w.mRun[h], w.partF[h] = mNew, bsc
	clear(w.np[h])
}

// daScores sets sc[h][off+j] = σ·(q_h · k_j) for every query head h (q
// holds them, d values each) and every row j of the tile k: fp32 products
// summed i ascending in one fp32 accumulator per score, as the cube's
// accumulator does. Four keys share each pass over a query head, and the
// four keys' rows stay in cache across all heads.
func daScores(sc [][]float32, off int, q, k []float32, d int, sigma float32) {
	n := len(k) / d
	j := 0
	for ; j+4 <= n; j += 4 {
		k0 := k[j*d : (j+1)*d]
		k1 := k[(j+1)*d : (j+2)*d]
		k2 := k[(j+2)*d : (j+3)*d]
		k3 := k[(j+3)*d : (j+4)*d]
		for h, s := range sc {
			qr := q[h*d : (h+1)*d]
			k0, k1, k2, k3 := k0[:len(qr)], k1[:len(qr)], k2[:len(qr)], k3[:len(qr)]
			var a0, a1, a2, a3 float32
			for i, qv := range qr {
				a0 += float32(qv * k0[i])
				a1 += float32(qv * k1[i])
				a2 += float32(qv * k2[i])
				a3 += float32(qv * k3[i])
			}
			o := s[off+j : off+j+4]
			o[0], o[1], o[2], o[3] = a0*sigma, a1*sigma, a2*sigma, a3*sigma
		}
	}
	for ; j < n; j++ {
		kr := k[j*d : (j+1)*d]
		for h, s := range sc {
			qr := q[h*d : (h+1)*d]
			kr := kr[:len(qr)]
			var acc float32
			for i, qv := range qr {
				acc += float32(qv * kr[i])
			}
			s[off+j] = acc * sigma
		}
	}
}

// daWeightedSum adds Σ_j e_j·v_j over the rows j of the tile v to each
// query head's partition numerator np[h], with e_j = sc[h][off+j]: fp32
// products added to each element in row order (j ascending), four rows
// per pass.
func daWeightedSum(np, sc [][]float32, off int, v []float32) {
	if len(np) == 0 {
		return
	}
	d := len(np[0])
	n := len(v) / d
	j := 0
	for ; j+4 <= n; j += 4 {
		v0 := v[j*d : (j+1)*d]
		v1 := v[(j+1)*d : (j+2)*d]
		v2 := v[(j+2)*d : (j+3)*d]
		v3 := v[(j+3)*d : (j+4)*d]
		for h, acc := range np {
			e := sc[h][off+j : off+j+4]
			e0, e1, e2, e3 := e[0], e[1], e[2], e[3]
			v0, v1, v2, v3 := v0[:len(acc)], v1[:len(acc)], v2[:len(acc)], v3[:len(acc)]
			for i, a := range acc {
				a = float32(a + float32(e0*v0[i]))
				a = float32(a + float32(e1*v1[i]))
				a = float32(a + float32(e2*v2[i]))
				acc[i] = float32(a + float32(e3*v3[i]))
			}
		}
	}
	for ; j < n; j++ {
		vr := v[j*d : (j+1)*d]
		for h, acc := range np {
			e := sc[h][off+j]
			vr := vr[:len(acc)]
			for i := range acc {
				acc[i] += float32(e * vr[i])
			}
		}
	}
}
