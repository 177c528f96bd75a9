//go:build !amd64 || purego

package tensor

// useF16C is false: fp16 values are looked up in f16Table here.
const useF16C = false

// f16ToF64 converts src to float64 into dst (as long as src) by table.
func f16ToF64(dst []float64, src []uint16, tab *[1 << 16]float64) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = tab[v]
	}
}
