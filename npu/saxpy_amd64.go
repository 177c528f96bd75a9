//go:build amd64 && !purego

package npu

import "golang.org/x/sys/cpu"

// useSaxpyAVX is whether MmadSparse's fp16 rows take their
// multiply-then-add eight lanes at a time (saxpyAVX). The Go loop alone
// runs without AVX and in the purego build, which the CI tests too.
var useSaxpyAVX = cpu.X86.HasAVX

// saxpyAVX sets c[j] = c[j] + float32(x·b[j]) for j in [0, n) (n a
// multiple of 8), eight lanes at a time: each product rounded to fp32,
// then the sum, as saxpyGo's compiled operations round them (a NaN's
// payload may be the other operand's: MmadSparse makes every NaN the
// default NaN afterwards).
//
//go:noescape
func saxpyAVX(c, b *float32, x float32, n int)
