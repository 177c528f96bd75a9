//go:build amd64 && !purego

package npu

import (
	"unsafe"

	"github.com/x448/float16"
	"golang.org/x/sys/cpu"

	"github.com/npuverify/npuverify/tensor"
)

// useF16C is whether binF16 converts by the CPU's F16C instructions
// (binF16F16C) rather than by table and software rounding: VCVTPH2PS is
// exact, the fp32 operation is the same IEEE operation the Go code does,
// and VCVTPS2PH with rounding control 0 rounds to nearest even with
// overflow to ±Inf, as f32sToF16 does. NaN results become the default NaN
// in both (TestBinF16MatchesPortable; every operand pair with
// NPUVERIFY_EXHAUSTIVE=1).
var useF16C = cpu.X86.HasAVX2 && cpu.X86.HasF16C

// binF16F16C stores op(a[i], b[i]) for i < n (a multiple of 8) into z,
// computed in fp32 and rounded to fp16, NaN results as DefaultNaN16Bits.
//
//go:noescape
func binF16F16C(op binOp, z, a, b *uint16, n int)

// binF16 computes z = a op b element-wise in fp32, rounded to fp16 (ties
// to even, NaN → the default NaN): by F16C where the CPU has it (a tail
// shorter than eight in a padded group), in software otherwise.
func binF16(op binOp, z, a, b []float16.Float16) {
	if !useF16C {
		binF16Go(op, z, a, b)
		return
	}
	a, b = a[:len(z)], b[:len(z)]
	n := len(z) &^ 7
	if n > 0 {
		binF16F16C(op, u16(z), u16(a), u16(b), n)
	}
	if n < len(z) {
		// The last few through the same kernel in a padded group of
		// eight, rather than through binF16Go, whose table (256 KiB) would
		// be built for them.
		var za, aa, ba [8]float16.Float16
		copy(aa[:], a[n:])
		copy(ba[:], b[n:])
		binF16F16C(op, u16(za[:]), u16(aa[:]), u16(ba[:]), 8)
		copy(z[n:], za[:])
	}
}

// u16 is the address of s's first element as a *uint16 (float16.Float16
// is a uint16).
func u16(s []float16.Float16) *uint16 {
	return (*uint16)(unsafe.Pointer(unsafe.SliceData(s)))
}

// useFixAVX2 is whether fixBits takes sixteen 16-bit or eight 32-bit
// patterns at a time by AVX2 (fixBitsVec): the same bits as its Go loop
// on every pattern (TestFixBitsMatchesPortable, which also switches it
// off).
var useFixAVX2 = cpu.X86.HasAVX2

// fixBits16AVX2 is fixBits on the n patterns at z (n a multiple of 16),
// saturating if sat and flushing if flush.
//
//go:noescape
func fixBits16AVX2(z *uint16, n int, exp, frac, maxFinite uint16, sat, flush bool)

// fixBits32AVX2 is fixBits on the n patterns at z (n a multiple of 8).
//
//go:noescape
func fixBits32AVX2(z *uint32, n int, exp, frac, maxFinite uint32, sat, flush bool)

// fixBitsVec applies fixBits to the longest prefix of z the assembly
// takes whole vectors of, and returns its length.
func fixBitsVec[T ~uint16 | ~uint32](z []T, exp, frac, maxFinite T, sat, flush bool) int {
	if unsafe.Sizeof(z[0]) == 2 { // z[0] is not evaluated: safe on an empty z
		n := len(z) &^ 15
		if n > 0 {
			fixBits16AVX2((*uint16)(unsafe.Pointer(&z[0])), n, uint16(exp), uint16(frac), uint16(maxFinite), sat, flush)
		}
		return n
	}
	n := len(z) &^ 7
	if n > 0 {
		fixBits32AVX2((*uint32)(unsafe.Pointer(&z[0])), n, uint32(exp), uint32(frac), uint32(maxFinite), sat, flush)
	}
	return n
}

// useBinAVX2 is whether binBF16 and binF32 run eight elements at a time
// (binBF16AVX2, binF32AVX): the same IEEE fp32 operations as the Go
// code, the same rounding to bf16 and the same default NaN
// (TestBinBF16F32MatchPortable).
var useBinAVX2 = cpu.X86.HasAVX2

// binF32AVX stores op(a[i], b[i]) for i < n (a multiple of 8) into z, a
// NaN result as the default NaN.
//
//go:noescape
func binF32AVX(op binOp, z, a, b *float32, n int)

// binBF16AVX2 stores op(a[i], b[i]) for i < n (a multiple of 8) into z,
// computed in fp32 and rounded to bf16 ties to even, a NaN result as the
// default NaN.
//
//go:noescape
func binBF16AVX2(op binOp, z, a, b *uint16, n int)

// binF32 computes z = a op b element-wise in fp32, a NaN result as the
// default NaN.
func binF32(op binOp, z, a, b []float32) {
	a, b = a[:len(z)], b[:len(z)]
	if n := len(z) &^ 7; useBinAVX2 && n > 0 {
		binF32AVX(op, &z[0], &a[0], &b[0], n)
		z, a, b = z[n:], a[n:], b[n:]
	}
	binF32Go(op, z, a, b)
}

// binBF16 computes z = a op b element-wise in fp32, rounded to bf16 ties
// to even, a NaN result as the default NaN.
func binBF16(op binOp, z, a, b []tensor.BF16) {
	a, b = a[:len(z)], b[:len(z)]
	if n := len(z) &^ 7; useBinAVX2 && n > 0 {
		binBF16AVX2(op, (*uint16)(&z[0]), (*uint16)(&a[0]), (*uint16)(&b[0]), n)
		z, a, b = z[n:], a[n:], b[n:]
	}
	binBF16Go(op, z, a, b)
}
