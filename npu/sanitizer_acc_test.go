package npu

import (
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// accKernel runs one 16×16×16 Mmad into a fresh L0C tile, starting from
// +0 (init) or accumulating, after hold (nil: nothing) got at the tile.
func accKernel(mode SyncMode, init bool, hold func(c *Core, l0c *Buffer) error) Kernel {
	src := tensor.MustNew(tensor.Float16, 16, 16)
	return func(c *Core) error {
		if err := c.SetSyncMode(mode); err != nil {
			return err
		}
		l1, _ := c.Alloc(L1, 16*16*2)
		g, err := NewGMMatrix(src)
		if err != nil {
			return err
		}
		tile := L1Tile{Buf: l1}
		if err := c.LoadL1(&tile, g, 0, 0, 16, 16, 16, 16); err != nil {
			return err
		}
		a, _ := c.Alloc(L0A, 16*16*2)
		b, _ := c.Alloc(L0B, 16*16*2)
		at, bt := L0Tile{Buf: a}, L0Tile{Buf: b}
		if mode == SyncExplicit {
			c.SetFlag(PipeMTE2, PipeMTE1, 0)
			c.WaitFlag(PipeMTE2, PipeMTE1, 0)
		}
		if err := c.LoadL0(&at, &tile, 0, 0, 16, 16); err != nil {
			return err
		}
		if err := c.LoadL0(&bt, &tile, 0, 0, 16, 16); err != nil {
			return err
		}
		if mode == SyncExplicit {
			c.SetFlag(PipeMTE1, PipeM, 0)
			c.WaitFlag(PipeMTE1, PipeM, 0)
		}
		l0c, _ := c.Alloc(L0C, 16*16*4)
		if hold != nil {
			if err := hold(c, l0c); err != nil {
				return err
			}
		}
		p := MmadParams{M: 16, K: 16, N: 16, UsefulM: 16, UsefulK: 16, UsefulN: 16, Acc: tensor.Float32, Init: init}
		if err := c.Mmad(l0c, &at, &bt, p); err != nil {
			return err
		}
		p.Init = false // a second step accumulates onto the first's sums
		return c.Mmad(l0c, &at, &bt, p)
	}
}

// TestSanitizerAccumulatorInit: an Mmad that accumulates onto an L0C tile
// nothing wrote is an uninit finding naming the core, pipe M, the L0C
// buffer and its bytes, in either sync mode, even when the tile holds
// zeros (HoldsZeros: the numbers are right, as on a zero-filling
// simulator); starting from +0, or from sums the kernel set through a
// view, is clean.
func TestSanitizerAccumulatorInit(t *testing.T) {
	d := newDev(t, unitProfile())
	for _, mode := range []SyncMode{SyncImplicit, SyncExplicit} {
		for _, c := range []struct {
			name string
			init bool
			hold func(c *Core, l0c *Buffer) error
			want string
		}{
			{"init", true, nil, ""},
			{"never initialised", false, nil, KindUninit},
			{"zero-filled, never written", false, func(c *Core, l0c *Buffer) error { c.HoldsZeros(l0c); return nil }, KindUninit},
			{"set through a view", false, func(_ *Core, l0c *Buffer) error { clear(l0c.F32()); return nil }, ""},
		} {
			cost, err := d.LaunchOn(bg, AICore, 1, accKernel(mode, c.init, c.hold))
			if err != nil {
				t.Fatalf("acc init mode=%d %s: %v", mode, c.name, err)
			}
			if got := findingKinds(cost.Findings); got != c.want {
				t.Errorf("acc init mode=%d %s: got findings %q (%v) want %q", mode, c.name, got, cost.Findings, c.want)
				continue
			}
			if c.want != "" {
				f := cost.Findings[0]
				if f.Core != 0 || f.Pipe != PipeM || f.Buffer != "L0C@0x0" || f.Lo != 0 || f.Hi != 16*16*4 || f.Inst != "M Mmad#1" {
					t.Errorf("acc init mode=%d %s: got finding %+v want core 0, pipe M, L0C@0x0 [0, 1024), M Mmad#1", mode, c.name, f)
				}
			}
		}
	}
}

// TestSanitizerEmptyMmadClears: a K = 0 Mmad with Init is how a kernel
// clears its accumulators for an empty reduction (gemm's and gemm24's
// K = 0 blocks); the clear is the cube's write, so FIX reading the tile
// after the M → FIX hand-off is clean, while the same read with no Init
// reads L0C never written.
func TestSanitizerEmptyMmadClears(t *testing.T) {
	d := newDev(t, unitProfile())
	for _, init := range []bool{true, false} {
		kernel := func(c *Core) error {
			if err := c.SetSyncMode(SyncExplicit); err != nil {
				return err
			}
			a, _ := c.Alloc(L0A, 512)
			b, _ := c.Alloc(L0B, 512)
			l0c, _ := c.Alloc(L0C, 16*16*4)
			ub, _ := c.Alloc(UB, 16*16*4)
			at := L0Tile{Buf: a, DType: tensor.Float16, Rows: 16}
			bt := L0Tile{Buf: b, DType: tensor.Float16, Cols: 16}
			p := MmadParams{M: 16, N: 16, UsefulM: 16, UsefulN: 16, Acc: tensor.Float32, Init: init}
			if err := c.Mmad(l0c, &at, &bt, p); err != nil {
				return err
			}
			c.SetFlag(PipeM, PipeFIX, 0)
			c.WaitFlag(PipeM, PipeFIX, 0)
			return c.FixpipeToUB(ub, l0c, 0, 16*16)
		}
		cost, err := d.LaunchOn(bg, AICore, 1, kernel)
		if err != nil {
			t.Fatalf("empty Mmad init=%t: %v", init, err)
		}
		want := ""
		if !init {
			want = KindUninit
		}
		if got := findingKinds(cost.Findings); got != want {
			t.Errorf("empty Mmad init=%t: FixpipeToUB after a K=0 Mmad: got findings %q (%v) want %q", init, got, cost.Findings, want)
		}
	}
}

// TestLoadL0ReadsItsBlock: LoadL0's operand on L1 is the block it reads,
// not the whole tile: a 16-row slice of a tile whose first 16 rows were
// written (its other rows never) reads no unwritten byte, in either sync
// mode, where the whole tile as the operand would report bytes
// [512, 1024) uninit on every slice.
func TestLoadL0ReadsItsBlock(t *testing.T) {
	d := newDev(t, unitProfile())
	src := tensor.MustNew(tensor.Float16, 16, 16)
	for _, mode := range []SyncMode{SyncImplicit, SyncExplicit} {
		kernel := func(c *Core) error {
			if err := c.SetSyncMode(mode); err != nil {
				return err
			}
			l1, _ := c.Alloc(L1, 32*16*2)
			g, err := NewGMMatrix(src)
			if err != nil {
				return err
			}
			tile := L1Tile{Buf: l1}
			if err := c.LoadL1(&tile, g, 0, 0, 16, 16, 16, 16); err != nil { // rows 0..15 of the buffer
				return err
			}
			tile.Rows = 32 // the tile the kernel sees: 32 rows, the last 16 never written
			if mode == SyncExplicit {
				c.SetFlag(PipeMTE2, PipeMTE1, 0)
				c.WaitFlag(PipeMTE2, PipeMTE1, 0)
			}
			b, _ := c.Alloc(L0B, 16*16*2)
			bt := L0Tile{Buf: b}
			return c.LoadL0(&bt, &tile, 0, 0, 16, 16)
		}
		cost, err := d.LaunchOn(bg, AICore, 1, kernel)
		if err != nil {
			t.Fatalf("LoadL0 block mode=%d: %v", mode, err)
		}
		if got := findingKinds(cost.Findings); got != "" {
			t.Errorf("LoadL0 block mode=%d: rows 0..15 of a 32-row tile with rows 0..15 written: got findings %q (%v) want none", mode, got, cost.Findings)
		}
	}
}

// TestLoadL0StridedBlock: an A slice of a wider tile reads a range a row
// (stride the tile's width): with the tile's first 512 bytes written,
// the 16×16 block at column 0 of a 16×32 fp16 tile reads rows 8…15
// unwritten, bytes [512, 992) from row 8's start to row 15's last byte
// read (an explicit core: an implicit one shadows L0C only).
func TestLoadL0StridedBlock(t *testing.T) {
	d := newDev(t, unitProfile())
	src := tensor.MustNew(tensor.Float16, 16, 16)
	for _, mode := range []SyncMode{SyncExplicit} { // an implicit core's shadow holds L0C only
		kernel := func(c *Core) error {
			if err := c.SetSyncMode(mode); err != nil {
				return err
			}
			l1, _ := c.Alloc(L1, 16*32*2)
			g, err := NewGMMatrix(src)
			if err != nil {
				return err
			}
			tile := L1Tile{Buf: l1}
			if err := c.LoadL1(&tile, g, 0, 0, 16, 16, 16, 16); err != nil { // bytes [0, 512)
				return err
			}
			tile.Cols = 32 // the tile the kernel sees: 16 rows of 32
			if mode == SyncExplicit {
				c.SetFlag(PipeMTE2, PipeMTE1, 0)
				c.WaitFlag(PipeMTE2, PipeMTE1, 0)
			}
			a, _ := c.Alloc(L0A, 16*16*2)
			at := L0Tile{Buf: a}
			return c.LoadL0(&at, &tile, 0, 0, 16, 16)
		}
		cost, err := d.LaunchOn(bg, AICore, 1, kernel)
		if err != nil {
			t.Fatalf("LoadL0 strided mode=%d: %v", mode, err)
		}
		if got := findingKinds(cost.Findings); got != KindUninit {
			t.Fatalf("LoadL0 strided mode=%d: got findings %q (%v) want %q", mode, got, cost.Findings, KindUninit)
		}
		if f := cost.Findings[0]; f.Pipe != PipeMTE1 || f.Lo != 512 || f.Hi != 15*64+32 {
			t.Errorf("LoadL0 strided mode=%d: got finding %+v want pipe MTE1, bytes [512, %d)", mode, f, 15*64+32)
		}
	}
}
