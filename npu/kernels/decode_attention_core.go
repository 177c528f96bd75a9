package kernels

import (
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// The device side of one decode_attention core: its working set, the
// pieces and partitions it runs, and the online-softmax arithmetic that
// folds them (DecodeAttentionKernel and the tiling are in
// decode_attention.go, the cross-core combine in
// decode_attention_combine.go).

// daRun is a run of consecutive cache rows: positions [pos, pos+n) at
// rows [row, row+n).
type daRun struct{ pos, row, n int }

// daCore is one core's working set: its UB buffers and the vector unit's
// fp32 registers of the item in flight, allocated once per launch so the
// loops over items and partitions allocate nothing.
type daCore struct {
	d, dc               int         // head size, head-size columns per pass
	qb, kb, ksb, ob, rb *npu.Buffer // qb: the query slot in use; kb, ksb: the K/V tile slot in use
	qbs, kbs, ksbs      [2]*npu.Buffer
	nb, slot            int         // tile slots (2: ping-pong) and the one in use
	nqb, qslot          int         // query slots (2: ping-pong across items) and the one in use
	e                   *pipeFlags  // explicit synchronisation (daSync)
	pend, pendSlot      int         // records staged in rb, and the slot of the first
	qf                  []float32   // the item's query heads, cast to fp32
	tf                  []float32   // the loaded K or V tile after Cast / dequantisation
	sc                  [][]float32 // per query head: the partition's scores, then exp(s − m_p)
	nacc, np            [][]float32 // per query head: running numerator N, the partition's N_p
	npc                 [][]float32 // per query head: the D chunk of np in flight
	mRun, zRun          []float32   // per query head: running maximum M and sum Z
	mp, zp              []float32   // per query head: the partition's m_p and Z_p
	runs                []daRun
}

// newDACore allocates a core's working set for t's partitions and items;
// rb, a workspace record's staging buffer, only when t splits items.
func newDACore(c *npu.Core, g ops.KVGeom, t DecodeAttentionTiling) (*daCore, error) {
	d, dc, grp, P := g.D, t.DChunk, t.heads, t.PartitionLen
	align := c.Profile().UBAlign()
	esz := 2
	if g.Int8 {
		esz = 1
	}
	w := &daCore{d: d, dc: dc, nb: 1, nqb: 1, e: &pipeFlags{c: c}}
	bufs := []struct {
		b     **npu.Buffer
		bytes int
	}{{&w.qbs[0], grp * dc * 2}, {&w.kbs[0], P * dc * esz}, {&w.ksbs[0], P * 4}, {&w.ob, dc * 2}}
	if t.rbBytes > 0 {
		bufs = append(bufs, struct {
			b     **npu.Buffer
			bytes int
		}{&w.rb, t.rbBytes})
	}
	if t.pingPong {
		w.nb = 2
		bufs = append(bufs, struct {
			b     **npu.Buffer
			bytes int
		}{&w.kbs[1], P * dc * esz}, struct {
			b     **npu.Buffer
			bytes int
		}{&w.ksbs[1], P * 4})
	}
	if t.qPingPong {
		w.nqb = 2
		bufs = append(bufs, struct {
			b     **npu.Buffer
			bytes int
		}{&w.qbs[1], grp * dc * 2})
	}
	for _, a := range bufs {
		b, err := c.AllocUB(roundUp(max(a.bytes, 1), align))
		if err != nil {
			return nil, err
		}
		*a.b = b
	}
	w.kb, w.ksb, w.qb = w.kbs[0], w.ksbs[0], w.qbs[0]
	w.qslot = w.nqb - 1 // the first piece's nextQ moves to slot 0
	w.qf = make([]float32, grp*d)
	w.sc, w.nacc, w.np, w.npc = make([][]float32, grp), make([][]float32, grp), make([][]float32, grp), make([][]float32, grp)
	for i := range grp {
		w.nacc[i], w.np[i] = make([]float32, d), make([]float32, d)
	}
	w.mRun, w.zRun, w.mp, w.zp = make([]float32, grp), make([]float32, grp), make([]float32, grp), make([]float32, grp)
	return w, nil
}

// Event ids of a decode_attention core's buffers (pipeFlags): the K/V
// tile slots (tile and scales) take daIDTile plus the slot, the query
// slots daIDQ and daIDQ2.
const (
	daIDTile = 0
	daIDQ    = 2
	daIDOb   = 3
	daIDRb   = 4
	daIDMZ   = 5
	daIDCube = 6 // M → V: the cube's scores or N_p, for the vector unit
	daIDQ2   = 7
)

// qID is the event id of the query slot in use.
func (w *daCore) qID() int {
	if w.qslot == 1 {
		return daIDQ2
	}
	return daIDQ
}

// nextQ moves to the next query slot for a piece's query and output rows.
// With two (ping-pong across pieces), the next piece's query loads into
// the slot the piece before did not use: its copy in waits only for the
// store of the piece two back, so MTE2 fetches the next piece's query and
// K/V tiles while this one computes and stores, where one slot (which the
// untiled output is staged in) holds the copy until this piece's store
// has drained.
func (w *daCore) nextQ() {
	w.qslot = (w.qslot + 1) % w.nqb
	w.qb = w.qbs[w.qslot]
}

// fillTile moves to the next K/V tile slot (ping-pong when there are
// two) for MTE2 to fill: V (the cast) and the cube (the product) handed it
// back when they were done with it.
func (w *daCore) fillTile() {
	w.slot = (w.slot + 1) % w.nb
	id := daIDTile + w.slot
	w.e.take(npu.PipeV, npu.PipeMTE2, id)
	w.e.take(npu.PipeM, npu.PipeMTE2, id)
	w.kb, w.ksb = w.kbs[w.slot], w.ksbs[w.slot]
}

// cube charges the cube's product on the tile slot in use (the operands
// of the cast before it): it starts once V cast the tile, and hands the
// slot back to MTE2.
func (w *daCore) cube(c *npu.Core, m, k, n int, fp16 bool) {
	id := daIDTile + w.slot
	w.e.handOff(npu.PipeV, npu.PipeM, id)
	c.ChargeCube(m, k, n, fp16)
	w.e.set(npu.PipeM, npu.PipeMTE2, id)
}

// vec names the operand of a vector instruction over the vector unit's
// own working set (a partition's softmax, the fold of its sums), which
// the kernel keeps in fp32 beside the output row: the output buffer, once
// its last store read it.
func (w *daCore) vec() {
	w.e.take(npu.PipeMTE3, npu.PipeV, daIDOb)
	_ = w.ob.Bytes()
}

// daRecordBytes is one workspace record of nq query heads of head size
// d: per head m, Z and N, fp32.
func daRecordBytes(nq, d int) int { return nq * (d + 2) * 4 }

// piece computes partitions [k0, k1) of its item: the whole item folds
// them and stores the output; the first piece of a split item folds them
// and writes the running state as the item's record 0; a later piece
// writes each partition's partial as its own record.
func (w *daCore) piece(c *npu.Core, k daKernel, pc daPiece) error {
	it := k.t.items[pc.item]
	d, nq, P := k.g.D, it.nq, k.t.PartitionLen
	qoff := (it.b*k.hq + it.q0) * d
	w.nextQ()
	if pc.k1 > pc.k0 {
		if err := w.loadQ(c, k.in["q"], qoff, nq, d); err != nil {
			return err
		}
		if !it.split() && w.dc == d { // a split item's q is clobbered after SyncAll, when no piece reads it any more
			if err := k.f.qInPlace(c, k.in["q"], qoff, w.qb, w.qf[:nq*d], k.sigma); err != nil {
				return err
			}
		}
	}
	for h := range nq {
		w.mRun[h], w.zRun[h] = float32(math.Inf(-1)), 0
		clear(w.nacc[h])
	}
	for kk := pc.k0; kk < pc.k1; kk++ {
		p0 := kk * P
		if err := w.partition(c, k, it, p0, min(it.n, p0+P)); err != nil {
			return err
		}
		if it.split() && pc.k0 > 0 {
			if err := w.stageRecord(c, k.ws, it, kk-it.first+1, w.mp, w.zp, w.np); err != nil {
				return err
			}
			continue
		}
		for h := range nq {
			w.fold(k.f, h, w.mp[h], w.zp[h], w.np[h][:d])
		}
		w.vec()
		c.ChargeVector(nq * d * 4 * 2)
	}
	if !it.split() {
		return w.store(c, k, qoff, nq, it.n > 0)
	}
	if pc.k0 == 0 {
		if err := w.stageRecord(c, k.ws, it, 0, w.mRun, w.zRun, w.nacc); err != nil {
			return err
		}
	}
	return w.flushRecords(c, k.ws, it)
}

// loadQ copies the nq query heads at qoff into UB, D chunk by D chunk
// when D is tiled, and casts them to fp32 into w.qf.
func (w *daCore) loadQ(c *npu.Core, q *tensor.Tensor, qoff, nq, d int) error {
	id := w.qID()
	w.e.take(npu.PipeV, npu.PipeMTE2, id)
	w.e.take(npu.PipeMTE3, npu.PipeMTE2, id)
	defer w.e.handOff(npu.PipeMTE2, npu.PipeV, id)
	if w.dc == d {
		if err := c.DataCopyPadIn(w.qb, q, qoff, nq*d); err != nil {
			return err
		}
		tensor.F16ToF32s(w.qf[:nq*d], w.qb.F16()[:nq*d])
		return nil
	}
	for h := range nq {
		for d0 := 0; d0 < d; d0 += w.dc {
			n := min(w.dc, d-d0)
			if err := c.DataCopyPadIn(w.qb, q, qoff+h*d+d0, n); err != nil {
				return err
			}
			tensor.F16ToF32s(w.qf[h*d+d0:h*d+d0+n], w.qb.F16()[:n])
		}
	}
	return nil
}

// stageRecord stages the item's record slot in rb: per query head m[h],
// z[h] and n[h] (D values). Consecutive slots gather in rb and leave in
// one store when it is full (flushRecords), not one DMA a partition.
func (w *daCore) stageRecord(c *npu.Core, ws *tensor.Tensor, it daItem, slot int, m, z []float32, n [][]float32) error {
	d := len(n[0])
	size := it.nq * (d + 2)
	if w.pend > 0 && (w.pendSlot+w.pend != slot || (w.pend+1)*size*4 > w.rb.Len()) {
		if err := w.flushRecords(c, ws, it); err != nil {
			return err
		}
	}
	if w.pend == 0 {
		w.pendSlot = slot
		w.e.take(npu.PipeMTE3, npu.PipeV, daIDRb) // the last flush's store read rb
	}
	rec := w.rb.F32()[w.pend*size : (w.pend+1)*size]
	for h := range it.nq {
		r := rec[h*(d+2) : (h+1)*(d+2)]
		r[0], r[1] = m[h], z[h]
		copy(r[2:], n[h][:d])
	}
	w.pend++
	return nil
}

// flushRecords stores the records staged in rb.
func (w *daCore) flushRecords(c *npu.Core, ws *tensor.Tensor, it daItem) error {
	if w.pend == 0 {
		return nil
	}
	size := it.nq * (w.d + 2)
	n := w.pend
	w.pend = 0
	w.e.handOff(npu.PipeV, npu.PipeMTE3, daIDRb)
	if err := c.DataCopyPadOut(ws, it.ws+w.pendSlot*size, w.rb, n*size); err != nil {
		return err
	}
	w.e.set(npu.PipeMTE3, npu.PipeV, daIDRb)
	return nil
}

// store normalises the item's running sums and stores its output rows
// (zero rows for an empty context). Untiled, the nq rows are adjacent in
// out and leave in one store, staged in the query buffer (q is in w.qf
// by then); with D tiled, D chunk by D chunk through the output buffer.
func (w *daCore) store(c *npu.Core, k daKernel, qoff, nq int, nonEmpty bool) error {
	d := k.g.D
	num := c.Profile().Numerics
	norm := func(o []float16.Float16, h, d0 int) {
		for i := range o {
			v := float32(0)
			if nonEmpty {
				v = w.nacc[h][d0+i] / w.zRun[h]
			}
			// Every output is arithmetic (exp, sums, the division): a NaN
			// is the default NaN, whichever the host's float32 made.
			o[i] = float16.Fromfloat32(float32(num.Round(float64(npu.CanonNaN(v)), tensor.Float16)))
		}
	}
	if w.dc == d {
		// qb: loaded by MTE2 (loadQ handed it to V), or stored by the
		// MTE3 of the last item in this slot when this item's empty
		// context loaded nothing; now V's, then MTE3's, then free for
		// either.
		id := w.qID()
		w.e.take(npu.PipeMTE3, npu.PipeV, id)
		o := w.qb.F16()[:nq*d]
		for h := range nq {
			norm(o[h*d:(h+1)*d], h, 0)
		}
		c.ChargeVector(nq * d * 4)
		w.e.set(npu.PipeV, npu.PipeMTE2, id)
		w.e.handOff(npu.PipeV, npu.PipeMTE3, id)
		if err := c.DataCopyPadOut(k.out.GM(), k.out.Base()+qoff, w.qb, nq*d); err != nil {
			return err
		}
		w.e.set(npu.PipeMTE3, npu.PipeMTE2, id)
		w.e.set(npu.PipeMTE3, npu.PipeV, id)
		return nil
	}
	for h := range nq {
		for d0 := 0; d0 < d; d0 += w.dc {
			n := min(w.dc, d-d0)
			w.e.take(npu.PipeMTE3, npu.PipeV, daIDOb)
			norm(w.ob.F16()[:n], h, d0)
			c.ChargeVector(n * 4)
			w.e.handOff(npu.PipeV, npu.PipeMTE3, daIDOb)
			if err := c.DataCopyPadOut(k.out.GM(), k.out.Base()+qoff+h*d+d0, w.ob, n); err != nil {
				return err
			}
			w.e.set(npu.PipeMTE3, npu.PipeV, daIDOb)
		}
	}
	return nil
}

// partition computes positions [p0, p1) of the item: per query head the
// partition's maximum w.mp, sum w.zp and numerator w.np, which depend on
// these positions alone.
func (w *daCore) partition(c *npu.Core, k daKernel, it daItem, p0, p1 int) error {
	g, f := k.g, k.f
	d, nq, dc := g.D, it.nq, w.dc
	var bt []int32
	if g.Paged {
		bt = k.in["block_tables"].I32()
	}
	w.fit(p1-p0, dc)
	w.runs = w.runs[:0]
	for pos := p0; pos < p1; pos++ {
		r := f.row(g, bt, it.seq, pos)
		if j := len(w.runs) - 1; j >= 0 && w.runs[j].row+w.runs[j].n == r {
			w.runs[j].n++
			continue
		}
		w.runs = append(w.runs, daRun{pos: pos, row: r, n: 1})
	}
	// scores: q·Kᵀ on the cube (accumulated over the D chunks), σ on the
	// vector unit
	for _, r := range w.runs {
		for d0 := 0; d0 < d; d0 += dc {
			d1 := min(d, d0+dc)
			w.fillTile()
			if err := w.loadScales(c, k, "k_scale", r, it.kvh); err != nil {
				return err
			}
			if err := w.loadTile(c, k, "k_cache", r, it.kvh, d0, d1, true); err != nil {
				return err
			}
			daScores(w.sc[:nq], r.pos-p0, w.qf[:nq*d], d, d0, w.tf[:r.n*(d1-d0)], d1-d0, k.sigma, d0 == 0, d1 == d)
			w.cube(c, nq, d1-d0, r.n, !g.Int8)
		}
	}
	// softmax of the partition on the vector unit
	m := p1 - p0
	if d == 0 { // no column: every score is an empty sum
		for h := range nq {
			clear(w.sc[h][:m])
		}
	}
	for h := range nq {
		w.partSoftmax(f, h, m)
		clear(w.np[h])
	}
	w.e.handOff(npu.PipeM, npu.PipeV, daIDCube) // the scores are the cube's
	w.vec()
	c.ChargeVector(nq * m * 4 * 4) // max, sub, exp, sum
	// weighted sum of V rows, D chunk by D chunk
	for _, r := range w.runs {
		for d0 := 0; d0 < d; d0 += dc {
			d1 := min(d, d0+dc)
			w.fillTile()
			if err := w.loadScales(c, k, "v_scale", r, it.kvh); err != nil {
				return err
			}
			if err := w.loadTile(c, k, "v_cache", r, it.kvh, d0, d1, false); err != nil {
				return err
			}
			for h := range nq {
				w.npc[h] = w.np[h][d0:d1]
			}
			daWeightedSum(w.npc[:nq], w.sc[:nq], r.pos-p0, w.tf[:r.n*(d1-d0)])
			w.cube(c, nq, r.n, d1-d0, !g.Int8)
		}
	}
	w.e.handOff(npu.PipeM, npu.PipeV, daIDCube) // N_p is the cube's: V folds or stages it next
	return nil
}

// fit grows the partition's scratch (w.tf, w.sc) to m positions of dc
// values: a partition holds up to PartitionLen positions (thousands for a
// small d), but a short context far fewer, and scratch sized for the
// longest would be allocated by every block of every launch (800 KB an
// exec of FuzzDecodeAttention's seeds).
func (w *daCore) fit(m, dc int) {
	if len(w.tf) < m*dc {
		w.tf = make([]float32, m*dc)
	}
	for h := range w.sc {
		if len(w.sc[h]) < m {
			w.sc[h] = make([]float32, m)
		}
	}
}

// loadScales copies the int8 dequantisation scales of run r (kv head
// kvh) into UB; nothing for an fp16 cache.
func (w *daCore) loadScales(c *npu.Core, k daKernel, scale string, r daRun, kvh int) error {
	if !k.g.Int8 {
		return nil
	}
	return c.DataCopy2DIn(w.ksb, k.f.scaleSource(k.in, scale), k.g.H, r.row, kvh, r.n, 1, 1, r.n)
}

// loadTile copies columns [d0, d1) of the K or V rows of run r (kv head
// kvh) into UB and casts them to fp32 into w.tf on the vector unit (fp16:
// exact; int8: RN32(code·scale), the scales loaded by loadScales). isK
// says which scale applies.
func (w *daCore) loadTile(c *npu.Core, k daKernel, cache string, r daRun, kvh, d0, d1 int, isK bool) error {
	g, wd := k.g, d1-d0
	if err := c.DataCopy2DIn(w.kb, k.in[cache], g.H*g.D, r.row, kvh*g.D+d0, r.n, wd, wd, r.n); err != nil {
		return err
	}
	id := daIDTile + w.slot
	w.e.handOff(npu.PipeMTE2, npu.PipeV, id)
	defer w.e.set(npu.PipeV, npu.PipeMTE2, id) // after the cast: V is done with the slot
	n := r.n * wd
	if !g.Int8 {
		tensor.F16ToF32s(w.tf[:n], w.kb.F16()[:n])
		c.ChargeVector(n * 2)
		return nil
	}
	codes, scales := w.kb.I8()[:n], w.ksb.F32()[:r.n]
	for j, s := range scales {
		s = k.f.dequantScale(isK, s)
		row := w.tf[j*wd : (j+1)*wd]
		for i, q := range codes[j*wd : (j+1)*wd] {
			row[i] = float32(q) * s
		}
	}
	c.ChargeVector(n * 4)
	return nil
}
