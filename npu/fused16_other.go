//go:build !amd64 || purego

package npu

// useFused16AVX2 is false: mmadFused16 and mmadBlocked run their Go
// loops only here.
var useFused16AVX2 = false

// fused16AVX2 is never called here (useFused16AVX2 is false).
func fused16AVX2(*float32, *float32, float64, int) int { return 0 }

// blockRowAVX2 is never called here (useFused16AVX2 is false).
func blockRowAVX2(*float64, *uint64, *float32, float64, int) {}
