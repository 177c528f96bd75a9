package npu

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestGuardedOutputTensorOwnsItsMemory: whether Tensor copies (a small
// output, whose GM Release recycles) or views the GM (one too large to be
// pooled), the tensor keeps its values through Release and the next
// output of the same size.
func TestGuardedOutputTensorOwnsItsMemory(t *testing.T) {
	for _, n := range []int{100, unpooled} {
		g, err := NewGuardedOutput("z", tensor.Float16, n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			g.GM().SetBits(g.Base()+i, uint64(i%1000))
		}
		out := g.Tensor()
		if !out.SameShape([]int{n}) {
			t.Fatalf("n=%d: Tensor() is %s, want fp16[%d]", n, out, n)
		}
		g.Release()
		for range 3 { // a pooled GM comes back from a later Get
			g2, err := NewGuardedOutput("z", tensor.Float16, n)
			if err != nil {
				t.Fatal(err)
			}
			for i := range n {
				g2.GM().SetBits(g2.Base()+i, 0x3c00)
			}
			g2.Release()
		}
		for i := range n {
			if got := out.Bits(i); got != uint64(i%1000) {
				t.Fatalf("n=%d: Tensor()[%d] = %#x after Release and a new output, want %#x", n, i, got, i%1000)
			}
		}
	}
}

func TestGuardedOutputLayout(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32, tensor.Float16, tensor.BFloat16, tensor.Int8, tensor.Int32, tensor.Uint8} {
		g, err := NewGuardedOutput("z", dt, 3, 5)
		if err != nil {
			t.Fatalf("%s: %v", dt, err)
		}
		if g.Len() != 15 || g.Base()*dt.Size() != GuardBytes || g.GM().Len() != 15+2*g.Base() {
			t.Fatalf("%s: len %d base %d gm %d, want 15, %d, %d", dt, g.Len(), g.Base(), g.GM().Len(), GuardBytes/dt.Size(), 15+2*GuardBytes/dt.Size())
		}
		if v := g.Check(); v != nil {
			t.Errorf("%s: fresh output reports %v", dt, v)
		}
		out := g.Tensor()
		if !out.SameShape([]int{3, 5}) || out.DType != dt {
			t.Fatalf("%s: Tensor() is %s, want %s[3 5]", dt, out, dt)
		}
		// Unwritten elements are Poison: NaN in the float formats.
		if dt.IsFloat() && !math.IsNaN(out.Float64(0)) {
			t.Errorf("%s: unwritten element is %g, want NaN (Poison)", dt, out.Float64(0))
		}
		// A guard element that is not the sentinel is a float NaN that
		// arithmetic would never produce.
		if dt.IsFloat() && !math.IsNaN(g.GM().Float64(0)) {
			t.Errorf("%s: guard sentinel %g is not a NaN", dt, g.GM().Float64(0))
		}
	}
}

func TestGuardedOutputDetectsWrites(t *testing.T) {
	g, err := NewGuardedOutput("z", tensor.Float16, 257)
	if err != nil {
		t.Fatal(err)
	}
	gm, base := g.GM(), g.Base()
	for i := range 257 {
		gm.SetFloat64(base+i, 1, tensor.Numerics{})
	}
	if err := CheckGuards(g); err != nil {
		t.Fatalf("writes inside the output reported: %v", err)
	}
	gm.SetFloat64(base+257, 1, tensor.Numerics{}) // one past the end
	gm.SetFloat64(base+259, 2, tensor.Numerics{})
	gm.SetFloat64(base-1, 3, tensor.Numerics{}) // one before the start
	err = CheckGuards(g)
	var ge *GuardError
	if !errors.As(err, &ge) || len(ge.Violations) != 1 {
		t.Fatalf("CheckGuards = %v, want a *GuardError with one violation", err)
	}
	v := ge.Violations[0]
	if v.Output != "z" || v.N != 257 || v.Before != 1 || v.After != 2 || v.First != -1 || v.Last != 259 {
		t.Errorf("violation %+v, want output z, N 257, 1 before (index -1), 2 after (highest 259)", v)
	}
	for _, want := range []string{`output "z"`, "past the end (highest index 259)", "before the start (lowest index -1)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if out := g.Tensor(); out.Float64(256) != 1 {
		t.Errorf("Tensor()[256] = %g, want 1", out.Float64(256))
	}
}

// A DMA through the ordinary DataCopy API may write into a guard (as a
// device's DMA would write into the neighbouring allocation), and the
// guard check sees it; beyond the guard the copy is still an error.
func TestGuardCatchesDMAPastEnd(t *testing.T) {
	dev := MustNewDevice(Ascend910B())
	g, err := NewGuardedOutput("z", tensor.Float32, 10)
	if err != nil {
		t.Fatal(err)
	}
	_, err = dev.Launch(context.Background(), 1, func(c *Core) error {
		b, err := c.AllocUB(64)
		if err != nil {
			return err
		}
		if err := c.Duplicate(tensor.Float32, b, 1, 11); err != nil {
			return err
		}
		return c.DataCopyPadOut(g.GM(), g.Base(), b, 11) // n+1 elements
	})
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	var ge *GuardError
	if err := CheckGuards(g); !errors.As(err, &ge) || ge.Violations[0].After != 1 || ge.Violations[0].Last != 10 {
		t.Fatalf("CheckGuards = %v, want one element past the end at index 10", err)
	}
	_, err = dev.Launch(context.Background(), 1, func(c *Core) error {
		b, err := c.AllocUB(GuardBytes + 64)
		if err != nil {
			return err
		}
		return c.DataCopyPadOut(g.GM(), g.Base(), b, 10+GuardBytes/4+1)
	})
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("a copy beyond the guard: err = %v, want out of range", err)
	}
}

func TestGuardedMatrix(t *testing.T) {
	dev := MustNewDevice(Ascend910B())
	for _, tc := range []struct{ rows, cols, guardRows int }{{5, 7, 16}, {3, 40, 16}, {2, 3, 16}, {4, 1, 32}, {0, 3, 16}} {
		g, err := NewGuardedMatrix("out", tensor.Float16, tc.rows, tc.cols)
		if err != nil {
			t.Fatal(err)
		}
		if g.BaseRow() != tc.guardRows || g.Base() != tc.guardRows*tc.cols || g.Len() != tc.rows*tc.cols {
			t.Errorf("%d×%d: base row %d, base %d, len %d; want %d guard rows", tc.rows, tc.cols, g.BaseRow(), g.Base(), g.Len(), tc.guardRows)
		}
		if tc.rows == 0 {
			continue
		}
		// One row too many through a 2-D copy lands in the guard after.
		_, err = dev.Launch(context.Background(), 1, func(c *Core) error {
			b, err := c.AllocUB((tc.rows + 1) * tc.cols * 2)
			if err != nil {
				return err
			}
			if err := c.Duplicate(tensor.Float16, b, 1, (tc.rows+1)*tc.cols); err != nil {
				return err
			}
			return c.DataCopy2DOut(g.GM(), tc.cols, g.BaseRow(), 0, tc.rows+1, tc.cols, b, tc.cols)
		})
		if err != nil {
			t.Fatal(err)
		}
		v := g.Check()
		if v == nil || v.After != tc.cols || v.Before != 0 {
			t.Errorf("%d×%d: one row past the end gives %+v, want %d elements after", tc.rows, tc.cols, v, tc.cols)
		}
		if out := g.Tensor(); !out.SameShape([]int{tc.rows, tc.cols}) || out.Float64(tc.rows*tc.cols-1) != 1 {
			t.Errorf("%d×%d: Tensor() %s, last %g", tc.rows, tc.cols, out, out.Float64(tc.rows*tc.cols-1))
		}
	}
}

// TestGuardIntact checks guardIntact against the element-by-element
// definition for every element size: an intact band of 0–40 elements,
// each single byte of it changed, and every element changed alike (a
// band that repeats the wrong pattern).
func TestGuardIntact(t *testing.T) {
	for _, dt := range tensor.DTypes() {
		size := dt.Size()
		pat := make([]byte, size)
		for k := range pat {
			pat[k] = byte(guardSentinel(dt) >> (8 * k))
		}
		for n := range 41 {
			b := make([]byte, n*size)
			for i := 0; i < len(b); i += size {
				copy(b[i:], pat)
			}
			if !guardIntact(b, pat) {
				t.Fatalf("guardIntact dtype=%s n=%d: intact band reported touched", dt, n)
			}
			for i := range b {
				b[i] ^= 0x01
				if guardIntact(b, pat) {
					t.Fatalf("guardIntact dtype=%s n=%d: byte %d changed, band reported intact", dt, n, i)
				}
				b[i] ^= 0x01
			}
			for i := 0; i < len(b); i += size {
				b[i] ^= 0x01
			}
			if n > 0 && guardIntact(b, pat) {
				t.Fatalf("guardIntact dtype=%s n=%d: every element changed alike, band reported intact", dt, n)
			}
		}
	}
}
