package kernels

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/tensor"
)

func TestQuick(t *testing.T) {
	dev := npu.MustNewDevice(npu.Ascend910B())
	n := 1 << 20
	x := tensor.MustNew(tensor.Float16, n)
	y := tensor.MustNew(tensor.Float16, n)
	for i := 0; i < n; i++ {
		x.SetFloat64(i, float64(i%100), tensor.Numerics{})
		y.SetFloat64(i, 0.5, tensor.Numerics{})
	}
	z, c, err := VectorAdd(context.Background(), dev, x, y, VectorAddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tl, _ := NewVectorAddTiling(dev.Profile(), n, tensor.Float16)
	t.Logf("%+v", tl)
	c.Cores = nil
	t.Logf("%+v", *c)
	t.Log(z.Float64(5), z.Float64(n-1))
}
