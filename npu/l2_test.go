package npu

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestL2Shared: cores reading the same GM bytes pay their L2 port each
// (latency + bytes / port), and HBM moves the bytes once.
func TestL2Shared(t *testing.T) {
	p := Ascend910B()
	d := newDev(t, p)
	const n, cores = 4096, 4
	x := tensor.MustNew(tensor.Int8, n)
	cost, err := d.Launch(bg, cores, func(c *Core) error {
		b, err := c.AllocUB(n)
		if err != nil {
			return err
		}
		return c.DataCopyIn(b, x, 0, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCore := int64(p.L2LatencyCycles + n/p.L2BytesPerCycle)
	for i, cc := range cost.CoreCycles {
		if cc != wantCore {
			t.Errorf("l2 shared read of %d B on %d cores: core %d: got %d cycles / want %d (latency %d + %d B / %d B per cycle)", n, cores, i, cc, wantCore, p.L2LatencyCycles, n, p.L2BytesPerCycle)
		}
	}
	if cost.HBMBytes != n || cost.L2HitBytes != (cores-1)*n || cost.Bound != BoundCores || cost.Cycles != wantCore {
		t.Errorf("l2 shared read of %d B on %d cores: got hbm_bytes %d l2_hit_bytes %d bound %s cycles %d / want %d, %d, %s, %d",
			n, cores, cost.HBMBytes, cost.L2HitBytes, cost.Bound, cost.Cycles, n, (cores-1)*n, BoundCores, wantCore)
	}
}

// TestL2HBMBound: 48 cores streaming distinct bytes are bound by HBM,
// not by their ports, and the cost says so.
func TestL2HBMBound(t *testing.T) {
	p := Ascend910B()
	d := newDev(t, p)
	const per = 64 << 10
	x := tensor.MustNew(tensor.Int8, 48*per)
	cost, err := d.Launch(bg, 48, func(c *Core) error {
		b, err := c.AllocUB(per)
		if err != nil {
			return err
		}
		return c.DataCopyIn(b, x, c.BlockIdx*per, per)
	})
	if err != nil {
		t.Fatal(err)
	}
	wantHBM := ceilCycles(float64(48*per) / p.HBMBytesPerCycle())
	if cost.HBMBytes != 48*per || cost.L2HitBytes != 0 || cost.HBMCycles != wantHBM || cost.Cycles != wantHBM || cost.Bound != BoundHBM {
		t.Errorf("l2 streaming 48×%d B: got hbm_bytes %d l2_hit %d hbm_cycles %d cycles %d bound %s / want %d, 0, %d, %d, %s",
			per, cost.HBMBytes, cost.L2HitBytes, cost.HBMCycles, cost.Cycles, cost.Bound, 48*per, wantHBM, wantHBM, BoundHBM)
	}
	if cost.CoreCycles[0] >= wantHBM {
		t.Errorf("l2 streaming 48×%d B: got core cycles %d / want below the HBM bound %d (the ports are faster than HBM)", per, cost.CoreCycles[0], wantHBM)
	}
}

// TestL2OverCapacity: a footprint larger than L2 counts every block
// read as read from HBM (the stated conservative bound), strided
// reads by the blocks they touch.
func TestL2OverCapacity(t *testing.T) {
	p := Ascend910B()
	p.L2Bytes = 4096
	d := newDev(t, p)
	const n = 4096
	x := tensor.MustNew(tensor.Int8, n)
	m := tensor.MustNew(tensor.Int8, 64*64)
	cost, err := d.Launch(bg, 2, func(c *Core) error {
		b, err := c.AllocUB(n)
		if err != nil {
			return err
		}
		if err := c.DataCopyIn(b, x, 0, n); err != nil {
			return err
		}
		// 8 rows of 10 bytes from a 64-byte-wide matrix: 8 blocks of 32 B.
		return c.DataCopy2DIn(b, m, 64, 0, 3, 8, 10, 32, 8)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := int64(2 * (n + 8*32))
	if cost.HBMBytes != want || cost.L2HitBytes != 0 {
		t.Errorf("l2 over capacity (l2_bytes 4096, footprint %d): got hbm_bytes %d l2_hit %d / want %d, 0", n+8*32, cost.HBMBytes, cost.L2HitBytes, want)
	}
	p.L2Bytes = 1 << 20
	cost, err = newDev(t, p).Launch(bg, 2, func(c *Core) error {
		b, err := c.AllocUB(n)
		if err != nil {
			return err
		}
		if err := c.DataCopyIn(b, x, 0, n); err != nil {
			return err
		}
		return c.DataCopy2DIn(b, m, 64, 0, 3, 8, 10, 32, 8)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(n + 8*32); cost.HBMBytes != want || cost.L2HitBytes != want {
		t.Errorf("l2 within capacity: got hbm_bytes %d l2_hit %d / want %d, %d", cost.HBMBytes, cost.L2HitBytes, want, want)
	}
}

// TestL2ProfileOptional: a profile without the L2 fields loads (no L2,
// the model before L2), and a partial L2 is an error naming the field.
func TestL2ProfileOptional(t *testing.T) {
	b, err := noL2(Ascend910B()).JSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "l2_") {
		t.Errorf("profile without L2: got JSON %s / want no l2_ field", b)
	}
	p, err := ParseProfile(b)
	if err != nil || p.HasL2() {
		t.Errorf("profile without L2: got HasL2 %v, %v / want false, nil", p.HasL2(), err)
	}
	for _, c := range []struct {
		edit  map[string]any
		field string
	}{
		{map[string]any{"l2_bytes_per_cycle": 128}, "l2_bytes"},
		{map[string]any{"l2_bytes": 1 << 20}, "l2_bytes_per_cycle"},
		{map[string]any{"l2_bytes": 1 << 20, "l2_bytes_per_cycle": 64, "l2_latency_cycles": -1}, "l2_latency_cycles"},
		{map[string]any{"l2_bytes": -1, "l2_bytes_per_cycle": 64}, "l2_bytes"},
	} {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range c.edit {
			m[k] = v
		}
		j, _ := json.Marshal(m)
		if _, err := ParseProfile(j); err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("profile with %v: got %v / want an error naming %s", c.edit, err, c.field)
		}
	}
}
