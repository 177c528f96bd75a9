package kernels

import (
	"fmt"
	"math"
	"slices"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
)

// decode_attention's host-side plan: which pieces of which items run on
// which core. The items' context lengths are known on the host (seq_lens),
// as flash-decoding's planners assume; each partition is priced by
// daEstimate the way the kernel's primitives charge it, so LPT balances
// modeled cycles, not positions: a short context's fixed cost (its query,
// its output, one DMA latency per transfer) is what makes 40 short
// sequences weigh as much as a few long ones.

// daEstimate prices decode_attention's work on a profile: the cycles of
// the DMA transfers, vector instructions and cube steps the kernel issues
// (npu's cost model, restated for the host).
type daEstimate struct {
	prof       npu.Profile
	rate       float64 // DMA bytes per cycle of one vector core (npu.Profile.GMPath)
	lat        int64   // DMA latency per transfer (npu.Profile.GMPath)
	g          ops.KVGeom
	esz        int
	bt         []int32
	f          decodeAttentionFaults
	p          int // partition length
	splittable bool
	pingPong   bool // the K/V tiles ping-pong: a partition loads while the one before computes
	// chain: the query buffers ping-pong too, so a core's pieces run as
	// one pipeline: the next piece's query and tiles load while this one
	// computes and stores (daPieceCost).
	chain bool
	stage int // UB bytes beside the tiles for staging records (phase 1)
}

func (e daEstimate) dma(bytes int) int64 {
	if bytes <= 0 {
		return 0
	}
	return e.lat + int64(math.Ceil(float64(bytes)/e.rate))
}

func (e daEstimate) vec(bytes int) int64 {
	if bytes <= 0 {
		return 0
	}
	vb := e.prof.VectorBytesPerCycle
	return int64(e.prof.VectorIssueCycles) + int64((bytes+vb-1)/vb)
}

func (e daEstimate) cube(m, k, n int) int64 {
	fr := e.prof.CubeFP16
	if e.g.Int8 {
		fr = e.prof.CubeInt8
	}
	up := func(x, f int) int64 { return int64((x + f - 1) / f) }
	return up(m, fr.M) * up(k, fr.K) * up(n, fr.N)
}

// partitions returns the estimated cycles of each partition of item it
// (scores, softmax, weighted sum and the fold), one entry per partition,
// and each partition's drain: with the K/V tiles ping-ponged the kernel
// loads a partition while it computes the one before, so a run of
// partitions costs, past its first, the longer of each one's transfers
// and its compute (the entry), and once, at the run's end, the compute
// that follows its last transfer with nothing to hide it behind (the
// drain, daPieceCost): the last tile's cast and product and the fold when
// the compute before them fits beneath the transfers before, else the
// shorter of the partition's transfers and compute. Single-buffered, the
// entry is the sum of the charges and the drain 0.
func (e daEstimate) partitions(it daItem) (out, drain []int64) {
	d, nq := e.g.D, it.nq
	cast := 2
	if e.g.Int8 {
		cast = 4
	}
	out, drain = make([]int64, it.parts), make([]int64, it.parts)
	for k := range out {
		p0, p1 := k*e.p, min(it.n, (k+1)*e.p)
		var mv, cp, lastMv, lastCp int64
		run, prev := 0, -2
		flush := func() {
			if run == 0 {
				return
			}
			for range 2 { // K then V
				lastMv, lastCp = e.dma(run*d*e.esz), e.vec(run*d*cast)+e.cube(nq, d, run)
				if e.g.Int8 {
					lastMv += e.dma(run * 4)
				}
				mv, cp = mv+lastMv, cp+lastCp
			}
			run = 0
		}
		for pos := p0; pos < p1; pos++ {
			r := e.f.row(e.g, e.bt, it.seq, pos)
			if r != prev+1 {
				flush()
			}
			run++
			prev = r
		}
		flush()
		fold := e.vec(nq * d * 8)
		cp += e.vec(nq*(p1-p0)*16) + fold
		if e.pingPong {
			out[k], drain[k] = max(mv, cp), min(mv, cp)
			if cp-lastCp-fold <= mv-lastMv {
				// The compute before the last tile's fits beneath the
				// transfers before it: what follows the last transfer is
				// that tile's cast and product and the fold.
				drain[k] = min(drain[k], lastCp+fold)
			}
		} else {
			out[k] = mv + cp
		}
	}
	return out, drain
}

// store is the cycles of normalising and storing an item's output rows
// (one store: the plan never splits a D-tiled item, whose rows leave in
// chunks, and those are priced alike).
func (e daEstimate) store(nq int) int64 {
	return e.vec(nq*e.g.D*4) + e.dma(nq*e.g.D*2)
}

// records is the cycles of storing n records of nq heads from a staging
// buffer of stage bytes (flushed when full), and of the last of those
// stores alone.
func (e daEstimate) records(nq, n, stage int) (all, last int64) {
	per := max(1, stage/daRecordBytes(nq, e.g.D))
	for r := 0; r < n; r += per {
		last = e.dma(min(per, n-r) * daRecordBytes(nq, e.g.D))
		all += last
	}
	return all, last
}

// daJob is a piece as LPT prices it in its core's pipeline (daLPT): run
// is the cycles it adds to the core's run of transfers and compute,
// drain those of its compute after its last transfer, out its store
// (the output rows or the last record flush), which MTE3 starts once
// the drain is done and the store before has left.
type daJob struct{ run, drain, out int64 }

// daPieceCost prices a piece: head is its query's load, mid the
// partitions' entries (daEstimate.partitions), drain the last
// partition's, out the store that ends it and more any stores issued
// before.
//
// A chained core (daEstimate.chain) loads the next piece's query and
// tiles while this piece's last partition computes and its output
// stores, so the drain and the store overlap the next piece's run;
// otherwise a piece's run is all of them, one after the other.
func (e daEstimate) daPieceCost(head, mid, drain, out, more int64) daJob {
	if e.chain {
		return daJob{run: head + mid + more, drain: drain, out: out}
	}
	return daJob{run: head + mid + drain + out + more}
}

// unit is the cycles of a combine unit of cw columns over recs records.
func (e daEstimate) unit(cw, recs int) int64 {
	a := e.prof.UBAlign()
	rows := daCombineRows(e.prof.UBBytes-roundUp(max(cw*2, 1), a), a, cw, recs)
	var cyc int64
	for r := 0; r < recs; r += rows {
		nr := min(rows, recs-r)
		cyc += e.dma(nr*2*4) + e.dma(nr*cw*4)
	}
	return cyc + int64(recs-1)*e.vec(cw*8) + e.vec(cw*4) + e.dma(cw*2)
}

// daPlanItem is an item with its partitions' estimates and prefix sums.
type daPlanItem struct {
	parts []int64
	drain []int64 // the compute exposed after a run's last transfer, when the run ends there
	sum   []int64 // sum[k] = Σ parts[:k]
}

// mid is the entries of partitions k0..k1−1 run back to back, their run's
// drain aside.
func (pi daPlanItem) mid(k0, k1 int) int64 {
	if k1 <= k0 {
		return 0
	}
	return pi.sum[k1] - pi.sum[k0]
}

// drainAt is the drain of a run of partitions ending before k1.
func (pi daPlanItem) drainAt(k0, k1 int) int64 {
	if k1 <= k0 {
		return 0
	}
	return pi.drain[k1-1]
}

// cuts splits the partitions into k ≤ len(parts) ranges of about equal
// estimated cycles: bounds[j] is the first partition of range j, bounds[k]
// the partition count; every range holds at least one partition.
//
// With front > 0 the first range is instead the longest whose cycles
// stay within front (at least one partition), and the rest is split so:
// a piece that fills a core's share whole, beside pieces that fill the
// gaps other work leaves.
func (pi daPlanItem) cuts(k int, front int64) []int {
	n := len(pi.parts)
	b := make([]int, k+1)
	b[k] = n
	lo := 0
	if front > 0 && k > 1 {
		c, _ := slices.BinarySearch(pi.sum, front+1) // the first prefix > front
		b[1] = min(max(c-1, 1), n-(k-1))
		lo = 1
	}
	base, rest := pi.sum[b[lo]], pi.sum[n]-pi.sum[b[lo]]
	for j := lo + 1; j < k; j++ {
		want := base + rest*int64(j-lo)/int64(k-lo)
		c, _ := slices.BinarySearch(pi.sum, want) // the first prefix ≥ want
		if c > 0 && want-pi.sum[c-1] < pi.sum[min(c, n)]-want {
			c--
		}
		b[j] = min(max(c, b[j-1]+1), n-(k-j))
	}
	return b
}

// newDecodeAttentionTiling computes the tiling of the items on prof:
// partitions of part positions, items of up to heads query heads; the
// schedule, core count and split from opt or, by default, the plan of
// least estimated makespan.
func newDecodeAttentionTiling(prof npu.Profile, g ops.KVGeom, f decodeAttentionFaults, bt []int32, part, heads int, items []daItem, opt DecodeAttentionOptions) (DecodeAttentionTiling, error) {
	t := DecodeAttentionTiling{PartitionLen: part, Schedule: ScheduleLPT, items: items, heads: heads}
	if opt.Schedule != "" {
		if opt.Schedule != ScheduleLPT && opt.Schedule != ScheduleStatic {
			return t, fmt.Errorf("decode_attention: schedule %q (want %s or %s)", opt.Schedule, ScheduleLPT, ScheduleStatic)
		}
		t.Schedule = opt.Schedule
	}
	if part < 1 {
		return t, fmt.Errorf("decode_attention: partition length %d (want ≥ 1)", part)
	}
	esz := 2
	if g.Int8 {
		esz = 1
	}
	t.DChunk = daDChunk(prof, g.D, esz, part, heads)
	if t.DChunk < 1 && g.D > 0 {
		return t, fmt.Errorf("decode_attention: partitions of %d positions leave no room for one column of d %d (ub_bytes %d)", part, g.D, prof.UBBytes)
	}
	if opt.BufferNum < 0 || opt.BufferNum > 2 {
		return t, fmt.Errorf("decode_attention: BufferNum %d out of range [1, 2]", opt.BufferNum)
	}
	// A second K/V tile and scales buffer (ping-pong) where the UB holds
	// it beside the layout, and still a record's staging when the layout
	// may split items: the split matters more to a long context than the
	// overlap does.
	a := prof.UBAlign()
	pp := roundUp(max(part*t.DChunk*esz, 1), a) + roundUp(max(part*4, 1), a)
	rest := (prof.UBBytes - daUBBytes(prof, t.DChunk, esz, part, heads)) / a * a
	t.pingPong = opt.BufferNum != 1 && rest >= pp && (t.DChunk < g.D || rest-pp >= daRecordBytes(heads, g.D) || rest < daRecordBytes(heads, g.D))
	// Then a second query buffer, on the same terms (the untiled layout
	// only: a D-tiled item streams its query chunk by chunk through one
	// buffer and stores through the output row): the next piece's
	// transfers under this piece's compute and store.
	qpp := roundUp(max(heads*t.DChunk*2, 1), a)
	if t.pingPong {
		rest -= pp
	}
	t.qPingPong = opt.BufferNum != 1 && t.DChunk == g.D && rest >= qpp && (rest-qpp >= daRecordBytes(heads, g.D) || rest < daRecordBytes(heads, g.D))
	for i := range t.items {
		t.items[i].parts = (t.items[i].n + part - 1) / part
		t.items[i].first = t.items[i].parts
	}
	maxCores := min(prof.AICores, prof.VectorCores)
	if opt.BlockDim > 0 {
		maxCores = min(opt.BlockDim, prof.VectorCores)
	}
	if t.Schedule == ScheduleStatic {
		// The baseline: whole items, item i on core i mod blockDim.
		t.BlockDim = min(maxCores, max(len(items), 1))
		if opt.BlockDim > 0 {
			t.BlockDim = maxCores
		}
		t.cores = make([][]int, t.BlockDim)
		for i := range items {
			t.pieces = append(t.pieces, daPiece{item: i, k0: 0, k1: t.items[i].parts})
			t.cores[i%t.BlockDim] = append(t.cores[i%t.BlockDim], i)
		}
		return t, nil
	}
	rate, lat := prof.GMPath(npu.VectorCore)
	e := daEstimate{prof: prof, rate: rate, lat: int64(lat), g: g, esz: esz, bt: bt, f: f, p: part, pingPong: t.pingPong, chain: t.qPingPong}
	// A split item's pieces stage their records in UB beside the tiles;
	// the D-tiled layout never splits (a record is D values a head).
	e.stage = (prof.UBBytes - daUBBytes(prof, g.D, esz, part, heads)) / prof.UBAlign() * prof.UBAlign()
	if t.pingPong {
		e.stage -= pp
	}
	if t.qPingPong {
		e.stage -= qpp
	}
	e.splittable = t.DChunk == g.D && e.stage >= daRecordBytes(heads, g.D)
	plan := daPlan(e, t.items, maxCores, opt.BlockDim > 0)
	t.BlockDim, t.pieces, t.cores, t.units, t.combine = plan.cores, plan.pieces, plan.assign, plan.units, plan.combine
	for i, k := range plan.split {
		if k <= 1 {
			continue
		}
		it := &t.items[i]
		size := it.nq * (g.D + 2)
		it.first = plan.first[i]
		it.ws = roundUp(t.wsLen, size) // a whole number of records: the combine reads them as rows
		t.wsLen = it.ws + (it.parts-it.first+1)*size
	}
	for _, pc := range t.pieces {
		it := t.items[pc.item]
		switch {
		case !it.split():
		case pc.k0 == 0:
			t.rbBytes = max(t.rbBytes, daRecordBytes(it.nq, g.D))
		default:
			t.rbBytes = max(t.rbBytes, min(e.stage, (pc.k1-pc.k0)*daRecordBytes(it.nq, g.D)))
		}
	}
	t.rbBytes = roundUp(t.rbBytes, prof.UBAlign())
	return t, nil
}

// daPlanned is one candidate plan: core count, pieces (whole items or
// partition ranges), their cores, and the split items' combine cores.
type daPlanned struct {
	cores    int
	makespan int64
	split    []int // pieces per item
	front    int64 // the first piece's cycles at most (0: equal pieces; cuts)
	first    []int // partitions of a split item's first piece
	pieces   []daPiece
	assign   [][]int
	units    []daUnit
	combine  [][]int
	load     []int64 // estimated cycles per core, phase 1 then phase 2
	cload    []int64
}

// daPlan searches the core counts up to maxCores (exactly maxCores when
// fixed) and, for each, splits of the items into pieces of about 1, 1/2
// and 1/4 of a core's share of the work (or none), spreading the pieces
// by LPT and the split items' combines by LPT after them; it keeps the
// least estimated makespan (phase 1's plus the combine's), the fewer
// cores and the coarser split on a tie, since a core that adds nothing
// to the makespan only lowers the balance.
func daPlan(e daEstimate, items []daItem, maxCores int, fixed bool) daPlanned {
	pis := make([]daPlanItem, len(items))
	whole := make([]daJob, len(items)) // an unsplit item's cycles in its core's pipeline
	var total int64
	for i, it := range items {
		parts, drain := e.partitions(it)
		sum := make([]int64, len(parts)+1)
		for k, c := range parts {
			sum[k+1] = sum[k] + c
		}
		pis[i] = daPlanItem{parts: parts, drain: drain, sum: sum}
		n := len(parts)
		whole[i] = e.daPieceCost(e.dma(it.nq*e.g.D*2)*int64(min(1, it.n)), pis[i].mid(0, n), pis[i].drainAt(0, n), e.store(it.nq), 0)
		total += whole[i].run
	}
	var best daPlanned
	for _, cores := range daCoreCounts(maxCores, fixed) {
		for _, fine := range []int{0, 2, 3, 4, 5, 6, 8} { // pieces of about 2/fine of a core's share
			if fine > 0 && !e.splittable {
				break
			}
			split := make([]int, len(items))
			any := false
			for i, it := range items {
				split[i] = 1
				if fine == 0 || it.parts < 2 {
					continue
				}
				target := max(1, 2*total/int64(cores*fine))
				if k := int(min(int64(it.parts), (whole[i].run+target/2)/target)); k > 1 {
					split[i], any = k, true
				}
			}
			if fine > 0 && !any {
				continue
			}
			fronts := []int64{0}
			if fine > 0 {
				fronts = append(fronts, total/int64(cores))
				// And a core's share of phase 1 with what the split adds:
				// a query load per extra piece and, chained, each core's
				// tail (the mean item's drain and store); a first piece
				// that fills it leaves the rest to cut finer beside the
				// whole items.
				var extra, tails int64
				for i, it := range items {
					extra += int64(split[i]-1) * e.dma(it.nq*e.g.D*2)
					tails += whole[i].drain + whole[i].out
				}
				if share := (total+extra)/int64(cores) + tails/int64(len(items)); share != fronts[1] {
					fronts = append(fronts, share)
				}
			}
			for _, front := range fronts {
				if c := daSchedule(e, items, pis, whole, split, front, cores); best.cores == 0 || c.before(best) {
					best = c
				}
			}
		}
	}
	if !e.splittable {
		return best
	}
	// Refine the split item by item: a piece more or one fewer for an
	// item on the most loaded core, kept while the makespan falls.
	for range 64 {
		better := false
		busiest := slices.Index(best.load, slices.Max(best.load))
		for _, pc := range best.assign[busiest] {
			i := best.pieces[pc].item
			for _, k := range []int{best.split[i] + 1, best.split[i] - 1} {
				if k < 1 || k > items[i].parts {
					continue
				}
				split := slices.Clone(best.split)
				split[i] = k
				if c := daSchedule(e, items, pis, whole, split, best.front, best.cores); c.before(best) {
					best, better = c, true
					break
				}
			}
			if better {
				break
			}
		}
		if !better {
			break
		}
	}
	return best
}

// daBalanceSlack is the share of the makespan a plan may give up for a
// better balance: plans within it of each other count as equally fast,
// and the one that keeps its cores the more evenly busy wins (cycles a
// core idles are capacity the launch holds for nothing; the checklist's
// target is 90 % busy). It is small beside what the split itself saves.
const daBalanceSlack = 0.01

// before orders plans: the lesser makespan, where the two differ by more
// than daBalanceSlack; within it the better balance (the least loaded
// core's cycles of both phases over the makespan), then the lesser
// makespan, then the lesser phase-1 maximum and the fewer cores at it
// (steps towards a lesser makespan when several cores share it).
func (p daPlanned) before(q daPlanned) bool {
	if d := p.makespan - q.makespan; float64(max(d, -d)) > daBalanceSlack*float64(min(p.makespan, q.makespan)) {
		return d < 0
	}
	if a, b := float64(p.leastBusy())/float64(max(p.makespan, 1)), float64(q.leastBusy())/float64(max(q.makespan, 1)); a != b {
		return a > b
	}
	if p.makespan != q.makespan {
		return p.makespan < q.makespan
	}
	atMax := func(l []int64) int {
		m, n := slices.Max(l), 0
		for _, v := range l {
			if v == m {
				n++
			}
		}
		return n
	}
	pm, qm := slices.Max(p.load), slices.Max(q.load)
	return pm < qm || (pm == qm && atMax(p.load) < atMax(q.load))
}

// leastBusy is the estimated cycles of the least loaded core, both
// phases.
func (p daPlanned) leastBusy() int64 {
	least := int64(math.MaxInt64)
	for c, l := range p.load {
		if c < len(p.cload) {
			l += p.cload[c]
		}
		least = min(least, l)
	}
	return least
}

// daSchedule spreads the pieces of the items, split as split says, over
// cores by LPT on their estimates, then the split items' combine units:
// the column groups per head that give the least combine makespan.
func daSchedule(e daEstimate, items []daItem, pis []daPlanItem, whole []daJob, split []int, front int64, cores int) daPlanned {
	pl := daPlanned{cores: cores, split: split, front: front, first: make([]int, len(items)), assign: make([][]int, cores)}
	var cost []daJob
	var combines []int
	heads := 0
	for i, it := range items {
		k := split[i]
		if k <= 1 {
			pl.pieces = append(pl.pieces, daPiece{item: i, k0: 0, k1: it.parts})
			cost = append(cost, whole[i])
			continue
		}
		combines = append(combines, i)
		heads += it.nq
		// k pieces of about equal partition counts; the first folds its
		// partitions and stores one record, the others stage a record a
		// partition and store them a UB-full at a time.
		q := e.dma(it.nq * e.g.D * 2)
		rec := e.dma(daRecordBytes(it.nq, e.g.D))
		bounds := pis[i].cuts(k, front)
		pl.first[i] = bounds[1]
		for j := range k {
			k0, k1 := bounds[j], bounds[j+1]
			pl.pieces = append(pl.pieces, daPiece{item: i, k0: k0, k1: k1})
			out, more := rec, int64(0)
			if j > 0 {
				all, last := e.records(it.nq, k1-k0, e.stage)
				out, more = last, all-last
			}
			cost = append(cost, e.daPieceCost(q, pis[i].mid(k0, k1), pis[i].drainAt(k0, k1), out, more))
		}
	}
	pl.load = daLPT(cost, pl.assign)
	pl.makespan = slices.Max(pl.load)
	if len(combines) == 0 {
		return pl
	}
	// The column groups are chosen by the plan's own order (before): the
	// least makespan, and within daBalanceSlack of it the better balance.
	// Phase 2 starts on every core at the SyncAll, so a core left without
	// a combine unit idles through it while the others work; a finer
	// grouping that gives every core a unit costs a few cycles of fixed
	// latency per unit and keeps the cores busy.
	d := e.g.D
	phase1 := pl.makespan
	var best daPlanned
	for _, groups := range daColumnGroups(max(1, min(d, (cores+heads-1)/heads))) {
		var units []daUnit
		var ucost []daJob
		for _, i := range combines {
			it := items[i]
			for h := range it.nq {
				for j := range groups {
					c0, c1 := d*j/groups, d*(j+1)/groups
					units = append(units, daUnit{item: i, h: h, c0: c0, c1: c1})
					ucost = append(ucost, daJob{run: e.unit(c1-c0, it.parts-pl.first[i]+1)})
				}
			}
		}
		byCore := make([][]int, cores)
		cl := daLPT(ucost, byCore)
		c := pl
		c.units, c.combine, c.cload, c.makespan = units, byCore, cl, phase1+slices.Max(cl)
		if best.units == nil || c.before(best) {
			best = c
		}
	}
	return best
}
