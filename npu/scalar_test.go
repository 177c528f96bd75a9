package npu

import (
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// scalarKernel copies x in (MTE2), adds it to itself on V into o, runs
// sync, reads o on the scalar (read: ScalarRead's range, nil for none),
// then copies the second half of x in (an address the scalar read would
// decide) and both results out. times, if not nil, gets the end of the
// Add, and the start and end of the dependent copy in.
func scalarKernel(x, z *tensor.Tensor, n int, sync func(c *Core), read bool, times *[3]int64) Kernel {
	return func(c *Core) error {
		if err := c.SetSyncMode(SyncExplicit); err != nil {
			return err
		}
		a, _ := c.AllocUB(4 * n)
		o, _ := c.AllocUB(4 * n)
		b, _ := c.AllocUB(4 * n)
		if err := c.DataCopyIn(a, x, 0, n); err != nil {
			return err
		}
		c.SetFlag(PipeMTE2, PipeV, 0)
		c.WaitFlag(PipeMTE2, PipeV, 0)
		if err := c.Add(tensor.Float32, o, a, a, n); err != nil {
			return err
		}
		addEnd := c.sch.free[PipeV]
		if sync != nil {
			sync(c)
		}
		if read {
			if err := c.ScalarRead(o, 4, 8); err != nil {
				return err
			}
		}
		start := c.sch.free[PipeMTE2]
		if err := c.DataCopyIn(b, x, n, n); err != nil {
			return err
		}
		if times != nil && c.BlockIdx == 0 {
			*times = [3]int64{addEnd, start, c.sch.free[PipeMTE2]}
		}
		c.SetFlag(PipeV, PipeMTE3, 0)
		c.WaitFlag(PipeV, PipeMTE3, 0)
		c.SetFlag(PipeMTE2, PipeMTE3, 1)
		c.WaitFlag(PipeMTE2, PipeMTE3, 1)
		if err := c.DataCopyOut(z, 2*n*c.BlockIdx, o, n); err != nil {
			return err
		}
		return c.DataCopyOut(z, 2*n*c.BlockIdx+n, b, n)
	}
}

func waitVS(c *Core) { c.SetFlag(PipeV, PipeS, 2); c.WaitFlag(PipeV, PipeS, 2) }

// TestScalarWaitSchedule: an instruction issued after WaitFlag(V, S)
// starts when the V instruction before the set ends, on a pipe the
// kernel never ordered after V; without the wait the same copy starts
// under the Add, as soon as MTE2 is free.
func TestScalarWaitSchedule(t *testing.T) {
	d := newDev(t, unitProfile())
	const n = 64
	run := func(sync func(c *Core)) [3]int64 {
		t.Helper()
		x := tensor.MustNew(tensor.Float32, 2*n)
		z := tensor.MustNew(tensor.Float32, 2*n)
		var tm [3]int64
		if _, err := d.Launch(bg, 1, scalarKernel(x, z, n, sync, false, &tm)); err != nil {
			t.Fatal(err)
		}
		return tm
	}
	free, waited := run(nil), run(waitVS)
	if free[1] >= free[0] {
		t.Fatalf("without the scalar wait the dependent copy starts at %d, want under the Add (ends %d): the test needs the overlap", free[1], free[0])
	}
	if waited[1] != waited[0] {
		t.Errorf("after WaitFlag(V, S) the dependent copy starts at %d, want at the Add's end %d", waited[1], waited[0])
	}
	if cyc := free[2] - free[1]; waited[2]-waited[1] != cyc {
		t.Errorf("the copy takes %d cycles after the wait, %d without", waited[2]-waited[1], cyc)
	}
	// A scalar event from S fires as issued: no pipe waits on it.
	if got := run(func(c *Core) { c.SetFlag(PipeS, PipeMTE2, 3); c.WaitFlag(PipeS, PipeMTE2, 3) }); got != free {
		t.Errorf("SetFlag/WaitFlag(S, MTE2) moved the schedule: %v, want %v", got, free)
	}
}

// TestScalarReadSanitizer: a scalar read of bytes V wrote is clean after
// WaitFlag(V, S), a PipeBarrier(PipeAll) or in implicit mode, and a RAW
// on pipe S naming the buffer, the bytes read and both instructions
// without a wait or after a wait for the wrong pipe; a read of bytes
// never written is uninit; a range outside the buffer is an error.
func TestScalarReadSanitizer(t *testing.T) {
	d := newDev(t, unitProfile())
	const n = 64
	for _, c := range []struct {
		name string
		sync func(c *Core)
		want string
	}{
		{"wait V->S", waitVS, ""},
		{"barrier", func(c *Core) { c.PipeBarrier(PipeAll) }, ""},
		{"none", nil, KindRAW},
		{"wrong pipe", func(c *Core) { c.SetFlag(PipeMTE2, PipeS, 2); c.WaitFlag(PipeMTE2, PipeS, 2) }, KindRAW},
		{"set never waited", func(c *Core) { c.SetFlag(PipeV, PipeS, 2) }, KindRAW + "," + KindFlag},
	} {
		x := tensor.MustNew(tensor.Float32, 2*n)
		z := tensor.MustNew(tensor.Float32, 4*n)
		cost, err := d.Launch(bg, 2, scalarKernel(x, z, n, c.sync, true, nil))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := findingKinds(cost.Findings); got != c.want {
			t.Errorf("%s: got findings %q (%v) want %q", c.name, got, cost.Findings, c.want)
			continue
		}
		if strings.HasPrefix(c.want, KindRAW) {
			f := cost.Findings[0]
			if f.Core != 0 || f.Pipe != PipeS || f.Buffer != "UB@0x100" || f.Lo != 4 || f.Hi != 12 || f.Inst != "S ScalarRead#1" || f.Other != "V Add#1" {
				t.Errorf("%s: got finding %+v want core 0, pipe S, UB@0x100 [4, 12), S ScalarRead#1 vs V Add#1", c.name, f)
			}
			if !strings.Contains(f.Message, "and 1 more") || !strings.Contains(f.Message, "WaitFlag(V, S)") {
				t.Errorf("%s: got message %q want the second core counted and the wait named", c.name, f.Message)
			}
		}
	}
	// Off the sanitizer, a missing wait is not reported.
	x, z := tensor.MustNew(tensor.Float32, 2*n), tensor.MustNew(tensor.Float32, 2*n)
	cost, err := d.Launch(WithSanitizer(bg, false), 1, scalarKernel(x, z, n, nil, true, nil))
	if err != nil || len(cost.Findings) != 0 {
		t.Errorf("sanitizer off: got %v, %v want no finding", cost.Findings, err)
	}
	cost, err = d.Launch(bg, 1, func(c *Core) error {
		if err := c.SetSyncMode(SyncExplicit); err != nil {
			return err
		}
		b, _ := c.AllocUB(64)
		if err := c.ScalarRead(b, 0, 65); err == nil {
			t.Errorf("ScalarRead past the buffer: got no error")
		}
		return c.ScalarRead(b, 32, 4)
	})
	if err != nil || findingKinds(cost.Findings) != KindUninit || cost.Findings[0].Pipe != PipeS || cost.Findings[0].Lo != 32 || cost.Findings[0].Hi != 36 {
		t.Errorf("read of a fresh buffer: got %v, %v want one uninit on S at [32, 36)", cost.Findings, err)
	}
}

// TestScalarReadImplicit: in implicit mode a scalar read orders every
// later instruction after the producer of the buffer it reads (the wait
// the derived synchronisation writes); without it a copy in of another
// buffer starts under the Add.
func TestScalarReadImplicit(t *testing.T) {
	d := newDev(t, unitProfile())
	const n = 64
	run := func(read bool) (addEnd, start int64) {
		t.Helper()
		x, z := tensor.MustNew(tensor.Float32, 2*n), tensor.MustNew(tensor.Float32, 2*n)
		_, err := d.Launch(bg, 1, func(c *Core) error {
			a, _ := c.AllocUB(4 * n)
			o, _ := c.AllocUB(4 * n)
			b, _ := c.AllocUB(4 * n)
			if err := c.DataCopyIn(a, x, 0, n); err != nil {
				return err
			}
			cyc := a.wEnd // the first copy starts at 0; the second is as long
			if err := c.Add(tensor.Float32, o, a, a, n); err != nil {
				return err
			}
			addEnd = o.wEnd
			if read {
				if err := c.ScalarRead(o, 0, 4); err != nil {
					return err
				}
			}
			if err := c.DataCopyIn(b, x, n, n); err != nil {
				return err
			}
			start = b.wEnd - cyc
			return c.DataCopyOut(z, 0, o, n)
		})
		if err != nil {
			t.Fatal(err)
		}
		return addEnd, start
	}
	if addEnd, start := run(false); start >= addEnd {
		t.Fatalf("without a scalar read the copy starts at %d, want under the Add (ends %d): the test needs the overlap", start, addEnd)
	}
	if addEnd, start := run(true); start != addEnd {
		t.Errorf("after a scalar read the copy starts at %d, want at the Add's end %d", start, addEnd)
	}
}

// TestScalarWriteSanitizer: the scalar overwriting a buffer whose copy
// out it has not waited for is a WAR on pipe S naming the store; after
// WaitFlag(MTE3, S) or a PipeBarrier(PipeAll) it is clean, and the next
// copy out of the bytes the scalar wrote reads them without a finding.
func TestScalarWriteSanitizer(t *testing.T) {
	d := newDev(t, unitProfile())
	for _, c := range []struct {
		name string
		sync func(c *Core)
		want string
	}{
		{"wait MTE3->S", func(c *Core) { c.SetFlag(PipeMTE3, PipeS, 1); c.WaitFlag(PipeMTE3, PipeS, 1) }, ""},
		{"barrier", func(c *Core) { c.PipeBarrier(PipeAll) }, ""},
		{"none", func(c *Core) {}, KindWAR},
		{"wrong pipe", func(c *Core) { c.SetFlag(PipeV, PipeS, 1); c.WaitFlag(PipeV, PipeS, 1) }, KindWAR},
	} {
		z := tensor.MustNew(tensor.Int32, 16)
		cost, err := d.Launch(bg, 2, func(k *Core) error {
			if err := k.SetSyncMode(SyncExplicit); err != nil {
				return err
			}
			fb, _ := k.AllocUB(32)
			for i := range 2 {
				if i > 0 {
					c.sync(k)
				}
				if err := k.ScalarWrite(fb, 0, 4); err != nil {
					return err
				}
				fb.I32()[0] = int32(10*k.BlockIdx + i)
				if err := k.DataCopyPadOut(z, 8*k.BlockIdx+i, fb, 1); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := findingKinds(cost.Findings); got != c.want {
			t.Errorf("%s: got findings %q (%v) want %q", c.name, got, cost.Findings, c.want)
			continue
		}
		if c.want == KindWAR {
			f := cost.Findings[0]
			if f.Pipe != PipeS || f.Inst != "S ScalarWrite#2" || f.Other != "MTE3 DataCopyPadOut#1" || f.Lo != 0 || f.Hi != 4 || !strings.Contains(f.Message, "WaitFlag(MTE3, S)") {
				t.Errorf("%s: got finding %+v want a WAR on S, S ScalarWrite#2 vs MTE3 DataCopyPadOut#1, bytes [0, 4), naming WaitFlag(MTE3, S)", c.name, f)
			}
		}
		if got := z.I32(); got[0] != 0 || got[1] != 1 || got[8] != 10 || got[9] != 11 {
			t.Errorf("%s: got %v want the scalar's values stored", c.name, got)
		}
	}
}

// TestScalarAccessErrors: a scalar access to no buffer, to another
// core's or a freed one, or past a buffer's end is an error naming the
// access, in either sync mode, not a panic or a silent read.
func TestScalarAccessErrors(t *testing.T) {
	d := newDev(t, unitProfile())
	for _, mode := range []SyncMode{SyncImplicit, SyncExplicit} {
		var errs []error
		kernel := func(c *Core) error {
			if err := c.SetSyncMode(mode); err != nil {
				return err
			}
			b, err := c.Alloc(UB, 64)
			if err != nil {
				return err
			}
			errs = append(errs, c.ScalarRead(nil, 0, 4), c.ScalarWrite(nil, 0, 4),
				c.ScalarRead(b, 60, 8), c.ScalarWrite(b, -1, 2))
			if err := c.Free(b); err != nil {
				return err
			}
			errs = append(errs, c.ScalarRead(b, 0, 4))
			return nil
		}
		if _, err := d.LaunchOn(bg, AICore, 1, kernel); err != nil {
			t.Fatalf("scalar errors mode=%d: %v", mode, err)
		}
		for i, err := range errs {
			if want := []string{"ScalarRead", "ScalarWrite", "ScalarRead", "ScalarWrite", "ScalarRead"}[i]; err == nil || !strings.HasPrefix(err.Error(), want+":") {
				t.Errorf("scalar errors mode=%d: access %d: got %v want an error starting %q", mode, i, err, want+":")
			}
		}
	}
}
