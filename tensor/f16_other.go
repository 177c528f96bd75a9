//go:build !amd64 || purego

package tensor

import "github.com/x448/float16"

// useF16C is false: fp16 values are looked up in f16Table here.
const useF16C = false

// useAVX2 is false: bf16 and fp32 values widen one at a time here.
const useAVX2 = false

// f16ToF64 converts src to float64 into dst (as long as src) by table.
func f16ToF64(dst []float64, src []float16.Float16) {
	dst = dst[:len(src)]
	tab := f16Table()
	for i, v := range src {
		dst[i] = tab[v]
	}
}

// bf16ToF64 converts src to float64 into dst (as long as src).
func bf16ToF64(dst []float64, src []BF16) { bf16ToF64Go(dst, src) }

// f32ToF64 converts src to float64 into dst (as long as src).
func f32ToF64(dst []float64, src []float32) { f32ToF64Go(dst, src) }
