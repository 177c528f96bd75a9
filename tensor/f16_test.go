package tensor

import (
	"math"
	"testing"

	"github.com/x448/float16"
)

// TestF16CMatchesTable converts every fp16 bit pattern (NaN payloads,
// subnormals, ±0, ±Inf) with Float64sFrom, which uses F16C where the CPU
// has it (useF16C), at every offset and length modulo the vector width,
// and holds each result bit for bit to the table and to float16's own
// conversion.
func TestF16CMatchesTable(t *testing.T) {
	const n = 1 << 16
	x := MustNew(Float16, n)
	for i := range n {
		x.SetBits(i, uint64(i))
	}
	tab := f16Table()
	for _, off := range []int{0, 1, 2, 3, 5} {
		for _, k := range []int{n - off, n - off - 1, n - off - 2, n - off - 3} {
			dst := make([]float64, k)
			x.Float64sFrom(off, dst)
			for i, v := range dst {
				b := uint16(off + i)
				want := float64(float16.Frombits(b).Float32())
				if math.Float64bits(v) != math.Float64bits(tab[b]) || math.Float64bits(v) != math.Float64bits(want) {
					t.Fatalf("tensor Float64sFrom fp16 (F16C %v) off=%d len=%d: pattern %#04x: got %#x / want %#x", useF16C, off, k, b, math.Float64bits(v), math.Float64bits(want))
				}
			}
		}
	}
}
