package opdb_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/tensor"
)

// fromBytesReference is FromBytes as first written, one element and one
// byte at a time: the model the chunked decoder must match bit for bit.
func fromBytesReference(d tensor.DType, b []byte, skip int, shape ...int) *tensor.Tensor {
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

// TestFromBytesMatchesReference checks the chunked FromBytes against the
// byte-at-a-time model for every dtype on random streams: lengths that
// do and do not divide an element or the chunk, skips past the stream's
// end, and tensors of 0 to a few chunks of elements.
func TestFromBytesMatchesReference(t *testing.T) {
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, seed))
	for _, d := range tensor.DTypes() {
		for trial := range 60 {
			b := make([]byte, []int{0, 1, 2, 3, 5, 8, 13, 64, 2047, 2048, 2049, 5000}[trial%12])
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			skip := rng.IntN(3*len(b) + 3)
			n := []int{0, 1, 7, 255, 256, 257, 1023, 1024, 1025, 4099}[rng.IntN(10)]
			where := fmt.Sprintf("FromBytes dtype=%s len(b)=%d skip=%d n=%d seed=%d trial=%d", d, len(b), skip, n, seed, trial)
			got, want := opdb.FromBytes(d, b, skip, n), fromBytesReference(d, b, skip, n)
			if ok, i := tensor.BitsEqual(got, want); !ok {
				t.Fatalf("%s: element %d: got bits %#x want %#x", where, i, got.Bits(i), want.Bits(i))
			}
		}
	}
}

// BenchmarkFromBytes decodes a FuzzVectorAdd-sized input: 2500 fp16
// elements from a 40-byte stream.
func BenchmarkFromBytes(b *testing.B) {
	body := make([]byte, 40)
	for i := range body {
		body[i] = byte(i * 37)
	}
	b.ReportAllocs()
	for b.Loop() {
		opdb.FromBytes(tensor.Float16, body, 21, 2500)
	}
}
