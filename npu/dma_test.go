package npu

import (
	"slices"
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
			// Each copy is one burst of the 32-byte GM blocks it touches:
			// in from element c.off, out to element at.
			dma := int64(0)
			if c.n > 0 {
				blocks := func(start int) int { return ((start+c.n*size+31)/32 - start/32) * 32 }
				dma = int64(500+(blocks(c.off*size)*54+999)/1000) + int64(500+(blocks(at*size)*54+999)/1000)
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

// TestStridedDMABursts: a 2-D copy is one burst per row, each moving the
// 32-byte GM blocks it touches, unless its rows are whole rows of the
// matrix (contiguous: one burst). On ascend910b (500 + ceil(B·54/1000)
// cycles for B bytes of blocks): 8 rows of 10 fp16 (20 B) from column 3 of
// a 64-column matrix touch one or two blocks each; 8 whole rows of 64 fp16
// are one burst of 1024 B.
func TestStridedDMABursts(t *testing.T) {
	d := newDev(t, noL2(Ascend910B()))
	m := tensor.MustNew(tensor.Float16, 8*64)
	for _, c := range []struct {
		col0, cols int
		bursts     int64
	}{{3, 10, 8}, {0, 64, 1}, {0, 16, 8}} {
		cost, err := d.Launch(bg, 1, func(core *Core) error {
			b, err := core.AllocUB(8 * 64 * 2)
			if err != nil {
				return err
			}
			return core.DataCopy2DIn(b, m, 64, 0, c.col0, 8, c.cols, c.cols, 8)
		})
		if err != nil {
			t.Fatalf("strided dma col0=%d cols=%d: %v", c.col0, c.cols, err)
		}
		blocks := 0
		if c.bursts == 1 {
			blocks = (8*c.cols*2 + 31) / 32 * 32
		} else {
			for r := range 8 {
				s := (r*64 + c.col0) * 2
				blocks += ((s+c.cols*2+31)/32 - s/32) * 32
			}
		}
		want := int64(500 + (blocks*54+999)/1000)
		if cost.GMBursts != c.bursts || cost.Cycles != want || cost.GMBytesIn != int64(8*c.cols*2) {
			t.Errorf("strided dma col0=%d cols=%d: got bursts %d cycles %d gm_in %d / want %d, %d (%d bytes of blocks), %d",
				c.col0, c.cols, cost.GMBursts, cost.Cycles, cost.GMBytesIn, c.bursts, want, blocks, 8*c.cols*2)
		}
	}
}

// TestLoadL1NZBursts: an operand that lies in GM as FRACTAL_NZ is loaded
// a burst per column fractal (C0 = 16 fp16 lanes) of the block's whole
// 32-byte fractal rows, padding lanes included, where an ND operand takes
// a burst per row of the block's own bytes: a 20 × 40 block from column 8
// touches lanes 0, 1 and 2 (3 bursts of 20 fractal rows, 1920 bytes)
// against 20 bursts of 80 bytes; the tile's values are the same.
func TestLoadL1NZBursts(t *testing.T) {
	src := tensor.MustNew(tensor.Float16, 40, 64)
	for i := range src.Len() {
		src.SetBits(i, uint64(0x3C00+i%512))
	}
	var tiles [2][]float32
	for i, nz := range []bool{false, true} {
		dev := MustNewDevice(Ascend910B())
		cost, err := dev.LaunchOn(t.Context(), AICore, 1, func(c *Core) error {
			l1, err := c.Alloc(L1, 32*48*2)
			if err != nil {
				return err
			}
			g, err := NewGMMatrix(src)
			if err != nil {
				return err
			}
			g.NZ = nz
			tile := L1Tile{Buf: l1}
			if err := c.LoadL1(&tile, g, 4, 8, 20, 40, 32, 48); err != nil {
				return err
			}
			tiles[i] = append([]float32(nil), tile.f...)
			return nil
		})
		if err != nil {
			t.Fatalf("LoadL1 nz=%v: %v", nz, err)
		}
		bursts, bytes := int64(20), int64(20*40*2)
		if nz {
			bursts, bytes = 3, 3*20*32
		}
		if cost.GMBursts != bursts || cost.GMBytesIn != bytes {
			t.Errorf("LoadL1 nz=%v 20x40 block at (4, 8) of fp16 40x64: got bursts %d gm_in %d / want %d, %d", nz, cost.GMBursts, cost.GMBytesIn, bursts, bytes)
		}
	}
	if !slices.Equal(tiles[0], tiles[1]) {
		t.Errorf("LoadL1 20x40 block at (4, 8): the NZ tile's values differ from the ND tile's")
	}
}
