package npu

import (
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// onCore runs f on block 0 of a one-block launch and returns its error.
func onCore(t *testing.T, f func(c *Core) error) error {
	t.Helper()
	_, err := newDev(t, noL2(Ascend910B())).Launch(bg, 1, f) // the primitives' closed forms are without L2
	return err
}

func TestAllocUBCapacity(t *testing.T) {
	const ub = 192 << 10
	for _, c := range []struct {
		name  string
		sizes []int
		fail  int    // index of the allocation that must fail, -1 for none
		want  string // substring of the error
	}{
		{"exact capacity", []int{ub}, -1, ""},
		{"one byte over", []int{ub + 1}, 0, "capacity"},
		{"full then one", []int{ub, 1}, 1, "capacity"},
		{"rounding pushes over", []int{ub - 32, 1, 1}, 2, "capacity"},
		{"six 32 KiB buffers", []int{32 << 10, 32 << 10, 32 << 10, 32 << 10, 32 << 10, 32 << 10}, -1, ""},
		{"seventh 32 KiB buffer", []int{32 << 10, 32 << 10, 32 << 10, 32 << 10, 32 << 10, 32 << 10, 32}, 6, "capacity"},
		{"negative", []int{-1}, 0, "negative"},
	} {
		err := onCore(t, func(core *Core) error {
			for i, s := range c.sizes {
				_, err := core.AllocUB(s)
				if (err != nil) != (i == c.fail) {
					t.Errorf("AllocUB %s: allocation %d of %d bytes: got err %v, want failure=%v", c.name, i, s, err, i == c.fail)
				}
				if err != nil && !strings.Contains(err.Error(), c.want) {
					t.Errorf("AllocUB %s: got %v want an error mentioning %q", c.name, err, c.want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestAllocUBAlignmentPeakFree(t *testing.T) {
	err := onCore(t, func(c *Core) error {
		a, err := c.AllocUB(1)
		if err != nil {
			return err
		}
		if a.Len() != 32 || a.Offset() != 0 || c.Used(UB) != 32 || a.Space() != UB {
			t.Errorf("AllocUB(1): got len %d offset %d used %d want 32, 0, 32", a.Len(), a.Offset(), c.Used(UB))
		}
		for i, v := range a.Bytes() {
			if v != Poison {
				t.Fatalf("AllocUB(1): byte %d: got %#x want poison %#x", i, v, Poison)
			}
		}
		b, _ := c.AllocUB(33) // 64 bytes at 32
		d, _ := c.AllocUB(100)
		if b.Offset() != 32 || b.Len() != 64 || d.Offset() != 96 || d.Len() != 128 || c.Used(UB) != 224 {
			t.Errorf("AllocUB(33), (100): got offsets %d, %d lens %d, %d want 32, 96, 64, 128", b.Offset(), d.Offset(), b.Len(), d.Len())
		}
		if len(b.F16()) != 32 || len(b.F32()) != 16 || len(b.I8()) != 64 || len(b.BF16()) != 32 || len(b.I32()) != 16 || len(b.U8()) != 64 {
			t.Errorf("typed views of 64 bytes: wrong lengths")
		}
		b.F32()[1] = 1.5
		if b.Bytes()[4] != 0 || b.Bytes()[7] != 0x3f {
			t.Errorf("typed view does not alias the bytes")
		}
		if err := c.Free(b); err != nil {
			return err
		}
		if err := c.Free(b); err == nil {
			t.Errorf("double Free: got nil error want an error")
		}
		if c.Used(UB) != 160 || c.Peak(UB) != 224 {
			t.Errorf("after Free: got used %d peak %d want 160, 224", c.Used(UB), c.Peak(UB))
		}
		// First fit reuses the 64-byte hole.
		e, _ := c.AllocUB(64)
		if e.Offset() != 32 {
			t.Errorf("first fit: got offset %d want 32", e.Offset())
		}
		if err := c.Add(tensor.Float16, b, a, a, 1); err == nil || !strings.Contains(err.Error(), "after Free") {
			t.Errorf("use after Free: got %v want an error", err)
		}
		c.ResetUB()
		if c.Used(UB) != 0 || c.Peak(UB) != 224 {
			t.Errorf("ResetUB: got used %d peak %d want 0, 224", c.Used(UB), c.Peak(UB))
		}
		if err := c.Add(tensor.Float16, a, a, a, 1); err == nil {
			t.Errorf("use after ResetUB: got nil error want an error")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestAllocFragmentation(t *testing.T) {
	err := onCore(t, func(c *Core) error {
		var bufs []*Buffer
		for range 6 {
			b, err := c.AllocUB(32 << 10)
			if err != nil {
				return err
			}
			bufs = append(bufs, b)
		}
		// Free every other buffer: 96 KiB free in three 32 KiB holes.
		for i := 0; i < 6; i += 2 {
			if err := c.Free(bufs[i]); err != nil {
				return err
			}
		}
		if _, err := c.AllocUB(64 << 10); err == nil || !strings.Contains(err.Error(), "contiguous") {
			t.Errorf("AllocUB 64 KiB in 32 KiB holes: got %v want a fragmentation error", err)
		}
		if _, err := c.AllocUB(32 << 10); err != nil {
			t.Errorf("AllocUB 32 KiB into a hole: got %v want nil", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOtherSpaces(t *testing.T) {
	err := onCore(t, func(c *Core) error {
		for _, s := range []struct {
			space    Space
			cap, aln int
		}{{L1, 512 << 10, 32}, {L0A, 64 << 10, 512}, {L0B, 64 << 10, 512}, {L0C, 128 << 10, 64}} {
			b, err := c.Alloc(s.space, 1)
			if err != nil || b.Len() != s.aln || b.Space() != s.space {
				t.Errorf("Alloc(%s, 1): got %v, %v want %d bytes", s.space, b, err, s.aln)
			}
			if _, err := c.Alloc(s.space, s.cap); err == nil {
				t.Errorf("Alloc(%s, capacity) after 1 byte: got nil error want an error", s.space)
			}
			c.Reset(s.space)
			if _, err := c.Alloc(s.space, s.cap); err != nil {
				t.Errorf("Alloc(%s, capacity) after Reset: got %v want nil", s.space, err)
			}
		}
		// Vector primitives work on UB only.
		c.Reset(L1)
		l1, _ := c.Alloc(L1, 64)
		ub, _ := c.AllocUB(64)
		if err := c.Add(tensor.Float16, ub, l1, ub, 1); err == nil || !strings.Contains(err.Error(), "L1") {
			t.Errorf("Add on an L1 buffer: got %v want an error naming L1", err)
		}
		if _, err := c.Alloc(Space(9), 1); err == nil {
			t.Errorf("Alloc(invalid space): got nil error want an error")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBufferOfAnotherCore(t *testing.T) {
	handoff := make(chan *Buffer)
	done := make(chan struct{})
	_, err := newDev(t, Ascend910B()).Launch(bg, 2, func(c *Core) error {
		if c.BlockIdx == 0 {
			b, err := c.AllocUB(32)
			if err != nil {
				return err
			}
			handoff <- b
			<-done // keep b alive until block 1 has tried it
			return nil
		}
		defer close(done)
		foreign := <-handoff
		own, _ := c.AllocUB(32)
		if err := c.Add(tensor.Float16, own, foreign, own, 1); err == nil || !strings.Contains(err.Error(), "another core") {
			t.Errorf("Add with another core's buffer: got %v want an error", err)
		}
		if err := c.Free(foreign); err == nil {
			t.Errorf("Free of another core's buffer: got nil error want an error")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFill checks both of fill's paths (Poison block copies, doubling
// copies for other bytes) on lengths around the 4 KiB block: every byte
// of the slice is set and nothing past it is touched.
func TestFill(t *testing.T) {
	for _, v := range []byte{Poison, 0x00, 0x5A} {
		for _, n := range []int{0, 1, 31, 32, 33, 4095, 4096, 4097, 8192, 12289} {
			buf := make([]byte, n+8)
			for i := range buf {
				buf[i] = 0x11
			}
			fill(buf[:n:n], v)
			for i, x := range buf {
				want := v
				if i >= n {
					want = 0x11
				}
				if x != want {
					t.Fatalf("fill(%d bytes, %#x): byte %d: got %#x want %#x", n, v, i, x, want)
				}
			}
		}
	}
}
