package npu

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestWorkspacePoisonAndCharged: fresh scratch reads as Poison (a NaN in
// fp32), and a round trip through it is charged as GM traffic both ways.
func TestWorkspacePoisonAndCharged(t *testing.T) {
	d := MustNewDevice(Ascend910B())
	ws, err := d.Workspace(tensor.Float32, 100)
	if err != nil {
		t.Fatalf("workspace: n=100: %v", err)
	}
	for i, x := range ws.F32() {
		if !math.IsNaN(float64(x)) {
			t.Fatalf("workspace: n=100: element %d: got %v, want Poison (NaN)", i, x)
		}
	}
	cost, err := d.Launch(t.Context(), 1, func(c *Core) error {
		b, err := c.AllocUB(400)
		if err != nil {
			return err
		}
		for i := range b.F32()[:100] {
			b.F32()[i] = float32(i)
		}
		if err := c.DataCopyPadOut(ws, 0, b, 100); err != nil {
			return err
		}
		return c.DataCopyPadIn(b, ws, 0, 100)
	})
	if err != nil {
		t.Fatalf("workspace: n=100: launch: %v", err)
	}
	if got := ws.F32()[99]; got != 99 {
		t.Fatalf("workspace: n=100: element 99: got %v, want 99", got)
	}
	if cost.GMBytesIn != 400 || cost.GMBytesOut != 400 {
		t.Fatalf("workspace: n=100: GM bytes in/out: got %d/%d, want 400/400", cost.GMBytesIn, cost.GMBytesOut)
	}
	if _, err := d.Workspace(tensor.Float32, -1); err == nil {
		t.Fatalf("workspace: n=-1: got no error, want one")
	}
}
