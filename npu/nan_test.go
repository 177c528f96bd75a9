package npu

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// nanOperands are fp32 operand pairs whose sum, difference or product
// is a NaN for at least one of the three ops: NaNs with payloads and
// both signs (quiet and signalling), ∞ − ∞ and 0·∞, against each other
// and against ordinary values.
func nanOperands() (a, b []float32) {
	nans := []uint32{0x7FC00000, 0xFFC00000, 0x7FC12345, 0xFFE54321, 0x7F812345, 0xFF800001, 0x7FFFFFFF}
	others := []float32{0, float32(math.Copysign(0, -1)), 1.5, -3, float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, x := range nans {
		for _, y := range nans {
			a, b = append(a, math.Float32frombits(x)), append(b, math.Float32frombits(y))
		}
		for _, y := range others {
			a, b = append(a, math.Float32frombits(x), y), append(b, y, math.Float32frombits(x))
		}
	}
	inf := float32(math.Inf(1))
	a = append(a, inf, -inf, inf, 0, -inf, float32(math.Copysign(0, -1)))
	b = append(b, inf, -inf, -inf, inf, 0, -inf)
	return a, b
}

// TestVectorNaNDefault checks that Add, Sub and Mul give the default NaN
// of the dtype (nan.go) for every NaN result, whatever the operands'
// payloads and signs, and that Cast, a conversion, keeps a NaN's sign and
// payload (quieted, truncated) as float16.Fromfloat32 and
// tensor.BF16FromFloat32 do.
func TestVectorNaNDefault(t *testing.T) {
	a32, b32 := nanOperands()
	n := len(a32)
	ops := []struct {
		name string
		f    func(c *Core, dt tensor.DType, d, a, b *Buffer, n int) error
	}{{"Add", (*Core).Add}, {"Sub", (*Core).Sub}, {"Mul", (*Core).Mul}}
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32} {
		x, y := tensor.MustNew(dt, n), tensor.MustNew(dt, n)
		for i := range n {
			switch dt {
			case tensor.Float16:
				x.F16()[i], y.F16()[i] = float16.Fromfloat32(a32[i]), float16.Fromfloat32(b32[i])
			case tensor.BFloat16:
				x.BF16s()[i], y.BF16s()[i] = tensor.BF16FromFloat32(a32[i]), tensor.BF16FromFloat32(b32[i])
			default:
				x.F32()[i], y.F32()[i] = a32[i], b32[i]
			}
		}
		want := map[tensor.DType]uint64{tensor.Float16: DefaultNaN16Bits, tensor.BFloat16: DefaultNaNBF16Bits, tensor.Float32: DefaultNaN32Bits}[dt]
		for _, op := range ops {
			z, _, err := runOnUB(t, tensor.Numerics{}, dt, n, []*tensor.Tensor{x, y}, func(c *Core, d *Buffer, s []*Buffer) error {
				return op.f(c, dt, d, s[0], s[1], n)
			})
			if err != nil {
				t.Fatalf("%s dtype=%s: got error %v want nil", op.name, dt, err)
			}
			nans := 0
			for i := range n {
				if v := z.Float64(i); v == v {
					continue
				}
				nans++
				if got := z.Bits(i); got != want {
					t.Errorf("%s dtype=%s: [%d] %#x, %#x: got NaN %#x / want the default NaN %#x", op.name, dt, i, x.Bits(i), y.Bits(i), got, want)
				}
			}
			if nans < n/2 {
				t.Errorf("%s dtype=%s: %d NaN results of %d / want ≥ %d", op.name, dt, nans, n, n/2)
			}
		}
	}
	// Cast fp32 → fp16 and bf16 is a conversion: the payload stays.
	src := tensor.MustNew(tensor.Float32, n)
	copy(src.F32(), a32)
	for _, to := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		z, _, err := runOnUB(t, tensor.Numerics{}, to, n, []*tensor.Tensor{src}, func(c *Core, d *Buffer, s []*Buffer) error {
			return c.Cast(to, tensor.Float32, d, s[0], n)
		})
		if err != nil {
			t.Fatalf("Cast %s: got error %v want nil", to, err)
		}
		for i, f := range a32 {
			want := uint64(float16.Fromfloat32(f))
			if to == tensor.BFloat16 {
				want = uint64(tensor.BF16FromFloat32(f))
			}
			if got := z.Bits(i); got != want {
				t.Errorf("Cast fp32→%s of %#08x: got %#x / want %#x (the conversion)", to, math.Float32bits(f), got, want)
			}
		}
	}
}
