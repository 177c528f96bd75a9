//go:build !amd64 || purego

package npu

// useScanAVX2 is false: holdsNegZeroOrSNaN runs its Go loop only here (a
// variable for the tests, which switch it).
var useScanAVX2 = false

// holdsNegZeroOrSNaN reports whether c holds a −0 or a signalling NaN.
func holdsNegZeroOrSNaN(c []float32) bool { return holdsNegZeroOrSNaNGo(c) }
