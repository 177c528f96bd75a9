package npu

import "math"

// NaN results. The emulator computes with the host's floats, whose NaNs
// differ between hosts: an invalid operation (∞ − ∞, 0·∞) gives x86's
// default NaN (sign set) but arm64's (sign clear), and which operand's
// payload a NaN result keeps differs between architectures and even
// between x86 vendors. So that the emulator's bits (the golden store's
// `exact` policy) are the same on every host, every NaN that emulated
// arithmetic produces is the default NaN of its format: sign set, quiet,
// zero payload (fp32 0xFFC00000, fp16 0xFE00, bf16 0xFFC0; x86's default
// NaN, so a NaN from an invalid operation keeps the bits it had on x86).
// That covers the vector unit's Add, Sub and Mul, the cube's accumulation
// (Mmad, MmadSparse: every accumulator the call adds a product to) and
// the arithmetic kernels do in Go (CanonNaN). Moving bits is not
// arithmetic: DataCopy, Fixpipe and kernels that copy values keep an
// input NaN's payload bit for bit. Format conversions (Cast, and the
// rounding of a result to its output format) keep a NaN too, quieted with
// its payload truncated, as IEEE 754 and package tensor's conversions do
// (host-independent: done in software); only arithmetic canonicalises.

// Default NaN bit patterns.
const (
	DefaultNaN32Bits   = 0xFFC00000 // fp32
	DefaultNaN16Bits   = 0xFE00     // fp16
	DefaultNaNBF16Bits = 0xFFC0     // bf16
)

// defaultNaN32 is the fp32 default NaN as a value. A variable: Go has no
// NaN constants.
var defaultNaN32 = math.Float32frombits(DefaultNaN32Bits)

// CanonNaN returns x, or the fp32 default NaN if x is a NaN: what a kernel
// applies to a result of its own Go arithmetic so that its NaN is the
// emulator's, whatever the host (see DefaultNaN32Bits).
func CanonNaN(x float32) float32 {
	if x != x {
		return defaultNaN32
	}
	return x
}

// canonNaNs replaces every NaN of s by the fp32 default NaN.
func canonNaNs(s []float32) {
	for i, v := range s {
		if v != v {
			s[i] = defaultNaN32
		}
	}
}
