package kernels

// The plan's search space (how many cores, how many column groups for
// the combine) and its longest-processing-time assignment of pieces to
// cores.

import (
	"cmp"
	"slices"
)

// daCoreCounts are the core counts daPlan tries: every count up to
// maxCores, or 64 spread over them on a profile of more cores (the plan
// is host work on every launch); only maxCores when it is fixed.
func daCoreCounts(maxCores int, fixed bool) []int {
	if fixed {
		return []int{maxCores}
	}
	const spread = 64
	var out []int
	for j := 1; j <= min(maxCores, spread); j++ {
		c := j
		if maxCores > spread {
			c = (maxCores*j + spread - 1) / spread
		}
		out = append(out, c)
	}
	return out
}

// daColumnGroups are the column groups per head the combine tries: the
// powers of two below most, and most.
func daColumnGroups(most int) []int {
	var out []int
	for g := 1; g < most; g *= 2 {
		out = append(out, g)
	}
	return append(out, most)
}

// daLPT assigns the jobs to len(assign) cores, longest (run, drain and
// store) first, each to the least loaded core (the lowest index on a
// tie), and returns the cores' loads; assign[c] lists core c's jobs in
// order. A core's runs follow one another; each job's store starts when
// its drain after its run is done and the core's store before has left,
// and a core's load is the end of its last store.
func daLPT(jobs []daJob, assign [][]int) []int64 {
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	alone := func(j daJob) int64 { return j.run + j.drain + j.out }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(alone(jobs[b]), alone(jobs[a])) })
	h := daCoreHeap{load: make([]int64, len(assign)), cores: make([]int, len(assign))}
	run, stored := make([]int64, len(assign)), make([]int64, len(assign))
	for c := range h.cores {
		h.cores[c] = c // loads all 0: in index order, a heap already
	}
	for _, i := range order {
		c, j := h.cores[0], jobs[i]
		run[c] += j.run
		stored[c] = max(stored[c], run[c]+j.drain) + j.out
		h.load[c] = stored[c]
		assign[c] = append(assign[c], i)
		h.down(0)
	}
	return h.load
}

// daCoreHeap is a min-heap of cores by load, then index.
type daCoreHeap struct {
	load  []int64
	cores []int
}

func (h daCoreHeap) less(a, b int) bool {
	ca, cb := h.cores[a], h.cores[b]
	return h.load[ca] < h.load[cb] || (h.load[ca] == h.load[cb] && ca < cb)
}

func (h daCoreHeap) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(h.cores) && h.less(l, m) {
			m = l
		}
		if r := l + 1; r < len(h.cores) && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.cores[i], h.cores[m] = h.cores[m], h.cores[i]
		i = m
	}
}
