package npu

import (
	"math"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/npu/internal/testgen"
	"github.com/npuverify/npuverify/tensor"
)

var numericsCases = []tensor.Numerics{
	{},
	{Overflow: tensor.OverflowSaturate},
	{Subnormals: tensor.SubnormalFlush},
	{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush, Int8Rounding: tensor.RoundHalfAway},
}

var vectorDTypes = []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8}

// runOnUB copies the inputs to UB, runs f on their buffers and copies
// the result (of dtype out, n elements) back.
func runOnUB(t *testing.T, num tensor.Numerics, out tensor.DType, n int, ins []*tensor.Tensor,
	f func(c *Core, dst *Buffer, src []*Buffer) error) (*tensor.Tensor, CoreCost, error) {
	t.Helper()
	p := Ascend910B()
	p.Numerics = num
	z := tensor.MustNew(out, n)
	var cc CoreCost
	_, err := newDev(t, p).Launch(bg, 1, func(c *Core) error {
		var src []*Buffer
		for _, x := range ins {
			b, err := c.AllocUB(n * x.DType.Size())
			if err != nil {
				return err
			}
			if err := c.DataCopyPadIn(b, x, 0, n); err != nil {
				return err
			}
			src = append(src, b)
		}
		dst, err := c.AllocUB(n * out.Size())
		if err != nil {
			return err
		}
		before := c.Counters()
		if err := f(c, dst, src); err != nil {
			return err
		}
		cc = c.Counters()
		cc.VectorCycles -= before.VectorCycles
		return c.DataCopyPadOut(z, 0, dst, n)
	})
	return z, cc, err
}

func TestVectorBinary(t *testing.T) {
	const n = 3000
	ops := []struct {
		name string
		f    func(c *Core, dt tensor.DType, d, a, b *Buffer, n int) error
		ref  func(x, y float64) float64
	}{
		{"Add", (*Core).Add, func(x, y float64) float64 { return x + y }},
		{"Sub", (*Core).Sub, func(x, y float64) float64 { return x - y }},
		{"Mul", (*Core).Mul, func(x, y float64) float64 { return x * y }},
	}
	seed := uint64(1)
	for _, op := range ops {
		for _, dt := range vectorDTypes {
			for _, num := range numericsCases {
				seed++
				r := testgen.Rand(seed)
				x := testgen.Values(r, dt, n, num.Overflow == tensor.OverflowInf)
				y := testgen.Values(r, dt, n, num.Overflow == tensor.OverflowInf)
				// Some pairs that cancel or nearly cancel.
				for i := 0; i < n; i += 7 {
					y.SetFloat64(i, -x.Float64(i)*(1+math.Ldexp(float64(r.IntN(5)-2), -12)), tensor.Numerics{})
				}
				z, cc, err := runOnUB(t, num, dt, n, []*tensor.Tensor{x, y}, func(c *Core, d *Buffer, s []*Buffer) error {
					return op.f(c, dt, d, s[0], s[1], n)
				})
				if err != nil {
					t.Fatalf("%s dtype=%s numerics={%v} seed=%d: got error %v want nil", op.name, dt, num, seed, err)
				}
				msg := testgen.Check(z, n, func(i int) float64 { return num.Round(op.ref(x.Float64(i), y.Float64(i)), dt) })
				if msg != "" {
					t.Errorf("%s dtype=%s numerics={%v} seed=%d: %s", op.name, dt, num, seed, msg)
				}
				if want := int64(8 + (n*dt.Size()+255)/256); cc.VectorCycles != want {
					t.Errorf("%s dtype=%s n=%d: vector cycles: got %d want %d", op.name, dt, n, cc.VectorCycles, want)
				}
			}
		}
	}
}

func TestVectorCast(t *testing.T) {
	const n = 2000
	seed := uint64(100)
	for _, from := range vectorDTypes {
		for _, to := range vectorDTypes {
			for _, num := range numericsCases {
				seed++
				x := testgen.Values(testgen.Rand(seed), from, n, num.Overflow == tensor.OverflowInf)
				// Halves exercise the int8 tie rule.
				for i := 0; i < n && from.IsFloat(); i += 5 {
					x.SetFloat64(i, float64(i%300-150)+0.5, tensor.Numerics{})
				}
				z, cc, err := runOnUB(t, num, to, n, []*tensor.Tensor{x}, func(c *Core, d *Buffer, s []*Buffer) error {
					return c.Cast(to, from, d, s[0], n)
				})
				if err != nil {
					t.Fatalf("Cast %s→%s numerics={%v} seed=%d: got error %v want nil", from, to, num, seed, err)
				}
				if msg := testgen.Check(z, n, func(i int) float64 { return num.Round(x.Float64(i), to) }); msg != "" {
					t.Errorf("Cast %s→%s numerics={%v} seed=%d: %s", from, to, num, seed, msg)
				}
				if want := int64(8 + (n*max(from.Size(), to.Size())+255)/256); cc.VectorCycles != want {
					t.Errorf("Cast %s→%s n=%d: vector cycles: got %d want %d", from, to, n, cc.VectorCycles, want)
				}
			}
		}
	}
}

func TestDuplicate(t *testing.T) {
	for _, dt := range vectorDTypes {
		for _, num := range numericsCases {
			for _, v := range []float64{1.0 / 3, -2.5, 1e6, -1e40, math.NaN(), 1e-42} {
				z, _, err := runOnUB(t, num, dt, 40, nil, func(c *Core, d *Buffer, _ []*Buffer) error {
					return c.Duplicate(dt, d, v, 40)
				})
				if err != nil {
					t.Fatalf("Duplicate dtype=%s v=%g: %v", dt, v, err)
				}
				if msg := testgen.Check(z, 40, func(int) float64 { return num.Round(v, dt) }); msg != "" {
					t.Errorf("Duplicate dtype=%s numerics={%v} v=%g: %s", dt, num, v, msg)
				}
			}
		}
	}
}

func TestVectorErrors(t *testing.T) {
	err := onCore(t, func(c *Core) error {
		a, _ := c.AllocUB(64)
		for _, e := range []struct {
			name string
			err  error
			want string
		}{
			{"int32 Add", c.Add(tensor.Int32, a, a, a, 4), "int32"},
			{"fp64 Cast", c.Cast(tensor.Float64, tensor.Float32, a, a, 4), "fp64"},
			{"Add too long", c.Add(tensor.Float16, a, a, a, 33), "holds 64 bytes"},
			{"Add negative", c.Add(tensor.Float16, a, a, a, -1), "negative"},
			{"Add nil", c.Add(tensor.Float16, nil, a, a, 1), "nil"},
			{"in-place widening Cast", c.Cast(tensor.Float32, tensor.Float16, a, a, 4), "in-place"},
			{"Duplicate too long", c.Duplicate(tensor.Float32, a, 1, 17), "holds 64 bytes"},
		} {
			if e.err == nil || !strings.Contains(e.err.Error(), e.want) {
				t.Errorf("%s: got %v want an error containing %q", e.name, e.err, e.want)
			}
		}
		if err := c.Add(tensor.Float16, a, a, a, 0); err != nil {
			t.Errorf("Add n=0: got %v want nil", err)
		}
		if cc := c.Counters(); cc.VectorCycles != 0 {
			t.Errorf("failed and empty vector ops: got %d vector cycles want 0", cc.VectorCycles)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
