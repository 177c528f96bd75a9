package npu

import (
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

func ramp(dt tensor.DType, n int) *tensor.Tensor {
	t := tensor.MustNew(dt, n)
	for i := range n {
		t.SetFloat64(i, float64(i%100+1), tensor.Numerics{})
	}
	return t
}

func TestDataCopyAlignment(t *testing.T) {
	for _, c := range []struct {
		dt     tensor.DType
		off, n int
		want   string // "" for success
	}{
		{tensor.Float16, 0, 16, ""},
		{tensor.Float16, 16, 32, ""},
		{tensor.Float16, 1, 16, "offset"},
		{tensor.Float16, 8, 16, "offset"},
		{tensor.Float16, 0, 15, "DataCopyPad"},
		{tensor.Float16, 0, 17, "DataCopyPad"},
		{tensor.Float32, 8, 8, ""},
		{tensor.Float32, 4, 8, "offset"},
		{tensor.Float32, 0, 12, "DataCopyPad"},
		{tensor.BFloat16, 0, 24, "DataCopyPad"},
		{tensor.Int8, 32, 32, ""},
		{tensor.Int8, 16, 32, "offset"},
		{tensor.Int8, 0, 31, "DataCopyPad"},
		{tensor.Int8, 64, 32, "out of range"},
		{tensor.Int8, -32, 32, "out of range"},
		{tensor.Int8, 0, -1, "out of range"},
		{tensor.Float16, 0, 0, ""},
	} {
		src := ramp(c.dt, 64)
		for _, dir := range []string{"in", "out"} {
			err := onCore(t, func(core *Core) error {
				b, err := core.AllocUB(256)
				if err != nil {
					return err
				}
				if dir == "in" {
					return core.DataCopyIn(b, src, c.off, c.n)
				}
				return core.DataCopyOut(src, c.off, b, c.n)
			})
			if (err == nil) != (c.want == "") || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Errorf("DataCopy %s dtype=%s off=%d n=%d: got %v want error containing %q", dir, c.dt, c.off, c.n, err, c.want)
			}
		}
	}
}

func TestDataCopyErrors(t *testing.T) {
	x := ramp(tensor.Float16, 64)
	err := onCore(t, func(c *Core) error {
		small, _ := c.AllocUB(32)
		if err := c.DataCopyIn(small, x, 0, 32); err == nil || !strings.Contains(err.Error(), "holds 32 bytes") {
			t.Errorf("DataCopyIn 64 B into 32 B: got %v want a size error", err)
		}
		if err := c.DataCopyPadIn(small, x, 0, 17); err == nil || !strings.Contains(err.Error(), "needs 64") {
			t.Errorf("DataCopyPadIn 17 fp16 into 32 B: got %v want a size error", err)
		}
		if err := c.DataCopyIn(small, nil, 0, 16); err == nil || !strings.Contains(err.Error(), "nil") {
			t.Errorf("DataCopyIn from nil: got %v want an error", err)
		}
		if err := c.DataCopyIn(nil, x, 0, 16); err == nil || !strings.Contains(err.Error(), "nil") {
			t.Errorf("DataCopyIn into nil: got %v want an error", err)
		}
		l1, _ := c.Alloc(L1, 64)
		if err := c.DataCopyIn(l1, x, 0, 32); err != nil {
			t.Errorf("DataCopyIn GM→L1: got %v want nil", err)
		}
		if err := c.DataCopyOut(x, 0, l1, 16); err == nil || !strings.Contains(err.Error(), "L1") {
			t.Errorf("DataCopyOut L1→GM: got %v want an error naming L1", err)
		}
		if cc := c.Counters(); cc.GMBytesIn != 64 || cc.GMBytesOut != 0 {
			t.Errorf("counters after failed copies: got in %d out %d want 64, 0", cc.GMBytesIn, cc.GMBytesOut)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDataCopyPad(t *testing.T) {
	for _, c := range []struct {
		dt     tensor.DType
		off, n int
	}{
		{tensor.Float16, 31, 9}, {tensor.Float16, 0, 1}, {tensor.Float16, 16, 16}, {tensor.Float32, 3, 13},
		{tensor.BFloat16, 5, 40}, {tensor.Int8, 7, 33}, {tensor.Int8, 0, 0}, {tensor.Float32, 63, 1},
	} {
		x := ramp(c.dt, 64)
		size := c.dt.Size()
		padded := roundUp(c.n*size, 32)
		err := onCore(t, func(core *Core) error {
			b, err := core.AllocUB(256)
			if err != nil {
				return err
			}
			if err := core.DataCopyPadIn(b, x, c.off, c.n); err != nil {
				return err
			}
			got := b.Bytes()
			want, _ := gmBytes(x)
			for i := range got {
				var w byte
				switch {
				case i < c.n*size:
					w = want[c.off*size+i]
				case i < padded:
					w = 0
				default:
					w = Poison
				}
				if got[i] != w {
					t.Errorf("DataCopyPadIn dtype=%s off=%d n=%d: UB byte %d: got %#x want %#x", c.dt, c.off, c.n, i, got[i], w)
					break
				}
			}
			// Copy back out to a fresh tensor at another offset: exactly
			// n elements change.
			out := ramp(c.dt, 64)
			for i := range 64 {
				out.SetBits(i, 0x5A)
			}
			at := 64 - c.n
			if err := core.DataCopyPadOut(out, at, b, c.n); err != nil {
				return err
			}
			for i := range 64 {
				w := uint64(0x5A)
				if i >= at {
					w = x.Bits(c.off + i - at)
				}
				if out.Bits(i) != w {
					t.Errorf("DataCopyPadOut dtype=%s at=%d n=%d: GM element %d: got %#x want %#x", c.dt, at, c.n, i, out.Bits(i), w)
					break
				}
			}
			cc := core.Counters()
			gm := int64(c.n * size)
			dma := int64(0)
			if c.n > 0 {
				dma = 2 * int64(500+(c.n*size*54+999)/1000)
			}
			if cc.GMBytesIn != gm || cc.GMBytesOut != gm || cc.DMACycles != dma {
				t.Errorf("DataCopyPad dtype=%s n=%d: got gm in %d out %d dma %d want %d, %d, %d",
					c.dt, c.n, cc.GMBytesIn, cc.GMBytesOut, cc.DMACycles, gm, gm, dma)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("DataCopyPad dtype=%s off=%d n=%d: %v", c.dt, c.off, c.n, err)
		}
	}
}
