package npu

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// Every UB-reading primitive adds its reads to UBReadBytes, DMA into UB
// to UBLoadBytes and DMA out of UB to UBOutBytes; copies into L1 and the
// fixpipe's writes do not count; and the counters add no cycles.
func TestUBReuseCounters(t *testing.T) {
	d := newDev(t, Ascend910B())
	x := tensor.MustNew(tensor.Float32, 16)
	z := tensor.MustNew(tensor.Float16, 16)
	l1src := tensor.MustNew(tensor.Float16, 16, 16)
	var before, after CoreCost
	cost, err := d.Launch(bg, 1, func(c *Core) error {
		xb, _ := c.AllocUB(64)
		s, _ := c.AllocUB(64)
		h, _ := c.AllocUB(32)
		l1, _ := c.Alloc(L1, 512)
		for _, err := range []error{
			c.DataCopyIn(xb, x, 0, 16),                          // load 64
			c.DataCopy2DIn(l1, l1src, 16, 0, 0, 16, 16, 16, 16), // L1: not a UB load
			c.Add(tensor.Float32, s, xb, xb, 16),                // reads 2·64 = 128 (aliased sources count twice)
			c.Mul(tensor.Float32, s, s, xb, 16),                 // reads 128
			c.Cast(tensor.Float16, tensor.Float32, h, s, 16),    // reads 16·4 = 64
			c.Duplicate(tensor.Float32, s, 1, 16),               // reads nothing
			c.VectorFused("fused", 64, func() {}, VectorOperand{Name: "dst", Buf: s, Bytes: 64},
				VectorOperand{Name: "src", Buf: xb, Bytes: 64, ReadBytes: 32}), // reads 32
		} {
			if err != nil {
				return err
			}
		}
		c.ChargeVector(16) // reads 16
		c.VectorWork(8)    // reads 8
		before = c.Counters()
		c.ChargeCube(1, 16, 16, true) // reads (16 + 256)·2 = 544
		after = c.Counters()
		return c.DataCopyOut(z, 0, h, 16) // out 32
	})
	if err != nil {
		t.Fatal(err)
	}
	const load, read, out = 64, 128 + 128 + 64 + 32 + 16 + 8 + 544, 32
	if cost.UBLoadBytes != load || cost.UBReadBytes != read || cost.UBOutBytes != out {
		t.Errorf("ub counters: got load %d read %d out %d / want %d %d %d", cost.UBLoadBytes, cost.UBReadBytes, cost.UBOutBytes, load, read, out)
	}
	if want := 1 - float64(load)/read; math.Abs(cost.UBReuse-want) > 1e-15 {
		t.Errorf("ub reuse: got %v / want %v", cost.UBReuse, want)
	}
	if got, want := after.VectorCycles+after.CubeCycles, before.VectorCycles+before.CubeCycles+1; got != want {
		t.Errorf("ChargeCube(1,16,16): got compute cycles %d / want %d (one fractal step; reads add none)", got, want)
	}
}

func TestUBReuseEdges(t *testing.T) {
	for _, tt := range []struct {
		load, read int64
		want       float64
	}{{0, 0, 0}, {10, 0, 0}, {0, 10, 1}, {10, 10, 0}, {20, 10, 0}, {1, 4, 0.75}} {
		if got := UBReuse(tt.load, tt.read); got != tt.want {
			t.Errorf("UBReuse(load %d, read %d): got %v / want %v", tt.load, tt.read, got, tt.want)
		}
	}
	d := newDev(t, Ascend910B())
	_, err := d.Launch(bg, 1, func(c *Core) error {
		b, _ := c.AllocUB(32)
		return c.VectorFused("fused", 32, func() {}, VectorOperand{Name: "src", Buf: b, Bytes: 32, ReadBytes: 64})
	})
	if err == nil {
		t.Errorf("VectorFused with ReadBytes 64 > Bytes 32: got nil error / want an error")
	}
}
