package kernels

import (
	"math"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
	"github.com/x448/float16"
)

// TestKernelArithmeticNaNDefault checks that the kernels' own Go
// arithmetic gives the default NaN (npu.CanonNaN) whatever the operands'
// NaN payloads and signs: the gemm epilogue's rounding, kv_update's
// projection and quantisation scale.
func TestKernelArithmeticNaNDefault(t *testing.T) {
	inf := math.Inf(1)
	nans := []float64{inf - inf, inf * 0, float64(math.Float32frombits(0x7FC12345)), float64(math.Float32frombits(0xFFE54321)), math.Float64frombits(0x7FF8000000000001)}
	for _, e := range []tensor.DType{tensor.Float16, tensor.Float32} {
		for _, x := range nans {
			if got := math.Float32bits(roundTo(e, x)); got != npu.DefaultNaN32Bits {
				t.Errorf("roundTo(%s, %#016x): got %#08x / want the default NaN %#08x", e, math.Float64bits(x), got, npu.DefaultNaN32Bits)
			}
		}
	}
	dev := npu.MustNewDevice(npu.Ascend910B())
	_, err := dev.Launch(t.Context(), 1, func(c *npu.Core) error {
		const d = 4
		for _, nb := range []uint16{0x7E55, 0xFE01, 0x7C01, 0x7E00} {
			x := []float16.Float16{float16.Fromfloat32(1), float16.Float16(nb), float16.Fromfloat32(2), float16.Fromfloat32(-1)}
			w := make([]float16.Float16, d*d)
			for i := range w {
				w[i] = float16.Fromfloat32(0.5)
			}
			out := make([]float16.Float16, d)
			kvProject(c, make([]float32, d), make([]float32, d*d), x, w, out)
			for j, o := range out {
				if o != npu.DefaultNaN16Bits {
					t.Errorf("kvProject with x[1] = %#04x: out[%d] = %#04x / want the default NaN %#04x", nb, j, o, npu.DefaultNaN16Bits)
				}
			}
			q := make([]int8, d)
			if sc, err := kvQuantise(c, tensor.Numerics{}, x, q, nil); err != nil || math.Float32bits(sc) != npu.DefaultNaN32Bits {
				t.Errorf("kvQuantise with v[1] = %#04x: scale %#08x / want the default NaN %#08x", nb, math.Float32bits(sc), npu.DefaultNaN32Bits)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("launch: got error %v want nil", err)
	}
}
