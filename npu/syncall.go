package npu

import (
	"context"
	"fmt"
	"slices"
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
	// The cross-core clocks (xcore.go): acc joins the clocks of the
	// current barrier's arrivals, joined is the last completed barrier's
	// join (a fresh slice each time, read by its waiters), ended the join
	// of the clocks of blocks that ended.
	acc, joined, ended2 []int32
	// flags are the cross-core flags of a mixed launch (crossflag.go).
	flags flagState
}

func newBarrier(n int) *barrier {
	b := &barrier{live: n, passed: make([]int, n)}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// wait is block idx's arrival at its next barrier at cycle t with clock
// vc (nil: an arrival that orders nothing); it returns the release cycle
// and the join of the arrivals' clocks (nil when the barrier is broken).
func (b *barrier) wait(idx int, t int64, vc []int32) (int64, []int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.broken {
		return t, nil
	}
	gen := b.gen
	b.passed[idx]++
	b.arrived++
	b.at = max(b.at, t)
	b.acc = joinClock(b.acc, vc)
	b.waiting = append(b.waiting, idx)
	if b.arrived == b.live {
		b.skipped()
		b.complete()
		return b.release, b.joined
	}
	b.stuck()
	for b.gen == gen && !b.broken {
		b.cond.Wait()
	}
	if b.gen == gen {
		return t, nil
	}
	return b.release, b.joined
}

// joinClock returns the entry-wise maximum of acc and vc (acc grown as
// needed).
func joinClock(acc, vc []int32) []int32 {
	for len(acc) < len(vc) {
		acc = append(acc, 0)
	}
	for i, v := range vc {
		acc[i] = max(acc[i], v)
	}
	return acc
}

// complete releases the current barrier (mu held).
func (b *barrier) complete() {
	b.release = b.at
	b.gen++
	b.arrived, b.at = 0, 0
	b.joined, b.acc = joinClock(b.acc, b.ended2), nil
	b.waiting = b.waiting[:0]
	b.cond.Broadcast()
}

// endClock folds the clock of a block that ended into every later
// barrier's join: the emulator releases a barrier a block skipped when
// that block ends, so what the block wrote is ordered before the release
// (the skipped barrier is the deadlock finding, not also a race).
func (b *barrier) endClock(vc []int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ended2 = joinClock(b.ended2, vc)
}

// done records that block idx ended; if the blocks still running all
// wait at a barrier idx never reached, they are released with a deadlock
// finding.
func (b *barrier) done(idx int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.live--
	b.ended = append(b.ended, idx)
	b.flags.sourceEnded(b, idx)
	if b.arrived > 0 && b.arrived == b.live && !b.broken {
		b.skipped()
		b.complete()
		return
	}
	b.stuck()
}

// skipped reports, when every running block waits at the current
// barrier, the blocks that ended without reaching it (mu held): the
// device would hang there.
func (b *barrier) skipped() {
	var gone []string
	first := -1
	// In block order: which of several skipping blocks ended first is
	// the goroutines' timing, not the kernel's.
	for _, e := range slices.Sorted(slices.Values(b.ended)) {
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
	r, joined := b.wait(c.BlockIdx, t, s.x.release(c.BlockIdx, c.BlockDim, s.seq))
	s.x.acquire(c.BlockDim, joined)
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
	s.sVC = vc // the scalar waits at the barrier too
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
	return d.launchCooperative(ctx, kind, blockDim, kernel, nil)
}

// launchCooperative runs a cooperative launch of blockDim blocks, of the
// kinds mixed gives (nil: all of kind).
func (d *Device) launchCooperative(ctx context.Context, kind CoreKind, blockDim int, kernel Kernel, mixed *mixedLayout) (*Cost, error) {
	b := newBarrier(blockDim)
	b.flags.mixed = mixed
	ctx = context.WithValue(ctx, barrierKey{}, b)
	run := func(c *Core) error {
		if mixed != nil {
			c.kind = mixed.kindOf(c.BlockIdx)
		}
		// The block's end is a release (barrier.endClock), before done
		// tells the barrier it ended.
		defer func() {
			if c.sch.x.tracked {
				b.endClock(c.sch.x.release(c.BlockIdx, c.BlockDim, c.sch.seq))
			}
		}()
		return kernel(c)
	}
	cost, err := d.launch(ctx, kind, blockDim, run, blockDim, true, func(i int) { b.done(i) })
	if err != nil {
		return nil, err
	}
	// The barrier's findings were made by whichever goroutine came last:
	// sorted, they do not depend on the order the blocks ran in.
	slices.SortStableFunc(b.findings, func(x, y Finding) int {
		if x.Core != y.Core {
			return x.Core - y.Core
		}
		return strings.Compare(x.Message, y.Message)
	})
	cost.Findings = mergeFindings(slices.Concat(cost.Findings, b.findings, b.flags.unwaited()))
	return cost, nil
}

// SyncAllSkipped is what the emulator runs for a kernel whose SyncAll is
// missing, so that its numbers stay deterministic: the block waits on the
// host for the others as SyncAll would (its later reads see what they
// wrote before, the one interleaving a sequential emulator runs), but the
// modelled device gets nothing of the barrier: no pipe waits, no cycles,
// and no cross-core order, so every read of another core's data after it
// is an xcore-race finding. It exists for fault variants (a cross-core
// combine without its barrier); every block of the launch must call it
// where the barrier would be, as SyncAll.
func (c *Core) SyncAllSkipped() error {
	b, _ := c.ctx.Value(barrierKey{}).(*barrier)
	if b == nil {
		return fmt.Errorf("SyncAllSkipped: not a cooperative launch (use Device.LaunchCooperative)")
	}
	b.wait(c.BlockIdx, 0, nil)
	return nil
}
