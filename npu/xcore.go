package npu

import (
	"fmt"
	"math"
	"slices"

	"github.com/npuverify/npuverify/tensor"
)

// The cross-core race check. The cores of a launch share GM, and on the
// device nothing orders one core's DMA after another's but SyncAll and
// the cross-core flags (crossflag.go): a core that reads GM bytes another
// core of the launch writes, with neither access ordered before the
// other, reads old or new bytes depending on timing. The emulator runs
// every block to completion on the host in some order, so such a read
// gets one deterministic answer and the bug stays invisible; this check
// reports it as xcore-race, naming both cores, both instructions, the
// tensor and the byte range. Reads of bytes another core wrote before a
// barrier both passed (or before a flag the reader waited for) are fine.
// Two blocks writing the same GM bytes with neither write ordered before
// the other is a gm-overlap, checked the same way (a write after a
// barrier over bytes another block wrote before it is fine).
//
// Ordering is tracked with vector clocks over the launch's blocks, one
// entry per block counting that block's releases (a SyncAll arrival, a
// CrossCoreSetFlag, the block's end while others wait at a barrier). A
// block's instructions between two of its synchronisations form a
// segment; a GM access records its segment, and the block keeps one
// clock snapshot per segment and, per release, which instructions of each
// pipe it covers, so the memory is one record per DMA instruction plus a
// clock per synchronisation, never per byte. A write of block A is
// ordered before a read of block B when B's clock at the read knows the
// first release of A that covers the write (B passed a barrier A arrived
// at after the write, or waited for A's flag set after it); the reverse
// order likewise. A SyncAll arrival (every pipe drained) and a block's
// end cover everything issued before them. A flag set on pipe p of an
// explicit core covers p's earlier instructions and those of other pipes
// its events ordered before p (a store on MTE3 with no hand-off to the
// set's pipe V is not covered: the set may fire before it lands); on an
// implicit core, everything issued before it. The acquiring side is
// taken in program order: what a block issues after a wait counts as
// after it, whatever its pipe.
//
// Both sync modes are checked: the cross-core order is the kernel's own
// in either (an implicit-mode core derives only its pipes' order). The
// check runs when the launch ends, over the blocks' records in block
// order, so its findings do not depend on how the goroutines ran.

// KindXCoreRace is a read of GM bytes that another core of the launch
// writes with no SyncAll or cross-core flag ordering the two.
const KindXCoreRace = "xcore-race"

// maxRaceFindings bounds the raw cross-core findings of one launch before
// mergeFindings folds those of one instruction pair into one.
const maxRaceFindings = 1024

// gmRec is one GM access of a block: rows byte ranges [lo+k·stride,
// hi+k·stride) of the tensor data at key, k < rows, made by inst in the
// block's segment seg.
type gmRec struct {
	key          uintptr
	t            *tensor.Tensor // named in findings
	lo, hi       int
	rows, stride int
	write        bool
	seg          int32
	inst         instInfo
}

// gmTensorName ties a GM key to its tensor, to name it in findings.
type gmTensorName struct {
	key uintptr
	t   *tensor.Tensor
}

// xcoreState is one block's side of the check: its GM accesses, its
// clock and the clock of each of its segments.
type xcoreState struct {
	recs    []gmRec
	names   []gmTensorName
	vc      []int32 // per launch block: releases of it this block knows of
	snaps   []int32 // the clock of segments 1.., len(vc) entries each
	rels    []cover // per release of this block, what it covers
	seg     int32
	tracked bool // record accesses (the launch sanitizes)
}

// reset starts a block; the slices keep their storage, cleared of the
// tensors they named (a pooled core must not keep a launch's GM alive).
func (x *xcoreState) reset(on bool) {
	clear(x.recs)
	clear(x.names)
	*x = xcoreState{recs: x.recs[:0], names: x.names[:0], vc: x.vc[:0], snaps: x.snaps[:0], rels: x.rels[:0], tracked: on}
}

// note records GM access g of inst.
func (x *xcoreState) note(g gmAccess, inst instInfo) {
	if !x.tracked {
		return
	}
	var t *tensor.Tensor
	for i := len(x.names) - 1; i >= 0; i-- { // the copy's tensor was noted last
		if x.names[i].key == g.key {
			t = x.names[i].t
			break
		}
	}
	x.recs = append(x.recs, gmRec{key: g.key, t: t, lo: g.lo, hi: g.hi, rows: max(g.rows, 1), stride: g.stride, write: g.write, seg: x.seg, inst: inst})
}

// noteTensor remembers which tensor the GM bytes gm belong to.
func (x *xcoreState) noteTensor(gm []byte, t *tensor.Tensor) {
	if !x.tracked || len(gm) == 0 {
		return
	}
	k := gmKey(gm)
	for i, n := range x.names {
		if n.key == k {
			x.names[i], x.names[len(x.names)-1] = x.names[len(x.names)-1], n
			return
		}
	}
	x.names = append(x.names, gmTensorName{key: k, t: t})
}

// clock returns the block's clock for a launch of dim blocks, allocating
// it at the first synchronisation.
func (x *xcoreState) clock(dim int) []int32 {
	if len(x.vc) != dim {
		x.vc = append(x.vc[:0], make([]int32, dim)...)
	}
	return x.vc
}

// cover is what a release covers: per pipe, the instructions up to that
// sequence number.
type cover [numPipes]int32

// release counts a release of block self (a barrier arrival, a flag
// set): the instructions it covers are ordered before whoever learns of
// it.
func (x *xcoreState) release(self, dim int, cv cover) []int32 {
	vc := x.clock(dim)
	vc[self]++
	if x.tracked {
		x.rels = append(x.rels, cv)
	}
	x.newSeg()
	return vc
}

// acquire joins what another block's release told (its clock then).
func (x *xcoreState) acquire(dim int, other []int32) {
	vc := x.clock(dim)
	for i, v := range other {
		if i < len(vc) {
			vc[i] = max(vc[i], v)
		}
	}
	x.newSeg()
}

// newSeg starts a segment with the block's current clock.
func (x *xcoreState) newSeg() {
	if !x.tracked {
		return
	}
	x.seg++
	x.snaps = append(x.snaps, x.vc...)
}

// xcoreBlock is one finished block's records and clocks.
type xcoreBlock struct {
	core  int
	recs  []gmRec
	snaps []int32
	rels  []cover
	dim   int // entries per snapshot (0: the block never synchronised)
}

// result clones the block's state for the launch's check.
func (x *xcoreState) result(core int) xcoreBlock {
	return xcoreBlock{core: core, recs: slices.Clone(x.recs), snaps: slices.Clone(x.snaps), rels: slices.Clone(x.rels), dim: len(x.vc)}
}

// knows is what block b in segment seg knows of block other's releases.
func (b *xcoreBlock) knows(seg int32, other int) int32 {
	if seg == 0 || b.dim == 0 || other >= b.dim {
		return 0
	}
	return b.snaps[int(seg-1)*b.dim+other]
}

// released is the count of block b's releases up to the first that
// covers access r (a release after r's segment whose cover of r's pipe
// reaches it), or MaxInt32 when none does.
func (b *xcoreBlock) released(r *gmRec) int32 {
	for k := b.knows(r.seg, b.core); int(k) < len(b.rels); k++ {
		if b.rels[k][r.inst.p] >= r.inst.seq {
			return k + 1
		}
	}
	return math.MaxInt32
}

// ordered reports whether access r of block rb is ordered before access
// w of block wb: wb's clock at w knows the release of rb that covers r.
func ordered(rb *xcoreBlock, r *gmRec, wb *xcoreBlock, w *gmRec) bool {
	return wb.knows(w.seg, rb.core) >= rb.released(r)
}

// xcoreAccess is a record with its block, for the check's sort.
type xcoreAccess struct {
	b *xcoreBlock
	r *gmRec
}

func (a xcoreAccess) end() int { return a.r.lo + (a.r.rows-1)*a.r.stride + a.r.hi - a.r.lo }

// xcoreRaces reports every read of GM bytes that another block of the
// launch writes, and every GM byte two blocks write, with neither access
// ordered before the other.
func xcoreRaces(blocks []xcoreBlock) []Finding {
	// Most launches neither read a tensor they write (inputs in, outputs
	// out) nor write one byte twice: they are done with a look at the few
	// written tensors and their writers.
	type writer struct {
		key  uintptr
		core int // -1: several blocks
	}
	var written []writer
	for i := range blocks {
		for _, r := range blocks[i].recs {
			if !r.write {
				continue
			}
			if j := slices.IndexFunc(written, func(w writer) bool { return w.key == r.key }); j < 0 {
				written = append(written, writer{r.key, blocks[i].core})
			} else if written[j].core != blocks[i].core {
				written[j].core = -1
			}
		}
	}
	if !slices.ContainsFunc(written, func(w writer) bool { return w.core < 0 }) && !slices.ContainsFunc(blocks, func(b xcoreBlock) bool {
		return slices.ContainsFunc(b.recs, func(r gmRec) bool {
			return !r.write && slices.ContainsFunc(written, func(w writer) bool { return w.key == r.key && w.core != b.core })
		})
	}) {
		return nil
	}
	// Tensors in order of first access over the blocks in block order:
	// the findings' order does not depend on where tensors live.
	ids := map[uintptr]int{}
	var reads, writes [][]xcoreAccess
	var names []*tensor.Tensor // by id
	for bi := range blocks {
		b := &blocks[bi]
		for ri := range b.recs {
			r := &b.recs[ri]
			id, ok := ids[r.key]
			if !ok {
				id = len(names)
				ids[r.key] = id
				names = append(names, r.t)
				reads, writes = append(reads, nil), append(writes, nil)
			}
			if r.write {
				writes[id] = append(writes[id], xcoreAccess{b: b, r: r})
			} else {
				reads[id] = append(reads[id], xcoreAccess{b: b, r: r})
			}
		}
	}
	var out []Finding
	for id := range names {
		if len(writes[id]) == 0 {
			continue
		}
		out = racesOf(out, names[id], reads[id], writes[id])
		if len(out) >= maxRaceFindings {
			break
		}
	}
	return out
}

// racesOf appends the races between reads rs and writes ws of one
// tensor t, and between two writes: a sweep over both sorted by their
// first byte.
func racesOf(out []Finding, t *tensor.Tensor, rs, ws []xcoreAccess) []Finding {
	byStart := func(a, b xcoreAccess) int {
		if a.r.lo != b.r.lo {
			return a.r.lo - b.r.lo
		}
		if a.b.core != b.b.core {
			return a.b.core - b.b.core
		}
		return int(a.r.inst.seq) - int(b.r.inst.seq)
	}
	slices.SortStableFunc(rs, byStart)
	slices.SortStableFunc(ws, byStart)
	// Writes against the writes before them in the order.
	var active []xcoreAccess
	for _, w := range ws {
		active = slices.DeleteFunc(active, func(v xcoreAccess) bool { return v.end() <= w.r.lo })
		for _, v := range active {
			if len(out) >= maxRaceFindings {
				return out
			}
			if f, ok := conflict(t, w, v); ok {
				out = append(out, f)
			}
		}
		active = append(active, w)
	}
	// Reads against the writes.
	active = active[:0]
	next := 0
	for _, r := range rs {
		for next < len(ws) && ws[next].r.lo < r.end() {
			active = append(active, ws[next])
			next++
		}
		active = slices.DeleteFunc(active, func(w xcoreAccess) bool { return w.end() <= r.r.lo })
		for _, w := range active {
			if len(out) >= maxRaceFindings {
				return out
			}
			if f, ok := conflict(t, r, w); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

// conflict is the finding of access a against write w of another block
// when they share a byte and neither is ordered before the other.
func conflict(t *tensor.Tensor, a, w xcoreAccess) (Finding, bool) {
	if a.b.core == w.b.core {
		return Finding{}, false
	}
	lo, hi, ok := overlap(a.r, w.r)
	if !ok || ordered(w.b, w.r, a.b, a.r) || ordered(a.b, a.r, w.b, w.r) {
		return Finding{}, false
	}
	return raceFinding(t, a, w, lo, hi), true
}

// raceFinding names a race: access a's core, pipe and instruction, the
// writer's, the tensor and the bytes; a write against a write is a
// gm-overlap.
func raceFinding(t *tensor.Tensor, a, w xcoreAccess, lo, hi int) Finding {
	name := "GM"
	if t != nil {
		name = "GM " + t.String()
	}
	f := Finding{Kind: KindXCoreRace, Core: a.b.core, Pipe: a.r.inst.p, Buffer: name, Lo: lo, Hi: hi, Inst: a.r.inst.String(), Other: w.r.inst.String()}
	if a.r.write {
		f.Kind = KindGMOverlap
		f.Message = fmt.Sprintf("%s: core %d %s and core %d %s both write bytes [%d, %d) of %s, with no SyncAll or cross-core flag ordering the two",
			KindGMOverlap, a.b.core, a.r.inst, w.b.core, w.r.inst, lo, hi, name)
		return f
	}
	f.Message = fmt.Sprintf("%s: core %d %s reads bytes [%d, %d) of %s that core %d %s writes, with no SyncAll or cross-core flag ordering the two",
		KindXCoreRace, a.b.core, a.r.inst, lo, hi, name, w.b.core, w.r.inst)
	return f
}

// overlap returns the first bytes two accesses share.
func overlap(a, b *gmRec) (int, int, bool) {
	if a.rows > b.rows {
		a, b = b, a
	}
	for k := range a.rows {
		if lo, hi, ok := rowsHit(b, a.lo+k*a.stride, a.hi+k*a.stride); ok {
			return lo, hi, true
		}
	}
	return 0, 0, false
}

// rowsHit returns the first bytes of [x, y) that access p touches.
func rowsHit(p *gmRec, x, y int) (int, int, bool) {
	w := p.hi - p.lo
	k := 0
	if p.rows > 1 && p.stride > 0 {
		// The first row k whose end lo+k·stride+w passes x.
		k = max(0, floorDiv(x-p.lo-w, p.stride)+1)
		if k >= p.rows {
			return 0, 0, false
		}
	}
	s := p.lo + k*p.stride
	lo, hi := max(x, s), min(y, s+w)
	return lo, hi, lo < hi
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
