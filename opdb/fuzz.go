package opdb

import "github.com/npuverify/npuverify/tensor"

// FromBytes fills a tensor of dtype d and the given shape with raw bit
// patterns taken little-endian from b (cycled, starting skip bytes in), so
// every pattern, NaN payloads and subnormals included, is reachable by a
// fuzzer. An empty b gives zeros.
//
// The elements repeat with a period of len(b)/gcd(len(b), size): a fuzz
// body is a few dozen bytes while its tensors have thousands of elements,
// so one period is decoded and the rest filled by doubling copies.
func FromBytes(d tensor.DType, b []byte, skip int, shape ...int) *tensor.Tensor {
	t := tensor.MustNew(d, shape...)
	if len(b) == 0 {
		return t
	}
	size, n := d.Size(), t.Len()
	m := min(n, len(b)/gcd(len(b), size))
	pos := skip % len(b)
	for i := range m {
		var bits uint64
		for k := range size {
			bits |= uint64(b[pos]) << (8 * k)
			if pos++; pos == len(b) {
				pos = 0
			}
		}
		t.SetBits(i, bits)
	}
	t.RepeatPrefix(m)
	return t
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
