package npu

import (
	"context"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestCopyOnWrite runs kernels that write into an input through each DMA
// path and through HostWrite: the caller's tensor must come back with its
// bits, later reads (on any core, in a later launch) must see the writes,
// and Written must name the input and its first changed element.
func TestCopyOnWrite(t *testing.T) {
	const n = 64
	// write puts 7 at element 16 of x, by the path under test.
	writes := map[string]func(ctx context.Context, c *Core, x *tensor.Tensor, b *Buffer) error{
		"DataCopyOut": func(_ context.Context, c *Core, x *tensor.Tensor, b *Buffer) error {
			return c.DataCopyOut(x, 16, b, 16)
		},
		"DataCopyPadOut": func(_ context.Context, c *Core, x *tensor.Tensor, b *Buffer) error {
			return c.DataCopyPadOut(x, 16, b, 3)
		},
		"DataCopy2DOut": func(_ context.Context, c *Core, x *tensor.Tensor, b *Buffer) error {
			return c.DataCopy2DOut(x, 16, 1, 0, 1, 16, b, 16) // row 1 of x as a 4×16 matrix
		},
		"HostWrite": func(ctx context.Context, _ *Core, x *tensor.Tensor, _ *Buffer) error {
			HostWrite(ctx, x).SetFloat64(16, 7, tensor.Numerics{})
			return nil
		},
	}
	for name, write := range writes {
		x, y := ramp(tensor.Float16, n), ramp(tensor.Float16, n)
		orig := x.Clone()
		w := NewCopyOnWrite(map[string]*tensor.Tensor{"x": x, "y": y})
		ctx := WithCopyOnWrite(bg, w)
		dev := newDev(t, Ascend910B())
		_, err := dev.Launch(ctx, 4, func(c *Core) error {
			if c.BlockIdx != 0 {
				return nil
			}
			b, err := c.AllocUB(32)
			if err != nil {
				return err
			}
			for i := range 16 {
				b.F16()[i] = 0x4700 // 7
			}
			return write(ctx, c, x, b)
		})
		if err != nil {
			t.Fatalf("%s: launch: %v", name, err)
		}
		if same, i := tensor.BitsEqual(x, orig); !same {
			t.Errorf("%s: the caller's x changed at element %d, want it untouched", name, i)
		}
		// Every core of a second launch reads element 16 back by DMA.
		var got [4]float64
		if _, err := dev.Launch(ctx, 4, func(c *Core) error {
			b, err := loadUB(c, x, 16, 16)
			if err != nil {
				return err
			}
			got[c.BlockIdx] = float64(b.F16()[0].Float32())
			return nil
		}); err != nil {
			t.Fatalf("%s: read-back launch: %v", name, err)
		}
		for i, v := range got {
			if v != 7 {
				t.Errorf("%s: core %d read x[16] = %v after the write, want 7", name, i, v)
			}
		}
		wr := w.Written()
		if len(wr) != 1 || !strings.Contains(wr["x"], "first difference at element 16: 7, was 17") {
			t.Errorf("%s: Written() = %v, want x at element 16 only", name, wr)
		}
	}
}

// TestCopyOnWriteCostsNothingUnwritten: reads copy nothing, a write of an
// input's own values is not reported, and tensors that are not inputs
// (outputs) are written in place.
func TestCopyOnWriteCostsNothingUnwritten(t *testing.T) {
	x, out := ramp(tensor.Float16, 32), tensor.MustNew(tensor.Float16, 32)
	w := NewCopyOnWrite(map[string]*tensor.Tensor{"x": x})
	ctx := WithCopyOnWrite(bg, w)
	dev := newDev(t, Ascend910B())
	if _, err := dev.Launch(ctx, 1, func(c *Core) error {
		b, err := loadUB(c, x, 0, 32)
		if err != nil {
			return err
		}
		return c.DataCopyOut(out, 0, b, 32)
	}); err != nil {
		t.Fatal(err)
	}
	if w.copies != nil {
		t.Errorf("reading x made copies %v, want none", w.copies)
	}
	if same, i := tensor.BitsEqual(out, x); !same {
		t.Errorf("out differs from x at element %d: an output was not written in place", i)
	}
	if _, err := dev.Launch(ctx, 1, func(c *Core) error {
		b, err := loadUB(c, x, 0, 32)
		if err != nil {
			return err
		}
		return c.DataCopyOut(x, 0, b, 32) // x's own values
	}); err != nil {
		t.Fatal(err)
	}
	if w.copies == nil {
		t.Error("a write into x made no copy")
	}
	if wr := w.Written(); wr != nil {
		t.Errorf("Written() = %v after x was written with its own values, want nil", wr)
	}
	if HostWrite(bg, x) != x || HostWrite(ctx, out) != out {
		t.Error("HostWrite returned a copy of a tensor that is not a copy-on-write input")
	}
}

// loadUB copies n fp16 elements of x from element off into a new UB buffer.
func loadUB(c *Core, x *tensor.Tensor, off, n int) (*Buffer, error) {
	b, err := c.AllocUB(2 * n)
	if err != nil {
		return nil, err
	}
	return b, c.DataCopyIn(b, x, off, n)
}

// TestCopyOnWriteIsolatesRuns: two runs of one input, each under its own
// guard as the harness runs them (the mutation score runs a case against
// every fault at once), one writing the input and one reading it, side by
// side: the reader always sees the caller's values.
func TestCopyOnWriteIsolatesRuns(t *testing.T) {
	x := ramp(tensor.Float16, 64)
	dev := newDev(t, Ascend910B())
	errs := make(chan error, 2)
	var seen [200]float64
	go func() { // the writer
		for range 200 {
			ctx := WithCopyOnWrite(bg, NewCopyOnWrite(map[string]*tensor.Tensor{"x": x}))
			_, err := dev.Launch(ctx, 1, func(c *Core) error {
				b, err := loadUB(c, x, 0, 32)
				if err != nil {
					return err
				}
				clear(b.F16())
				return c.DataCopyOut(x, 16, b, 32)
			})
			if err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	go func() { // the reader
		for i := range seen {
			ctx := WithCopyOnWrite(bg, NewCopyOnWrite(map[string]*tensor.Tensor{"x": x}))
			_, err := dev.Launch(ctx, 1, func(c *Core) error {
				b, err := loadUB(c, x, 16, 16)
				if err != nil {
					return err
				}
				seen[i] = float64(b.F16()[0].Float32())
				return nil
			})
			if err != nil {
				errs <- err
				return
			}
		}
		errs <- nil
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range seen {
		if v != 17 {
			t.Fatalf("read %d of x[16] beside a run that writes x: %v, want the caller's 17", i, v)
		}
	}
}
