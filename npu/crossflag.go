package npu

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Cross-core flags of a mixed launch: the cube (AIC) and vector (AIV)
// cores of an Ascend C mixed kernel hand data to each other through GM
// and order the hand-off with CrossCoreSetFlag / CrossCoreWaitFlag
// (mode 2: within a group of one AIC and its AIVs, ascend910b's 1:2). A
// set fires when its pipe has finished every instruction issued to it
// before; a wait holds its pipe until the partner's set fired. Flags are
// counters: each set is consumed by one wait, in order.
//
// In the emulator the blocks of a mixed launch run on goroutines of their
// own (a cooperative launch, so SyncAll works across all of them), and a
// wait really waits for its partner's set, so the consumer reads what the
// producer wrote. A wait that can never be satisfied (its partner ended
// without the set, or every running core waits at a flag or a barrier) is
// a deadlock finding naming which cores wait where, and the waits are
// released: never a hang. A set never waited for is a flag mismatch. The
// cross-core race check (xcore.go) counts a set as a release and a wait
// as an acquire.

// MaxCrossCoreFlags is the number of cross-core flag ids (Ascend C's
// flagId 0–15).
const MaxCrossCoreFlags = 16

// mixedLayout places the blocks of a mixed launch: blocks [0, groups) are
// cube cores, then each group's ratio vector cores.
type mixedLayout struct{ groups, ratio int }

func (m *mixedLayout) kindOf(i int) CoreKind {
	if i < m.groups {
		return AICore
	}
	return VectorCore
}

// partners are the blocks block i exchanges flags with: a cube core's
// vector cores, a vector core's cube core.
func (m *mixedLayout) partners(i int) []int {
	if i < m.groups {
		ps := make([]int, m.ratio)
		for j := range ps {
			ps[j] = m.groups + i*m.ratio + j
		}
		return ps
	}
	return []int{(i - m.groups) / m.ratio}
}

// LaunchMixed runs a mixed kernel: groups cube cores (AICore) and, for
// each, Profile.VectorCores/AICores vector cores (VectorCore), all on
// goroutines of their own as in LaunchCooperative. Blocks [0, groups)
// are the cube cores, block groups + g·ratio + j the j-th vector core of
// group g (Core.Group); kernel branches on Core.Kind, as an Ascend C
// mixed kernel on ASCEND_IS_AIC / ASCEND_IS_AIV. SyncAll spans every
// block; CrossCoreSetFlag/CrossCoreWaitFlag pair the cores of a group.
func (d *Device) LaunchMixed(ctx context.Context, groups int, kernel Kernel) (*Cost, error) {
	ratio := d.prof.VectorCores / max(d.prof.AICores, 1)
	if ratio < 1 {
		return nil, fmt.Errorf("launch mixed: profile %s has %d vector cores for %d cube cores", d.prof.Name, d.prof.VectorCores, d.prof.AICores)
	}
	if err := d.checkLaunch(AICore, groups, kernel); err != nil {
		return nil, fmt.Errorf("launch mixed: %w", err)
	}
	return d.launchCooperative(ctx, AICore, groups*(1+ratio), kernel, &mixedLayout{groups: groups, ratio: ratio})
}

// Group reports, in a mixed launch, the block's group (its cube core's
// index) and its index among the group's vector cores (−1 for the cube
// core); elsewhere (BlockIdx, −1).
func (c *Core) Group() (group, sub int) {
	b, _ := c.ctx.Value(barrierKey{}).(*barrier)
	if b == nil || b.flags.mixed == nil {
		return c.BlockIdx, -1
	}
	m := b.flags.mixed
	if c.BlockIdx < m.groups {
		return c.BlockIdx, -1
	}
	return (c.BlockIdx - m.groups) / m.ratio, (c.BlockIdx - m.groups) % m.ratio
}

// flagKey names a flag channel: sets of block src for block dst with id.
type flagKey struct{ src, dst, id int }

// flagSet is one set not yet waited for: when it fires and the setter's
// cross-core clock then.
type flagSet struct {
	t  int64
	vc []int32
}

// flagWaiter is a block blocked in CrossCoreWaitFlag.
type flagWaiter struct {
	key          flagKey
	pipe         Pipe
	ready, fails bool // its set arrived; its setter ended without it
}

// flagState is the cross-core flags of one mixed launch (under the
// barrier's mutex).
type flagState struct {
	mixed   *mixedLayout
	pending map[flagKey][]flagSet
	waiters []*flagWaiter
}

// flagOf returns the launch's barrier when it is a mixed launch.
func (c *Core) flagOf(op string, p Pipe, id int) (*barrier, error) {
	b, _ := c.ctx.Value(barrierKey{}).(*barrier)
	if b == nil || b.flags.mixed == nil {
		return nil, fmt.Errorf("%s: not a mixed launch (use Device.LaunchMixed)", op)
	}
	if p >= numPipes || id < 0 || id >= MaxCrossCoreFlags {
		return nil, fmt.Errorf("%s(%s, %d): want a pipe and an id in [0, %d)", op, p, id, MaxCrossCoreFlags)
	}
	return b, nil
}

// CrossCoreSetFlag signals flag id from pipe p to the block's partners
// (a cube core's vector cores, a vector core's cube core): it fires when p
// has finished every instruction issued to it before, and everything the
// block issued before it is ordered before the partner's matching wait
// (Ascend C's CrossCoreSetFlag<2, p>(id)).
func (c *Core) CrossCoreSetFlag(p Pipe, id int) error {
	b, err := c.flagOf("CrossCoreSetFlag", p, id)
	if err != nil {
		return err
	}
	s := &c.sch
	// What the set covers: on an explicit core, p's instructions and
	// those its events ordered before p; on an implicit one, all.
	cv := cover(s.seq)
	if s.mode == SyncExplicit {
		cv = s.vc[p]
		cv[p] = s.seq[p]
	}
	vc := slices.Clone(s.x.release(c.BlockIdx, c.BlockDim, cv))
	t := s.free[p]
	b.mu.Lock()
	defer b.mu.Unlock()
	fs := &b.flags
	if fs.pending == nil {
		fs.pending = map[flagKey][]flagSet{}
	}
	for _, dst := range fs.mixed.partners(c.BlockIdx) {
		k := flagKey{src: c.BlockIdx, dst: dst, id: id}
		fs.pending[k] = append(fs.pending[k], flagSet{t: t, vc: vc})
		for _, w := range fs.waiters {
			if w.key == k {
				w.ready = true
			}
		}
	}
	b.cond.Broadcast()
	return nil
}

// CrossCoreWaitFlag holds pipe p until each partner's oldest unwaited
// CrossCoreSetFlag(id) fired (a cube core waits for all its vector
// cores), and orders what they issued before it before what this block
// issues after (Ascend C's CrossCoreWaitFlag(id)). A wait no set can
// satisfy is a deadlock finding; the block goes on.
func (c *Core) CrossCoreWaitFlag(p Pipe, id int) error {
	b, err := c.flagOf("CrossCoreWaitFlag", p, id)
	if err != nil {
		return err
	}
	s := &c.sch
	for _, src := range b.flags.mixed.partners(c.BlockIdx) {
		set := b.waitFlag(flagKey{src: src, dst: c.BlockIdx, id: id}, p)
		s.free[p] = max(s.free[p], set.t)
		s.x.acquire(c.BlockDim, set.vc)
	}
	return nil
}

// waitFlag blocks until a set of k is pending and takes it. When none
// will come (a deadlock, reported) it returns at once, or, when the
// setter ended, with the clocks of the blocks that ended: the emulator
// released the wait after them, so what they wrote is not also a race.
func (b *barrier) waitFlag(k flagKey, p Pipe) flagSet {
	b.mu.Lock()
	defer b.mu.Unlock()
	fs := &b.flags
	var w *flagWaiter
	defer func() {
		if w != nil {
			fs.waiters = slices.DeleteFunc(fs.waiters, func(x *flagWaiter) bool { return x == w })
		}
	}()
	for {
		if q := fs.pending[k]; len(q) > 0 {
			fs.pending[k] = q[1:]
			return q[0]
		}
		if w != nil && w.fails {
			return flagSet{vc: slices.Clone(b.ended2)}
		}
		if b.broken {
			return flagSet{}
		}
		if w == nil {
			if slices.Contains(b.ended, k.src) {
				b.findings = append(b.findings, flagNeverSet(k, p))
				return flagSet{vc: slices.Clone(b.ended2)}
			}
			w = &flagWaiter{key: k, pipe: p}
			fs.waiters = append(fs.waiters, w)
			b.stuck()
			continue
		}
		b.cond.Wait()
	}
}

// flagNeverSet is the deadlock of a wait whose setter ended without the
// set.
func flagNeverSet(k flagKey, p Pipe) Finding {
	return Finding{Kind: KindDeadlock, Core: k.dst, Pipe: p, Buffer: fmt.Sprintf("flag %d", k.id),
		Message: fmt.Sprintf("core %d pipe %s waits forever in CrossCoreWaitFlag(%d): core %d ended without CrossCoreSetFlag(%d)", k.dst, p, k.id, k.src, k.id)}
}

// sourceEnded fails the waits for block idx's sets when it ends without
// them (mu held).
func (fs *flagState) sourceEnded(b *barrier, idx int) {
	woke := false
	for _, w := range fs.waiters {
		if w.key.src == idx && !w.ready && !w.fails {
			w.fails = true
			b.findings = append(b.findings, flagNeverSet(w.key, w.pipe))
			woke = true
		}
	}
	if woke {
		b.cond.Broadcast()
	}
}

// stuck reports a deadlock when every running block waits, at the
// barrier or at a flag no running block will set, and releases them all
// (mu held): the device would hang there.
func (b *barrier) stuck() {
	var blocked []*flagWaiter
	for _, w := range b.flags.waiters {
		if !w.ready && !w.fails {
			blocked = append(blocked, w)
		}
	}
	if b.broken || len(blocked) == 0 || b.arrived+len(blocked) < b.live {
		return
	}
	slices.SortFunc(blocked, func(x, y *flagWaiter) int { return x.key.dst - y.key.dst })
	var where []string
	for _, w := range blocked {
		where = append(where, fmt.Sprintf("core %d pipe %s in CrossCoreWaitFlag(%d) for core %d", w.key.dst, w.pipe, w.key.id, w.key.src))
	}
	if len(b.waiting) > 0 {
		at := slices.Sorted(slices.Values(b.waiting))
		names := make([]string, len(at))
		for i, x := range at {
			names[i] = fmt.Sprint(x)
		}
		where = append(where, fmt.Sprintf("cores %s at SyncAll #%d", strings.Join(names, ", "), b.gen+1))
	}
	first := blocked[0]
	b.findings = append(b.findings, Finding{Kind: KindDeadlock, Core: first.key.dst, Pipe: first.pipe, Buffer: fmt.Sprintf("flag %d", first.key.id),
		Message: fmt.Sprintf("core %d waits forever: every running core waits (%s) and none sets what the others wait for (a cross-core flag or barrier mismatch)",
			first.key.dst, strings.Join(where, "; "))})
	b.broken = true
	b.cond.Broadcast()
}

// unwaited reports the sets left pending when the launch ends.
func (fs *flagState) unwaited() []Finding {
	var out []Finding
	for k, q := range fs.pending {
		if len(q) > 0 {
			out = append(out, Finding{Kind: KindFlag, Core: k.src, Pipe: PipeAll, Buffer: fmt.Sprintf("flag %d", k.id),
				Message: fmt.Sprintf("core %d: CrossCoreSetFlag(%d) for core %d is never waited for (%d set(s) left when the kernel ends)", k.src, k.id, k.dst, len(q))})
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return strings.Compare(a.Message, b.Message) })
	return out
}
