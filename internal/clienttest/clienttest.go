// Package clienttest holds the conformance test the client helpers'
// example drivers share (clients/python, clients/c): the example
// vector_add driver, served as a worker, against the emulator under every
// numerics profile, bit for bit. The golden cases hold no
// subnormal-flushing case, so this is where a client's stores under each
// profile are held to the emulator's.
package clienttest

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend/spec"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// VectorAddProfiles runs the vector_add driver that the worker spec
// names (e.g. "worker:/path/to/driver") and the emulator on the same
// seeded inputs under each of the four profiles (overflow inf|saturate ×
// subnormals keep|flush), for every dtype, and wants the same bits (any
// NaN equals any NaN). A third of the inputs are random bit patterns, a
// third near the smallest normal (sums that round into the subnormal
// range, or flush), a third in the top binade up to inf (sums that
// overflow), each of either sign.
func VectorAddProfiles(t *testing.T, worker string, seed uint64) {
	t.Helper()
	op, err := ops.Lookup("vector_add")
	if err != nil {
		t.Fatal(err)
	}
	const n = 4096
	for _, num := range []tensor.Numerics{
		{Overflow: tensor.OverflowInf, Subnormals: tensor.SubnormalKeep},
		{Overflow: tensor.OverflowInf, Subnormals: tensor.SubnormalFlush},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalKeep},
		{Overflow: tensor.OverflowSaturate, Subnormals: tensor.SubnormalFlush},
	} {
		prof := npu.Ascend910B()
		prof.Numerics = num
		emu, err := spec.Open("emulator", prof, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		drv, err := spec.Open(worker, prof, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []tensor.DType{tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Int8} {
			p, err := op.Validate(ops.Params{"dtype": d.String()})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, uint64(d)))
			in := map[string]*tensor.Tensor{"x": edgeBits(rng, d, n), "y": edgeBits(rng, d, n)}
			what := fmt.Sprintf("vector_add dtype=%s n=%d seed=%d (PCG stream %d) under %s", d, n, seed, d, num)
			want, _, err := emu.Run(context.Background(), "vector_add", p, in)
			if err != nil {
				t.Fatalf("%s: emulator: %v", what, err)
			}
			got, _, err := drv.Run(context.Background(), "vector_add", p, in)
			if err != nil {
				t.Fatalf("%s: %s: %v", what, drv.Name(), err)
			}
			if i, ok := sameBits(got["z"], want["z"]); !ok {
				t.Errorf("%s: z[%d] = %#x from %s, the emulator's is %#x (x = %#x, y = %#x)", what, i,
					got["z"].Bits(i), drv.Name(), want["z"].Bits(i), in["x"].Bits(i), in["y"].Bits(i))
			}
		}
		if c, ok := drv.(io.Closer); ok {
			if err := c.Close(); err != nil {
				t.Errorf("closing %s: %v", drv.Name(), err)
			}
		}
	}
}

// edgeBits returns n elements of dtype d: a third random bit patterns, a
// third of magnitude near the smallest normal, a third near the largest
// finite value (and ±inf), each with a random sign.
func edgeBits(rng *rand.Rand, d tensor.DType, n int) *tensor.Tensor {
	t := tensor.MustNew(d, n)
	var width, expBits, mant uint
	switch d {
	case tensor.Float16:
		width, expBits, mant = 16, 5, 10
	case tensor.BFloat16:
		width, expBits, mant = 16, 8, 7
	case tensor.Float32:
		width, expBits, mant = 32, 8, 23
	default: // int8
		for i := range n {
			t.SetBits(i, uint64(uint8(rng.IntN(256))))
		}
		return t
	}
	sign := uint64(1) << (width - 1)
	expMask := (uint64(1)<<expBits - 1) << mant
	for i := range n {
		var b uint64
		switch rng.IntN(3) {
		case 0:
			b = rng.Uint64() & (1<<width - 1)
		case 1: // subnormal or the lowest two binades
			b = rng.Uint64() & (uint64(1)<<(mant+2) - 1)
		default: // the top binade, up to +inf
			b = expMask - uint64(1)<<mant + rng.Uint64()&(uint64(1)<<(mant+1)-1)
			if b > expMask {
				b = expMask
			}
		}
		if rng.IntN(2) == 1 {
			b |= sign
		}
		t.SetBits(i, b)
	}
	return t
}

// sameBits reports whether a and b hold the same bits, any NaN matching
// any NaN, and else the first index where they differ.
func sameBits(a, b *tensor.Tensor) (int, bool) {
	if a.DType != b.DType || a.Len() != b.Len() {
		return 0, false
	}
	for i := range a.Len() {
		if a.Bits(i) != b.Bits(i) && !(math.IsNaN(a.Float64(i)) && math.IsNaN(b.Float64(i))) {
			return i, false
		}
	}
	return 0, true
}
