package npu

import "testing"

// A launch leaves its memories on the device's free lists for the next
// one; Trim empties them, and a launch after it still runs.
func TestTrimDropsPooledMemories(t *testing.T) {
	d := newDev(t, Ascend910B())
	launch := func() {
		if _, err := d.Launch(bg, 2, func(c *Core) error {
			_, err := c.AllocUB(4096)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	launch()
	if d.pool.bytes == 0 {
		t.Fatal("after a launch: the device keeps no memory, so Trim has nothing to test")
	}
	d.Trim()
	held := 0
	for _, f := range d.pool.free {
		held += len(f)
	}
	if d.pool.bytes != 0 || held != 0 {
		t.Errorf("after Trim: pool holds %d bytes in %d memories, want none", d.pool.bytes, held)
	}
	launch()
}
