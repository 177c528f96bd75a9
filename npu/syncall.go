package npu

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// SyncAll across the cores of a launch. On the device SyncAll is a
// barrier every core of the kernel reaches before any goes on: data one
// core wrote to GM before it is visible to every core after it (the
// combine step of a split reduction). The emulator runs a launch that
// synchronises its cores as a cooperative launch (LaunchCooperative):
// every block on a goroutine of its own, so that SyncAll really waits.
// In the schedule, every pipe of every core resumes at the latest
// arrival (plus nothing: the barrier itself is free).
//
// A core that ends without reaching a barrier the others wait at would
// hang the device: the emulator releases the waiting cores and reports a
// deadlock finding naming which cores wait at which barrier and which
// ended, never a hang.

// barrier is the SyncAll state of one cooperative launch.
type barrier struct {
	mu      sync.Mutex
	cond    *sync.Cond
	live    int   // blocks still running
	arrived int   // blocks waiting at the current barrier
	gen     int   // barriers completed
	at      int64 // latest arrival at the current barrier, in cycles
	release int64 // the release time of the barrier last completed
	waiting []int // blocks waiting at the current barrier
	passed  []int // barriers each block arrived at
	ended   []int // blocks that ended
	// broken is set when a block ended while others waited: the later
	// barriers release at once (the device would have hung already).
	broken   bool
	findings []Finding
}

func newBarrier(n int) *barrier {
	b := &barrier{live: n, passed: make([]int, n)}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// wait is block idx's arrival at its next barrier at cycle t; it returns
// the release cycle.
func (b *barrier) wait(idx int, t int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken {
		return t
	}
	gen := b.gen
	b.passed[idx]++
	b.arrived++
	b.at = max(b.at, t)
	b.waiting = append(b.waiting, idx)
	if b.arrived == b.live {
		b.skipped()
		b.complete()
		return b.release
	}
	for b.gen == gen {
		b.cond.Wait()
	}
	return b.release
}

// complete releases the current barrier (mu held).
func (b *barrier) complete() {
	b.release = b.at
	b.gen++
	b.arrived, b.at = 0, 0
	b.waiting = b.waiting[:0]
	b.cond.Broadcast()
}

// done records that block idx ended; if the blocks still running all
// wait at a barrier idx never reached, they are released with a deadlock
// finding.
func (b *barrier) done(idx int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.live--
	b.ended = append(b.ended, idx)
	if b.arrived > 0 && b.arrived == b.live && !b.broken {
		b.skipped()
		b.complete()
	}
}

// skipped reports, when every running block waits at the current
// barrier, the blocks that ended without reaching it (mu held): the
// device would hang there.
func (b *barrier) skipped() {
	var gone []string
	first := -1
	for _, e := range b.ended {
		if b.passed[e] <= b.gen {
			gone = append(gone, fmt.Sprint(e))
			if first < 0 {
				first = e
			}
		}
	}
	if len(gone) == 0 {
		return
	}
	w := append([]int(nil), b.waiting...)
	sort.Ints(w)
	names := make([]string, len(w))
	for i, x := range w {
		names[i] = fmt.Sprint(x)
	}
	b.findings = append(b.findings, Finding{Kind: KindDeadlock, Core: first, Pipe: PipeAll,
		Message: fmt.Sprintf("core %s ended without reaching SyncAll #%d, at which cores %s wait forever (a barrier skipped)", strings.Join(gone, ", "), b.gen+1, strings.Join(names, ", "))})
	b.broken = true
}

type barrierKey struct{}

// SyncAll is the barrier across the launch's cores (Ascend C's
// SyncAll): it returns when every core of the launch reached it, and
// every pipe of this core resumes after the latest arrival. Only a
// cooperative launch (LaunchCooperative) has the barrier; elsewhere it is
// an error, as a kernel that needs its cores to meet cannot run with
// fewer goroutines than blocks.
func (c *Core) SyncAll() error {
	b, _ := c.ctx.Value(barrierKey{}).(*barrier)
	if b == nil {
		return fmt.Errorf("SyncAll: not a cooperative launch (use Device.LaunchCooperative)")
	}
	s := &c.sch
	var t int64
	for _, f := range s.free {
		t = max(t, f)
	}
	r := b.wait(c.BlockIdx, t)
	c.cost.BarrierWaitCycles += max(r-t, 0)
	var vc [numPipes]int32
	for q := range numPipes {
		for p := range numPipes {
			vc[p] = max(vc[p], s.vc[q][p])
		}
	}
	for q := range numPipes {
		s.free[q] = max(r, s.free[q])
		s.vc[q] = vc
	}
	if s.mode == SyncImplicit {
		s.fence = max(s.fence, r)
	}
	return nil
}

// LaunchCooperative is LaunchOn for a kernel whose cores meet at SyncAll:
// every block runs on a goroutine of its own (a SyncAll waits for all of
// them), with the same costs, findings and trace as LaunchOn.
func (d *Device) LaunchCooperative(ctx context.Context, kind CoreKind, blockDim int, kernel Kernel) (*Cost, error) {
	if err := d.checkLaunch(kind, blockDim, kernel); err != nil {
		return nil, err
	}
	b := newBarrier(blockDim)
	ctx = context.WithValue(ctx, barrierKey{}, b)
	cost, err := d.launch(ctx, kind, blockDim, kernel, blockDim, func(i int) { b.done(i) })
	if err != nil {
		return nil, err
	}
	cost.Findings = mergeFindings(append(cost.Findings, b.findings...))
	return cost, nil
}
