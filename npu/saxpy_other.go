//go:build !amd64 || purego

package npu

// useSaxpyAVX is false: MmadSparse runs its Go loop only here.
var useSaxpyAVX = false

// saxpyAVX is never called here (useSaxpyAVX is false).
func saxpyAVX(*float32, *float32, float32, int) {}
