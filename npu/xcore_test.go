package npu

import (
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// handOff: core 0 stores n fp32 values to ws[0:n) (and core 1 its own
// to ws[n:2n)); then, after sync (nil: nothing between), core 1 reads
// ws[lo:lo+n). mode is the cores' sync mode.
func handOff(ws *tensor.Tensor, n, lo int, mode SyncMode, sync func(c *Core) error) Kernel {
	return func(c *Core) error {
		if err := c.SetSyncMode(mode); err != nil {
			return err
		}
		b, _ := c.AllocUB(4 * n)
		if err := c.Duplicate(tensor.Float32, b, float64(c.BlockIdx+1), n); err != nil {
			return err
		}
		if mode == SyncExplicit {
			c.SetFlag(PipeV, PipeMTE3, 0)
			c.WaitFlag(PipeV, PipeMTE3, 0)
		}
		if err := c.DataCopyOut(ws, c.BlockIdx*n, b, n); err != nil {
			return err
		}
		if sync != nil {
			if err := sync(c); err != nil {
				return err
			}
		}
		if c.BlockIdx != 1 {
			return nil
		}
		if mode == SyncExplicit {
			c.PipeBarrier(PipeAll)
		}
		return c.DataCopyIn(b, ws, lo, n)
	}
}

// TestSanitizerXCoreRace: a read of GM bytes another core of the launch
// wrote is an xcore-race naming both cores, both instructions, the
// tensor and the bytes, in either sync mode, unless a SyncAll orders the
// write before it; a read of bytes no other core wrote is none, nor a
// column block of rows another core writes other columns of.
func TestSanitizerXCoreRace(t *testing.T) {
	d := newDev(t, unitProfile())
	const n = 16
	for _, mode := range []SyncMode{SyncImplicit, SyncExplicit} {
		for _, c := range []struct {
			name string
			coop bool
			sync func(c *Core) error
			lo   int // the bytes core 1 reads, in elements
			want string
		}{
			{"plain launch, other core's bytes", false, nil, 0, KindXCoreRace},
			{"plain launch, own bytes", false, nil, n, ""},
			{"plain launch, straddling", false, nil, n / 2, KindXCoreRace},
			{"after SyncAll", true, (*Core).SyncAll, 0, ""},
			{"barrier skipped", true, (*Core).SyncAllSkipped, 0, KindXCoreRace},
		} {
			ws := tensor.MustNew(tensor.Float32, 2*n)
			var cost *Cost
			var err error
			if c.coop {
				cost, err = d.LaunchCooperative(bg, VectorCore, 2, handOff(ws, n, c.lo, mode, c.sync))
			} else {
				cost, err = d.Launch(WithSerialLaunch(bg), 2, handOff(ws, n, c.lo, mode, c.sync))
			}
			if err != nil {
				t.Fatalf("xcore mode=%d %s: %v", mode, c.name, err)
			}
			if got := findingKinds(cost.Findings); got != c.want {
				t.Errorf("xcore mode=%d %s: got findings %q (%v) want %q", mode, c.name, got, cost.Findings, c.want)
				continue
			}
			if c.want == "" {
				continue
			}
			f := cost.Findings[0]
			hi := 4 * n // the straddling read shares [lo, n) of core 0's write
			if f.Core != 1 || f.Pipe != PipeMTE2 || f.Buffer != "GM fp32[32]" || f.Lo != 4*c.lo || f.Hi != hi ||
				f.Inst != "MTE2 DataCopyIn#1" || f.Other != "MTE3 DataCopyOut#1" || !strings.Contains(f.Message, "core 0 MTE3 DataCopyOut#1 writes") {
				t.Errorf("xcore mode=%d %s: got finding %+v want core 1 MTE2 DataCopyIn#1 against core 0 MTE3 DataCopyOut#1, GM fp32[32] bytes [%d, %d)", mode, c.name, f, 4*c.lo, hi)
			}
		}
	}
}

// TestSanitizerXCoreColumns: two cores storing column blocks of the same
// rows (DataCopy2DOut) and each reading its own block back (DataCopy2DIn)
// share no byte, so there is no race; reading the other core's block is
// one.
func TestSanitizerXCoreColumns(t *testing.T) {
	d := newDev(t, unitProfile())
	const rows, cols = 4, 8 // two 8-column blocks of 16-column rows
	for _, other := range []bool{false, true} {
		m := tensor.MustNew(tensor.Float32, rows, 2*cols)
		cost, err := d.Launch(WithSerialLaunch(bg), 2, func(c *Core) error {
			b, _ := c.AllocUB(4 * rows * cols)
			if err := c.Duplicate(tensor.Float32, b, 1, rows*cols); err != nil {
				return err
			}
			if err := c.DataCopy2DOut(m, 2*cols, 0, c.BlockIdx*cols, rows, cols, b, cols); err != nil {
				return err
			}
			col := c.BlockIdx * cols
			if other && c.BlockIdx == 1 {
				col = 0
			}
			return c.DataCopy2DIn(b, m, 2*cols, 0, col, rows, cols, cols, rows)
		})
		if err != nil {
			t.Fatalf("xcore columns other=%v: %v", other, err)
		}
		want := ""
		if other {
			want = KindXCoreRace
		}
		if got := findingKinds(cost.Findings); got != want {
			t.Errorf("xcore columns other=%v: got findings %q (%v) want %q", other, got, cost.Findings, want)
		}
	}
}

// TestRowsOverlap holds the strided-range intersection to a byte-by-byte
// count on small patterns.
func TestRowsOverlap(t *testing.T) {
	for _, a := range []gmRec{{lo: 0, hi: 4, rows: 3, stride: 10}, {lo: 5, hi: 7, rows: 1}, {lo: 2, hi: 12, rows: 2, stride: 20}} {
		for _, b := range []gmRec{{lo: 4, hi: 6, rows: 4, stride: 10}, {lo: 13, hi: 14, rows: 1}, {lo: 24, hi: 30, rows: 1}, {lo: 0, hi: 1, rows: 5, stride: 7}} {
			set := func(r gmRec) map[int]bool {
				m := map[int]bool{}
				for k := range r.rows {
					for x := r.lo + k*r.stride; x < r.hi+k*r.stride; x++ {
						m[x] = true
					}
				}
				return m
			}
			sa, sb := set(a), set(b)
			first := -1
			for x := 0; x < 100; x++ {
				if sa[x] && sb[x] {
					first = x
					break
				}
			}
			lo, hi, ok := overlap(&a, &b)
			if ok != (first >= 0) || (ok && (!sa[lo] || !sb[lo] || !sa[hi-1] || !sb[hi-1])) {
				t.Errorf("overlap(%+v, %+v): got [%d, %d) %v want a shared range (first shared byte %d)", a, b, lo, hi, ok, first)
			}
		}
	}
}

// TestSanitizerGMOverlapOrdered: two cores writing the same GM bytes is a
// gm-overlap naming both writes, in either sync mode, unless a SyncAll
// orders one write before the other.
func TestSanitizerGMOverlapOrdered(t *testing.T) {
	d := newDev(t, unitProfile())
	const n = 8
	for _, mode := range []SyncMode{SyncImplicit, SyncExplicit} {
		for _, c := range []struct {
			name string
			sync func(c *Core) error
			want string
		}{
			{"after SyncAll", (*Core).SyncAll, ""},
			{"barrier skipped", (*Core).SyncAllSkipped, KindGMOverlap},
		} {
			ws := tensor.MustNew(tensor.Float32, n)
			cost, err := d.LaunchCooperative(bg, VectorCore, 2, func(cc *Core) error {
				if err := cc.SetSyncMode(mode); err != nil {
					return err
				}
				b, _ := cc.AllocUB(4 * n)
				if err := cc.Duplicate(tensor.Float32, b, float64(cc.BlockIdx), n); err != nil {
					return err
				}
				if mode == SyncExplicit {
					cc.SetFlag(PipeV, PipeMTE3, 0)
					cc.WaitFlag(PipeV, PipeMTE3, 0)
				}
				if cc.BlockIdx == 0 {
					if err := cc.DataCopyOut(ws, 0, b, n); err != nil {
						return err
					}
				}
				if err := c.sync(cc); err != nil {
					return err
				}
				if cc.BlockIdx == 1 {
					return cc.DataCopyOut(ws, 0, b, n)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("gm overlap mode=%d %s: %v", mode, c.name, err)
			}
			if got := findingKinds(cost.Findings); got != c.want {
				t.Errorf("gm overlap mode=%d %s: got findings %q (%v) want %q", mode, c.name, got, cost.Findings, c.want)
				continue
			}
			if c.want != "" {
				if f := cost.Findings[0]; f.Core != 1 || f.Inst != "MTE3 DataCopyOut#1" || f.Other != "MTE3 DataCopyOut#1" || f.Lo != 0 || f.Hi != 4*n || !strings.Contains(f.Message, "core 0 MTE3 DataCopyOut#1 both write") {
					t.Errorf("gm overlap mode=%d %s: got finding %+v want core 1 against core 0, both MTE3 DataCopyOut#1, bytes [0, %d)", mode, c.name, f, 4*n)
				}
			}
		}
	}
}
