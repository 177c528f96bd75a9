package kernels

// L1 panel reuse: which operand's leading k-panels a core keeps resident
// across the blocks that share them, how many fit beside the ping-pong
// slots, and what that saves in GM bytes (GEMMTiling.Reuse).

import "github.com/npuverify/npuverify/npu"

// reuseRows is the rows (ReuseA: baseM) or columns (ReuseB: baseN) of a
// resident panel of side.
func (t GEMMTiling) reuseRows(side string) int {
	if side == ReuseB {
		return t.BaseN
	}
	return t.BaseM
}

// l1Need is the L1 a core takes with r panels of side resident: the
// ping-pong slots of the other operand, those of side unless all its
// panels are resident, and the resident panels, each as deep as its k.
func (t GEMMTiling) l1Need(side string, r int) int {
	size := t.In.Size()
	slots := t.BufferNum * (t.BaseM + t.BaseN) * t.panelK() * size
	if r >= t.panels() {
		slots -= t.BufferNum * t.reuseRows(side) * t.panelK() * size
	}
	for pi := range r {
		slots += t.reuseRows(side) * t.panelKC(pi) * size
	}
	return slots
}

// chooseReuse sets Reuse, ResidentPanels and L1Bytes: the side (want, or
// either when want is "") whose resident panels, as many as L1 holds
// beside the ping-pong slots, save the most GM bytes over the launch
// (reuseSaving). The depth (StepK) is kept: the panels take only the L1
// the slots leave, so the pipeline the cost model chose for a block is
// unchanged, and a block that finds its panels resident only loads less.
//
// With shrink (the depth cannot hide a panel's transfers behind the cube
// whatever it is: stepFor's fallback), a side that L1 cannot hold for all
// of K at this depth may be held at a smaller one: the largest StepK at
// which either side fits whole is taken. A block that finds its panels
// resident then loads one operand instead of two, which its cube hides;
// the shallower panels also shorten the first load, which nothing hides.
func (t *GEMMTiling) chooseReuse(prof npu.Profile, want string, shrink bool) {
	if want == ReuseNone {
		return
	}
	if shrink {
		step := t.StepK
		for s := step; s >= 1; s-- {
			t.StepK = s
			if t.pickReuse(prof, want, true) {
				return
			}
		}
		t.StepK = step
	}
	t.pickReuse(prof, want, false)
}

// pickReuse sets Reuse, ResidentPanels and L1Bytes at the tiling's depth
// as chooseReuse describes, with whole set only if all of a side's
// panels fit (whole); it reports whether it chose a side.
func (t *GEMMTiling) pickReuse(prof npu.Profile, want string, whole bool) bool {
	best, bestR, bestSaved := "", 0, int64(0)
	for _, side := range []string{ReuseA, ReuseB} {
		if want != "" && want != side {
			continue
		}
		r := 0
		for r < t.panels() && t.l1Need(side, r+1) <= prof.L1Bytes {
			r++
		}
		if whole && r < t.panels() {
			continue
		}
		if saved := t.reuseSaving(side, r); r > 0 && saved > bestSaved {
			best, bestR, bestSaved = side, r, saved
		}
	}
	if best == "" {
		return false
	}
	t.Reuse, t.ResidentPanels, t.L1Bytes = best, bestR, t.l1Need(best, bestR)
	return true
}

// reuseSaving is the GM bytes r resident panels of side save over the
// launch: each block that follows a block sharing them (coreBlocks'
// order under that side) does not load their real k of its real rows
// (ReuseA) or columns (ReuseB).
func (t GEMMTiling) reuseSaving(side string, r int) int64 {
	u := t
	u.Reuse = side
	kres := min(t.K, r*t.depth())
	var saved int64
	for i := range u.BlockDim {
		blocks := u.coreBlocks(i)
		for j := 1; j < len(blocks); j++ {
			if !u.reuses(blocks[j-1], blocks[j]) {
				continue
			}
			rows := blocks[j].mr
			if side == ReuseB {
				rows = blocks[j].nr
			}
			saved += int64(rows) * int64(kres) * int64(t.In.Size())
		}
	}
	return saved
}

// reuses reports whether block b shares the reused operand's panels
// with block prev, the one the core ran before it (same m0 under
// ReuseA, same n0 under ReuseB): then b finds the resident panels in L1.
func (t GEMMTiling) reuses(prev, b gemmBlock) bool {
	switch t.Reuse {
	case ReuseA:
		return prev.m0 == b.m0
	case ReuseB:
		return prev.n0 == b.n0
	}
	return false
}
