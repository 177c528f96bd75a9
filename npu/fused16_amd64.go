//go:build amd64 && !purego

package npu

import "golang.org/x/sys/cpu"

// useFused16AVX2 is whether the fp16-accumulator Mmad (mmadFused16)
// takes four outputs at a time by fused16AVX2, and the blocked16 model
// (mmadBlocked) its block sums by blockRowAVX2. The Go loops alone run
// without AVX2 and in the purego build, which the CI tests too.
var useFused16AVX2 = cpu.X86.HasAVX2

// fused16AVX2 is fused16Go on c[0:n] and b[0:n] (n a multiple of 4),
// four lanes at a time with fused16Go's operations on each (the float64
// product and sum, twoSum's test, rn16), stopping before the first group
// of four that holds a sum twoSum does not show exact (or a NaN), which
// fused16Go must take through fmaRound. It returns how many elements it
// stored.
//
//go:noescape
func fused16AVX2(c, b *float32, x float64, n int) int

// blockRowAVX2 is blockRowGo on st[0:n], et[0:n] and b[0:n] (n a
// multiple of 4), four lanes at a time with its operations on each: the
// same sums and error bits, except that a NaN may carry another payload
// (the hardware's choice between two NaN operands is not the compiled
// Go's); a NaN sets the element's error bits in both, and mmadBlocked
// then sums that element again by sumRound.
//
//go:noescape
func blockRowAVX2(st *float64, et *uint64, b *float32, x float64, n int)
