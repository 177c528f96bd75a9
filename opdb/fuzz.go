package opdb

import "github.com/npuverify/npuverify/tensor"

// FromBytes fills a tensor of dtype d and the given shape with raw bit
// patterns taken little-endian from b (cycled, starting skip bytes in), so
// every pattern, NaN payloads and subnormals included, is reachable by a
// fuzzer. An empty b gives zeros.
func FromBytes(d tensor.DType, b []byte, skip int, shape ...int) *tensor.Tensor {
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
