package fuzz_test

import (
	"context"
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

var fuzzDTypes = []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8}

// fromBytes fills a tensor of dtype d and the given shape with raw bit
// patterns taken little-endian from b (cycled, starting skip bytes in), so
// every pattern, NaN payloads and subnormals included, is reachable.
func fromBytes(d tensor.DType, b []byte, skip int, shape ...int) *tensor.Tensor {
	t := tensor.MustNew(d, shape...)
	if len(b) == 0 {
		return t
	}
	size := d.Size()
	for i := 0; i < t.Len(); i++ {
		var bits uint64
		for k := 0; k < size; k++ {
			bits |= uint64(b[(skip+i*size+k)%len(b)]) << (8 * k)
		}
		t.SetBits(i, bits)
	}
	return t
}

// FuzzVectorAdd: arbitrary bytes → data, length, dtype, core count, tile
// size. The emulator must never panic and must always be within bound
// under both overflow modes.
func FuzzVectorAdd(f *testing.F) {
	f.Add([]byte{0x00, 0x3c, 0x00, 0xbc}, uint8(0), uint16(2), uint8(1), uint16(0), false)
	f.Add([]byte{0xff, 0x7b, 0xff, 0x7b}, uint8(0), uint16(33), uint8(7), uint16(16), false) // fp16 max + max
	f.Add([]byte{0x00, 0x7c, 0x00, 0xfc, 0x01, 0x7e}, uint8(0), uint16(129), uint8(48), uint16(1), true)
	f.Add([]byte{0x80, 0x7f, 0x01, 0x00}, uint8(1), uint16(257), uint8(3), uint16(5), false) // bf16 inf, subnormal
	f.Add([]byte{0x7f, 0x7f, 0x80, 0x80}, uint8(3), uint16(31), uint8(2), uint16(32), true)  // int8 saturation
	f.Add([]byte{0xff, 0xff, 0x7f, 0x7f, 0x01, 0, 0, 0}, uint8(2), uint16(17), uint8(5), uint16(9), false)
	prof := npu.Ascend910B()
	op, err := ops.Lookup("vector_add")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, dsel uint8, n uint16, cores uint8, tile uint16, saturate bool) {
		d := fuzzDTypes[int(dsel)%len(fuzzDTypes)]
		num := tensor.Numerics{}
		if saturate {
			num.Overflow = tensor.OverflowSaturate
		}
		p := npu.Ascend910B()
		p.Numerics = num
		dev, err := npu.NewDevice(p)
		if err != nil {
			t.Fatal(err)
		}
		count := int(n) % 5000
		x := fromBytes(d, data, 0, count)
		y := fromBytes(d, data, len(data)/2+1, count)
		opt := kernels.VectorAddOptions{BlockDim: 1 + int(cores)%prof.VectorCores, TileElems: int(tile) % 4096}
		z, _, err := kernels.VectorAdd(context.Background(), dev, x, y, opt)
		if err != nil {
			t.Fatalf("vector_add dtype=%s n=%d options %+v: %v", d, count, opt, err)
		}
		params := ops.Params{"dtype": d.String()}
		in := map[string]*tensor.Tensor{"x": x, "y": y}
		want, err := op.Expect(params, in, num)
		if err != nil {
			t.Fatal(err)
		}
		s := verify.Subject{Op: "vector_add", Params: params.String() + " " + num.String()}
		r, err := verify.Check(s, map[string]*tensor.Tensor{"z": z}, want, nil, []verify.Policy{verify.DefaultPolicy()})
		if err != nil {
			t.Fatal(err)
		}
		if !r.Pass {
			t.Fatalf("options %+v\n%s", opt, r.Failure())
		}
	})
}
