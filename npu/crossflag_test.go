package npu

import (
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/tensor"
)

// mixedProducer is a small mixed kernel: each cube core writes its
// group's n fp32 values (group + 1) to ws[g·n:(g+1)·n) and signals its
// vector cores from MTE3; each vector core waits on MTE2, reads them and
// stores their double to out at its own slot. cubeID and vecID are the
// flag ids the two sides use (a mismatch is a deadlock); late is a second
// write of the cube core after its set, which the vector cores read
// after a barrier that orders nothing (SyncAllSkipped): the flag orders
// the first write only.
func mixedProducer(ws, late, out *tensor.Tensor, n, cubeID, vecID int) Kernel {
	return func(c *Core) error {
		g, sub := c.Group()
		b, _ := c.AllocUB(4 * n)
		if c.Kind() == AICore {
			if err := c.Duplicate(tensor.Float32, b, float64(g+1), n); err != nil {
				return err
			}
			if err := c.DataCopyOut(ws, g*n, b, n); err != nil {
				return err
			}
			if err := c.CrossCoreSetFlag(PipeMTE3, cubeID); err != nil {
				return err
			}
			if late != nil {
				if err := c.DataCopyOut(late, g*n, b, n); err != nil {
					return err
				}
				return c.SyncAllSkipped()
			}
			return nil
		}
		if err := c.CrossCoreWaitFlag(PipeMTE2, vecID); err != nil {
			return err
		}
		if err := c.DataCopyIn(b, ws, g*n, n); err != nil {
			return err
		}
		if late != nil {
			if err := c.SyncAllSkipped(); err != nil {
				return err
			}
			o, _ := c.AllocUB(4 * n)
			if err := c.DataCopyIn(o, late, g*n, n); err != nil {
				return err
			}
		}
		if err := c.Add(tensor.Float32, b, b, b, n); err != nil {
			return err
		}
		return c.DataCopyOut(out, (2*g+sub)*n, b, n)
	}
}

// launchWithin runs a launch and fails the test if it does not return
// within a few seconds: a deadlock must be a finding, never a hang.
func launchWithin(t *testing.T, what string, launch func() (*Cost, error)) *Cost {
	t.Helper()
	type res struct {
		cost *Cost
		err  error
	}
	done := make(chan res, 1)
	go func() {
		c, err := launch()
		done <- res{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.cost
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: the launch hangs (a deadlock must be a finding)", what)
	}
	return nil
}

// TestCrossCoreFlags: in a mixed launch a vector core waiting for its
// cube core's flag reads what the cube core wrote before the set (the
// numbers) and no sooner (its cycles), with no finding; a write after
// the set is not ordered by it (an xcore-race on exactly those bytes);
// a wait for an id never set is a deadlock naming both cores, and the
// set never waited for a flag mismatch; flags outside a mixed launch are
// an error.
func TestCrossCoreFlags(t *testing.T) {
	d := newDev(t, unitProfile())
	const n, groups = 8, 2
	ws := tensor.MustNew(tensor.Float32, groups*n)
	out := tensor.MustNew(tensor.Float32, 2*groups*n)
	cost := launchWithin(t, "mixed flags", func() (*Cost, error) {
		return d.LaunchMixed(bg, groups, mixedProducer(ws, nil, out, n, 1, 1))
	})
	if len(cost.Findings) != 0 || cost.BlockDim != 3*groups {
		t.Errorf("mixed flags groups=%d: got findings %v, %d blocks want none, %d", groups, cost.Findings, cost.BlockDim, 3*groups)
	}
	for i, v := range out.F32() {
		if want := float32(2 * (i/(2*n) + 1)); v != want {
			t.Fatalf("mixed flags groups=%d: out[%d] got %v want %v", groups, i, v, want)
		}
	}
	// The cube core's copy out ends before any of its vector cores' copy
	// in starts: each vector core ends after its cube core.
	for g := range groups {
		for j := range 2 {
			if v, c := cost.CoreCycles[groups+2*g+j], cost.CoreCycles[g]; v <= c {
				t.Errorf("mixed flags: vector core %d ends at %d, not after its cube core %d (%d)", groups+2*g+j, v, g, c)
			}
		}
	}

	late := tensor.MustNew(tensor.Float32, groups*n)
	cost = launchWithin(t, "mixed late write", func() (*Cost, error) {
		return d.LaunchMixed(bg, groups, mixedProducer(ws, late, out, n, 1, 1))
	})
	if got := findingKinds(cost.Findings); got != KindXCoreRace || cost.Findings[0].Buffer != "GM fp32[16]" || cost.Findings[0].Other != "MTE3 DataCopyOut#2" {
		t.Errorf("mixed late write: got findings %q (%v) want one xcore-race on the late tensor against the cube core's second copy out", got, cost.Findings)
	}

	cost = launchWithin(t, "mixed flag mismatch", func() (*Cost, error) {
		return d.LaunchMixed(bg, 1, mixedProducer(ws, nil, out, n, 1, 2))
	})
	if got := findingKinds(cost.Findings); got != KindDeadlock+","+KindFlag+","+KindFlag ||
		!strings.Contains(cost.Findings[0].Message, "core 1 pipe MTE2 waits forever in CrossCoreWaitFlag(2): core 0 ended") {
		t.Errorf("mixed flag mismatch: got findings %q (%v) want the vector cores' deadlocks naming cube core 0, and the unwaited set", got, cost.Findings)
	}

	// Each side waits for the other before setting: every core waits.
	cost = launchWithin(t, "mixed wait cycle", func() (*Cost, error) {
		return d.LaunchMixed(bg, 1, func(c *Core) error {
			if err := c.CrossCoreWaitFlag(PipeV, 3); err != nil {
				return err
			}
			return c.CrossCoreSetFlag(PipeV, 3)
		})
	})
	if got := findingKinds(cost.Findings); !strings.HasPrefix(got, KindDeadlock) || !strings.Contains(cost.Findings[0].Message, "every running core waits (core 0 pipe V in CrossCoreWaitFlag(3) for core 1; core 1 pipe V in CrossCoreWaitFlag(3) for core 0; core 2 pipe V in CrossCoreWaitFlag(3) for core 0)") {
		t.Errorf("mixed wait cycle: got findings %q (%v) want a deadlock naming where every core waits", got, cost.Findings)
	}

	if _, err := d.LaunchCooperative(bg, VectorCore, 2, func(c *Core) error { return c.CrossCoreSetFlag(PipeV, 0) }); err == nil || !strings.Contains(err.Error(), "mixed") {
		t.Errorf("CrossCoreSetFlag in a cooperative launch: got %v want an error naming the mixed launch", err)
	}
	if _, err := d.LaunchMixed(bg, 1, func(c *Core) error { return c.CrossCoreWaitFlag(PipeV, MaxCrossCoreFlags) }); err == nil {
		t.Errorf("CrossCoreWaitFlag(%d): got nil error want an id error", MaxCrossCoreFlags)
	}
}

// TestCrossCoreFlagCoversItsPipe: on explicit cores a cross-core set
// covers what its pipe has done and what the core's events ordered
// before that pipe: set on MTE3 after the store, or on V after an MTE3→V
// hand-off, the vector cores' reads are ordered after the store; set on
// V with no hand-off, it may fire before the store lands, and the reads
// race with it.
func TestCrossCoreFlagCoversItsPipe(t *testing.T) {
	d := newDev(t, unitProfile())
	const n = 8
	for _, c := range []struct {
		name string
		set  func(c *Core) error
		want string
	}{
		{"set on the store's pipe", func(c *Core) error { return c.CrossCoreSetFlag(PipeMTE3, 1) }, ""},
		{"set on V after a hand-off", func(c *Core) error {
			c.SetFlag(PipeMTE3, PipeV, 2)
			c.WaitFlag(PipeMTE3, PipeV, 2)
			return c.CrossCoreSetFlag(PipeV, 1)
		}, ""},
		{"set on V, store not handed off", func(c *Core) error { return c.CrossCoreSetFlag(PipeV, 1) }, KindXCoreRace},
	} {
		ws := tensor.MustNew(tensor.Float32, n)
		cost := launchWithin(t, "flag pipe "+c.name, func() (*Cost, error) {
			return d.LaunchMixed(bg, 1, func(cc *Core) error {
				if err := cc.SetSyncMode(SyncExplicit); err != nil {
					return err
				}
				b, _ := cc.AllocUB(4 * n)
				if cc.Kind() == VectorCore {
					if err := cc.CrossCoreWaitFlag(PipeMTE2, 1); err != nil {
						return err
					}
					return cc.DataCopyIn(b, ws, 0, n)
				}
				if err := cc.Duplicate(tensor.Float32, b, 1, n); err != nil {
					return err
				}
				cc.SetFlag(PipeV, PipeMTE3, 0)
				cc.WaitFlag(PipeV, PipeMTE3, 0)
				if err := cc.DataCopyOut(ws, 0, b, n); err != nil {
					return err
				}
				return c.set(cc)
			})
		})
		if got := findingKinds(cost.Findings); got != c.want {
			t.Errorf("flag pipe %s: got findings %q (%v) want %q", c.name, got, cost.Findings, c.want)
		}
	}
}
