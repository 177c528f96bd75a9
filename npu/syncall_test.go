package npu

import (
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// combineKernel: every core writes n fp32 values (its index + 1) to its
// slice of ws, core i copying in i+1 times first (uneven cores); after
// SyncAll core 0 reads every slice back and stores their sum to out.
// skip makes that core skip the barrier.
func combineKernel(ws, out *tensor.Tensor, n, skip int) Kernel {
	src := tensor.MustNew(tensor.Float32, n)
	return func(c *Core) error {
		b, _ := c.AllocUB(4 * n)
		acc, _ := c.AllocUB(4 * n)
		for range c.BlockIdx + 1 {
			if err := c.DataCopyIn(b, src, 0, n); err != nil {
				return err
			}
		}
		if err := c.Duplicate(tensor.Float32, b, float64(c.BlockIdx+1), n); err != nil {
			return err
		}
		if err := c.DataCopyOut(ws, c.BlockIdx*n, b, n); err != nil {
			return err
		}
		if c.BlockIdx != skip {
			if err := c.SyncAll(); err != nil {
				return err
			}
		}
		if c.BlockIdx != 0 {
			return nil
		}
		if err := c.Duplicate(tensor.Float32, acc, 0, n); err != nil {
			return err
		}
		for i := range c.BlockDim {
			if err := c.DataCopyIn(b, ws, i*n, n); err != nil {
				return err
			}
			if err := c.Add(tensor.Float32, acc, acc, b, n); err != nil {
				return err
			}
		}
		return c.DataCopyOut(out, 0, acc, n)
	}
}

// TestSyncAll: a combine after SyncAll reads what every core wrote before
// it (the barrier really waits: 1+2+…+cores), and starts after the
// slowest core's arrival; a core skipping the barrier is a deadlock
// finding naming the waiting cores, not a hang; SyncAll outside a
// cooperative launch is an error.
func TestSyncAll(t *testing.T) {
	d := newDev(t, unitProfile())
	const n, cores = 8, 6
	ws := tensor.MustNew(tensor.Float32, n*cores)
	out := tensor.MustNew(tensor.Float32, n)
	cost, err := d.LaunchCooperative(bg, VectorCore, cores, combineKernel(ws, out, n, -1))
	if err != nil {
		t.Fatalf("syncall cores=%d: %v", cores, err)
	}
	if got, want := out.F32()[n-1], float32(cores*(cores+1)/2); got != want {
		t.Errorf("syncall cores=%d: combine got %v want %v", cores, got, want)
	}
	if len(cost.Findings) != 0 {
		t.Errorf("syncall cores=%d: got findings %v want none", cores, cost.Findings)
	}
	// The slowest core arrives after 6 copies in (32 cycles each), a
	// Duplicate and a copy out; core 0's combine runs after that.
	slowest := cost.CoreCycles[cores-1]
	if cost.CoreCycles[0] <= slowest {
		t.Errorf("syncall cores=%d: core 0 ends at %d, not after the slowest core's arrival (%d)", cores, cost.CoreCycles[0], slowest)
	}
	cost, err = d.LaunchCooperative(bg, VectorCore, cores, combineKernel(ws, out, n, 3))
	if err != nil {
		t.Fatalf("syncall cores=%d skip=3: %v", cores, err)
	}
	if got := findingKinds(cost.Findings); got != KindDeadlock || !strings.Contains(cost.Findings[0].Message, "core 3 ended without reaching SyncAll #1, at which cores 0, 1, 2, 4, 5 wait") {
		t.Errorf("syncall cores=%d skip=3: got findings %v want a deadlock naming core 3 and the waiting cores", cores, cost.Findings)
	}
	if _, err := d.Launch(bg, 2, combineKernel(ws, out, n, -1)); err == nil || !strings.Contains(err.Error(), "cooperative") {
		t.Errorf("SyncAll in a plain launch: got %v want an error naming the cooperative launch", err)
	}
}

// TestSyncAllBalanceIsOfWork: a core that waits at SyncAll for a slower
// one ends with it, but the wait is not work: LoadBalance is the least
// over the most of each core's cycles less its barrier wait, so one core
// with ten times the vector work of the other gives about 0.1, where the
// end times alone gave 1.
func TestSyncAllBalanceIsOfWork(t *testing.T) {
	d := newDev(t, unitProfile())
	cost, err := d.LaunchCooperative(bg, VectorCore, 2, func(c *Core) error {
		c.ChargeVector(map[int]int{0: 1 << 16, 1: 1 << 12}[c.BlockIdx])
		return c.SyncAll()
	})
	if err != nil {
		t.Fatalf("syncall balance: %v", err)
	}
	fast, slow := cost.Cores[1], cost.Cores[0]
	if fast.Cycles != slow.Cycles || slow.BarrierWaitCycles != 0 || fast.BarrierWaitCycles <= 0 {
		t.Errorf("syncall balance: got cores %+v, %+v / want both ending together, core 1 waiting for core 0", slow, fast)
	}
	want := float64(fast.Cycles-fast.BarrierWaitCycles) / float64(slow.Cycles-slow.BarrierWaitCycles)
	if cost.LoadBalance != want || want > 0.2 {
		t.Errorf("syncall balance: got LoadBalance %v / want %v (work 2^12 bytes against 2^16), not the end times' 1", cost.LoadBalance, want)
	}
}
