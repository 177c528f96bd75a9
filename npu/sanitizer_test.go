package npu

import (
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// syncKernel copies x in, adds it to itself and copies the sum out on
// an explicit core, synchronised by sync (nil: not at all); each of
// SetFlag/WaitFlag, PipeBarrier and the queue can be the order.
func syncKernel(x, z *tensor.Tensor, n int, between func(c *Core)) Kernel {
	return func(c *Core) error {
		if err := c.SetSyncMode(SyncExplicit); err != nil {
			return err
		}
		a, _ := c.AllocUB(4 * n)
		o, _ := c.AllocUB(4 * n)
		off := c.BlockIdx * n
		if err := c.DataCopyIn(a, x, off, n); err != nil {
			return err
		}
		if between != nil {
			between(c)
		}
		if err := c.Add(tensor.Float32, o, a, a, n); err != nil {
			return err
		}
		c.SetFlag(PipeV, PipeMTE3, 0)
		c.WaitFlag(PipeV, PipeMTE3, 0)
		return c.DataCopyOut(z, off, o, n)
	}
}

func findingKinds(fs []Finding) string {
	var k []string
	for _, f := range fs {
		k = append(k, f.Kind)
	}
	return strings.Join(k, ",")
}

// TestSanitizerEvents: a copy in followed by an Add on V is clean when an
// event or a full barrier orders them and a RAW naming both instructions
// otherwise; a wait with no set is a deadlock and a set never waited for
// a flag mismatch, neither a hang.
func TestSanitizerEvents(t *testing.T) {
	d := newDev(t, unitProfile())
	const n = 8
	for _, c := range []struct {
		name    string
		between func(c *Core)
		want    string
	}{
		{"flag", func(c *Core) { c.SetFlag(PipeMTE2, PipeV, 1); c.WaitFlag(PipeMTE2, PipeV, 1) }, ""},
		{"barrier", func(c *Core) { c.PipeBarrier(PipeAll) }, ""},
		{"none", nil, KindRAW},
		{"wrong pipe", func(c *Core) { c.SetFlag(PipeMTE3, PipeV, 1); c.WaitFlag(PipeMTE3, PipeV, 1) }, KindRAW},
		{"wait without set", func(c *Core) { c.WaitFlag(PipeMTE2, PipeV, 2) }, KindDeadlock + "," + KindRAW},
		{"set never waited", func(c *Core) { c.PipeBarrier(PipeAll); c.SetFlag(PipeMTE2, PipeV, 3) }, KindFlag},
	} {
		x := tensor.MustNew(tensor.Float32, 2*n)
		z := tensor.MustNew(tensor.Float32, 2*n)
		cost, err := d.Launch(bg, 2, syncKernel(x, z, n, c.between))
		if err != nil {
			t.Fatalf("sanitizer %s: %v", c.name, err)
		}
		if got := findingKinds(cost.Findings); got != c.want {
			t.Errorf("sanitizer %s: got findings %q (%v) want %q", c.name, got, cost.Findings, c.want)
		}
		if c.want == KindRAW {
			f := cost.Findings[0]
			if f.Core != 0 || f.Pipe != PipeV || f.Buffer != "UB@0x0" || f.Lo != 0 || f.Hi != 4*n || f.Inst != "V Add#1" || f.Other != "MTE2 DataCopyIn#1" {
				t.Errorf("sanitizer %s: got finding %+v want core 0, pipe V, UB@0x0 [0, %d), V Add#1 vs MTE2 DataCopyIn#1", c.name, f, 4*n)
			}
			if !strings.Contains(f.Message, "and 1 more") {
				t.Errorf("sanitizer %s: got message %q want the second core counted", c.name, f.Message)
			}
		}
	}
}

// TestSanitizerQueue: a double-buffered TQue pipeline over many tiles is
// clean; freeing the output before its copy out (the ping-pong buffer
// reused before its store drains) is a WAR; a DeQue of an empty queue is
// a deadlock and an error, not a hang.
func TestSanitizerQueue(t *testing.T) {
	d := newDev(t, unitProfile())
	const n, tiles = 8, 5
	run := func(freeEarly bool) *Cost {
		x := tensor.MustNew(tensor.Float32, n*tiles)
		z := tensor.MustNew(tensor.Float32, n*tiles)
		cost, err := d.Launch(bg, 1, func(c *Core) error {
			if err := c.SetSyncMode(SyncExplicit); err != nil {
				return err
			}
			in, err := c.NewTQue("in", PipeMTE2, PipeV, 2, 4*n)
			if err != nil {
				return err
			}
			out, err := c.NewTQue("out", PipeV, PipeMTE3, 2, 4*n)
			if err != nil {
				return err
			}
			for k := range tiles {
				a, _ := in.AllocTensor()
				if err := c.DataCopyIn(a, x, k*n, n); err != nil {
					return err
				}
				_ = in.EnQue(a)
				a, _ = in.DeQue()
				o, _ := out.AllocTensor()
				if err := c.Add(tensor.Float32, o, a, a, n); err != nil {
					return err
				}
				_ = out.EnQue(o)
				_ = in.FreeTensor(a)
				o, _ = out.DeQue()
				if freeEarly {
					_ = out.FreeTensor(o)
				}
				if err := c.DataCopyOut(z, k*n, o, n); err != nil {
					return err
				}
				if !freeEarly {
					_ = out.FreeTensor(o)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("queue pipeline freeEarly=%v: %v", freeEarly, err)
		}
		return cost
	}
	if c := run(false); len(c.Findings) != 0 {
		t.Errorf("queue pipeline: got findings %v want none", c.Findings)
	}
	if got := findingKinds(run(true).Findings); got != KindWAR {
		t.Errorf("queue pipeline freeing before the store: got findings %q want %s", got, KindWAR)
	}
	_, err := d.Launch(bg, 1, func(c *Core) error {
		if err := c.SetSyncMode(SyncExplicit); err != nil {
			return err
		}
		q, err := c.NewTQue("q", PipeMTE2, PipeV, 1, 32)
		if err != nil {
			return err
		}
		_, err = q.DeQue()
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "deadlock") {
		t.Errorf("DeQue of an empty queue: got %v want a deadlock error", err)
	}
}

// TestSanitizerGMOverlap: two explicit cores writing the same GM bytes
// are reported, naming both; disjoint writes are not.
func TestSanitizerGMOverlap(t *testing.T) {
	d := newDev(t, unitProfile())
	for _, overlap := range []bool{false, true} {
		z := tensor.MustNew(tensor.Float32, 32)
		cost, err := d.Launch(bg, 2, func(c *Core) error {
			if err := c.SetSyncMode(SyncExplicit); err != nil {
				return err
			}
			o, _ := c.AllocUB(64)
			if err := c.Duplicate(tensor.Float32, o, 1, 16); err != nil {
				return err
			}
			c.SetFlag(PipeV, PipeMTE3, 0)
			c.WaitFlag(PipeV, PipeMTE3, 0)
			off := 16 * c.BlockIdx
			if overlap {
				off = 8 * c.BlockIdx
			}
			return c.DataCopyOut(z, off, o, 16)
		})
		if err != nil {
			t.Fatalf("gm overlap=%v: %v", overlap, err)
		}
		want := ""
		if overlap {
			want = KindGMOverlap
		}
		if got := findingKinds(cost.Findings); got != want {
			t.Errorf("gm overlap=%v: got findings %q (%v) want %q", overlap, got, cost.Findings, want)
		}
		if overlap && (cost.Findings[0].Lo != 32 || cost.Findings[0].Hi != 64) {
			t.Errorf("gm overlap: got bytes [%d, %d) want [32, 64)", cost.Findings[0].Lo, cost.Findings[0].Hi)
		}
	}
}

// TestSanitizerUninit: reading UB no instruction wrote is reported; bytes
// the kernel set through a view count as written.
func TestSanitizerUninit(t *testing.T) {
	d := newDev(t, unitProfile())
	for _, viaView := range []bool{false, true} {
		cost, err := d.Launch(bg, 1, func(c *Core) error {
			if err := c.SetSyncMode(SyncExplicit); err != nil {
				return err
			}
			a, _ := c.AllocUB(32)
			o, _ := c.AllocUB(32)
			if viaView {
				clear(a.F32())
			}
			return c.Add(tensor.Float32, o, a, a, 8)
		})
		if err != nil {
			t.Fatal(err)
		}
		want := KindUninit
		if viaView {
			want = ""
		}
		if got := findingKinds(cost.Findings); got != want {
			t.Errorf("uninit viaView=%v: got %q want %q", viaView, got, want)
		}
	}
}

// TestSanitizerGMColumnBlocks: two cores storing the two column halves of
// the same rows with 2-D copies write disjoint bytes (each row's range,
// not the block's bounding range, is compared); the same half twice is
// an overlap.
func TestSanitizerGMColumnBlocks(t *testing.T) {
	d := newDev(t, unitProfile())
	const rows, cols = 4, 16 // fp32: each half-row is 32 bytes
	for _, same := range []bool{false, true} {
		z := tensor.MustNew(tensor.Float32, rows*cols)
		cost, err := d.Launch(bg, 2, func(c *Core) error {
			if err := c.SetSyncMode(SyncExplicit); err != nil {
				return err
			}
			o, _ := c.AllocUB(4 * rows * cols / 2)
			if err := c.Duplicate(tensor.Float32, o, 1, rows*cols/2); err != nil {
				return err
			}
			c.SetFlag(PipeV, PipeMTE3, 0)
			c.WaitFlag(PipeV, PipeMTE3, 0)
			col0 := c.BlockIdx * cols / 2
			if same {
				col0 = 0
			}
			return c.DataCopy2DOut(z, cols, 0, col0, rows, cols/2, o, cols/2)
		})
		if err != nil {
			t.Fatalf("2-D column blocks same=%v: %v", same, err)
		}
		want := ""
		if same {
			want = KindGMOverlap
		}
		if got := findingKinds(cost.Findings); got != want {
			t.Errorf("2-D column blocks same=%v: got findings %q (%v) want %q", same, got, cost.Findings, want)
		}
	}
}
