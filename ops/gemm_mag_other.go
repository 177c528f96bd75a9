//go:build !amd64 || purego

package ops

import "github.com/x448/float16"

// magUseF16C is false: absF16s is absF16sGo here.
const magUseF16C = false

// absF16s stores |src[i]| as fp32 into dst[i] (dst as long as src).
func absF16s(dst []float32, src []float16.Float16) { absF16sGo(dst[:len(src)], src) }

// absF16Panel is never called here (magUseF16C is false).
func absF16Panel([]float32, []float16.Float16, int, int) {}
