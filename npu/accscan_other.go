//go:build !amd64 || purego

package npu

import "github.com/x448/float16"

// useScanAVX2 is false: holdsNegZeroOrSNaN runs its Go loop only here (a
// variable for the tests, which switch it).
var useScanAVX2 = false

// holdsNegZeroOrSNaN reports whether c holds a −0 or a signalling NaN.
func holdsNegZeroOrSNaN(c []float32) bool { return holdsNegZeroOrSNaNGo(c) }

// scanF16 reports whether src holds Inf or NaN, and whether it holds ±0.
func scanF16(src []float16.Float16) (nonFinite, zero bool) { return scanF16Go(src) }
