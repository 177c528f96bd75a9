//go:build amd64 && !purego

#include "textflag.h"

DATA absmask<>+0(SB)/8, $0x7fffffffffffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $8
DATA expmask<>+0(SB)/8, $0x7ff0000000000000
GLOBL expmask<>(SB), RODATA|NOPTR, $8

// NONFINITE sets out to all ones in the lanes where g or r is ±Inf or
// NaN (exponent field all ones; exp holds that mask), with tmp clobbered.
#define NONFINITE(exp, g, r, out, tmp) \
	VANDPD   exp, g, out   \
	VPCMPEQQ exp, out, out \
	VANDPD   exp, r, tmp   \
	VPCMPEQQ exp, tmp, tmp \
	VORPD    tmp, out, out

// HMAX sets the low lane of X0 to the largest of the four lanes of y (x
// its low half), with X1 clobbered.
#define HMAX(y, x) \
	VEXTRACTF128 $1, y, X0 \
	VMAXPD       X0, x, X0 \
	VPERMILPD    $1, X0, X1 \
	VMAXSD       X1, X0, X0

// TERMSUMS_ENTER loads termSumsAVX2's and termSumsFiniteAVX2's
// arguments (gv in SI, rv in DI, n in CX, invE, invV and guard in
// Y12…Y14, l in R8), the absolute-value mask (Y15), the lanes of l
// (Y6…Y10) and a zero maximum (Y5), and starts the index (AX) at 0.
#define TERMSUMS_ENTER \
	MOVQ         gv+0(FP), SI       \
	MOVQ         rv+8(FP), DI       \
	MOVQ         n+16(FP), CX       \
	VBROADCASTSD invE+24(FP), Y12   \
	VBROADCASTSD invV+32(FP), Y13   \
	VBROADCASTSD guard+40(FP), Y14  \
	MOVQ         l+48(FP), R8       \
	VBROADCASTSD absmask<>(SB), Y15 \
	VMOVUPD      0(R8), Y6          \
	VMOVUPD      32(R8), Y7         \
	VMOVUPD      64(R8), Y8         \
	VMOVUPD      96(R8), Y9         \
	VMOVUPD      128(R8), Y10       \
	VXORPD       Y5, Y5, Y5         \
	XORQ         AX, AX

// TERMSUMS_LEAVE stores the lanes back into l and returns the largest
// relative error of Y5's lanes.
#define TERMSUMS_LEAVE \
	VMOVUPD Y6, 0(R8)       \
	VMOVUPD Y7, 32(R8)      \
	VMOVUPD Y8, 64(R8)      \
	VMOVUPD Y9, 96(R8)      \
	VMOVUPD Y10, 128(R8)    \
	HMAX(Y5, X5)            \
	VZEROUPPER              \
	VMOVSD  X0, mare+56(FP) \
	RET

// func termSumsAVX2(gv, rv *float64, n int, invE, invV, guard float64, l *laneSums) (mare float64)
//
// Y6…Y10 are the lanes of l (mere, sq, gr, gg, rr), Y5 the largest
// relative error per lane, Y0…Y4 the step's values and terms.
TEXT ·termSumsAVX2(SB), NOSPLIT, $0-64
	TERMSUMS_ENTER
	VBROADCASTSD expmask<>(SB), Y11

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD (DI)(AX*8), Y1

	NONFINITE(Y11, Y0, Y1, Y2, Y3)

	VSUBPD  Y1, Y0, Y4  // g − r
	VANDPD  Y15, Y4, Y4 // e = |g − r|
	VANDPD  Y15, Y1, Y3 // |r|
	VADDPD  Y14, Y3, Y3 // |r| + guard
	VDIVPD  Y3, Y4, Y3  // m = e / (|r| + guard)
	VANDNPD Y3, Y2, Y3
	VMAXPD  Y3, Y5, Y5
	VADDPD  Y3, Y6, Y6  // mere += m

	VMULPD  Y12, Y4, Y4 // es = e·invE = e / scaleE
	VANDNPD Y4, Y2, Y4
	VMULPD  Y4, Y4, Y4
	VADDPD  Y4, Y7, Y7  // sq += es²

	VMULPD  Y13, Y0, Y0 // gs = g·invV = g / scaleV
	VANDNPD Y0, Y2, Y0
	VMULPD  Y13, Y1, Y1 // rs = r·invV = r / scaleV
	VANDNPD Y1, Y2, Y1
	VMULPD  Y1, Y0, Y3
	VADDPD  Y3, Y8, Y8  // gr += gs·rs
	VMULPD  Y0, Y0, Y0
	VADDPD  Y0, Y9, Y9  // gg += gs²
	VMULPD  Y1, Y1, Y1
	VADDPD  Y1, Y10, Y10 // rr += rs²
	ADDQ    $4, AX
	JMP     loop

done:
	TERMSUMS_LEAVE

// func termSumsFiniteAVX2(gv, rv *float64, n int, invE, invV, guard float64, l *laneSums) (mare float64)
//
// termSumsAVX2's loop without the masks.
TEXT ·termSumsFiniteAVX2(SB), NOSPLIT, $0-64
	TERMSUMS_ENTER

floop:
	CMPQ AX, CX
	JGE  fdone
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD (DI)(AX*8), Y1

	VSUBPD Y1, Y0, Y4  // g − r
	VANDPD Y15, Y4, Y4 // e = |g − r|
	VANDPD Y15, Y1, Y3 // |r|
	VADDPD Y14, Y3, Y3 // |r| + guard
	VDIVPD Y3, Y4, Y3  // m = e / (|r| + guard)
	VMAXPD Y3, Y5, Y5
	VADDPD Y3, Y6, Y6  // mere += m

	VMULPD Y12, Y4, Y4 // es = e / scaleE
	VMULPD Y4, Y4, Y4
	VADDPD Y4, Y7, Y7  // sq += es²

	VMULPD Y13, Y0, Y0 // gs = g / scaleV
	VMULPD Y13, Y1, Y1 // rs = r / scaleV
	VMULPD Y1, Y0, Y3
	VADDPD Y3, Y8, Y8  // gr += gs·rs
	VMULPD Y0, Y0, Y0
	VADDPD Y0, Y9, Y9  // gg += gs²
	VMULPD Y1, Y1, Y1
	VADDPD Y1, Y10, Y10 // rr += rs²
	ADDQ   $4, AX
	JMP    floop

fdone:
	TERMSUMS_LEAVE

DATA c2046<>+0(SB)/8, $0x7fe0000000000000
GLOBL c2046<>(SB), RODATA|NOPTR, $8
DATA one4<>+0(SB)/8, $1
DATA one4<>+8(SB)/8, $1
DATA one4<>+16(SB)/8, $1
DATA one4<>+24(SB)/8, $1
GLOBL one4<>(SB), RODATA|NOPTR, $32
DATA tiny4<>+0(SB)/8, $0x0030000000000000
DATA tiny4<>+8(SB)/8, $0x0030000000000000
DATA tiny4<>+16(SB)/8, $0x0030000000000000
DATA tiny4<>+24(SB)/8, $0x0030000000000000
GLOBL tiny4<>(SB), RODATA|NOPTR, $32

// SHORTROUNDED sets Y4 to all ones in the lanes where r (Y1; its
// magnitude's bits in Y2) takes the short form and g (Y0) is bit for bit
// its rounding, else 0, from the short form's min, span, half and mask
// (MIN, SPAN, HALF, MASK: four lanes each, registers or memory), the
// shift in X6 and zero in Y12. It clobbers Y3 and Y5.
//   - Takes: x = |r|bits − min, 0 ≤ x < span (signed: both below 2^63).
//   - Rounded: (b + half + (b>>shift)&1) &^ mask, equal to g's bits.
#define SHORTROUNDED(MIN, SPAN, HALF, MASK) \
	VPSUBQ   MIN, Y2, Y3       \
	VMOVDQU  SPAN, Y4          \
	VPCMPGTQ Y3, Y4, Y4        \
	VPCMPGTQ Y3, Y12, Y5       \
	VPANDN   Y4, Y5, Y4        \
	VPSRLQ   X6, Y1, Y3        \
	VPAND    one4<>(SB), Y3, Y3 \
	VPADDQ   HALF, Y3, Y3      \
	VPADDQ   Y1, Y3, Y3        \
	VMOVDQU  MASK, Y5          \
	VPANDN   Y3, Y5, Y3        \
	VPCMPEQQ Y0, Y3, Y3        \
	VPAND    Y3, Y4, Y4

// func exactRunAVX2(v *exactRunVec, gv, rv *float64, n int) int
TEXT ·exactRunAVX2(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), R8
	MOVQ gv+8(FP), SI
	MOVQ rv+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSD absmask<>(SB), Y15
	VBROADCASTSD expmask<>(SB), Y14
	VBROADCASTSD c2046<>(SB), Y13
	VPXOR        Y12, Y12, Y12        // zero
	VMOVUPD      416(R8), Y11         // maxV
	VMOVQ        256(R8), X6          // shift
	VMOVUPD      288(R8), Y10         // maxAbs
	VMOVUPD      320(R8), Y9          // tight
	VMOVDQU      352(R8), Y7          // zeros
	XORQ         AX, AX

xloop:
	CMPQ    AX, CX
	JGE     xdone
	VMOVUPD (SI)(AX*8), Y0 // g
	VMOVUPD (DX)(AX*8), Y1 // r
	VPAND   Y15, Y1, Y2    // |r|

	SHORTROUNDED(0(R8), 32(R8), 64(R8), 96(R8))

	// inv = 2^-k for Bound = 2^k: 2046<<52 − ((b & expmask) − halfUlp).
	VPAND  Y14, Y1, Y3
	VPSUBQ 128(R8), Y3, Y3
	VPSUBQ Y3, Y13, Y3

	VSUBPD Y1, Y0, Y5 // g − r
	VPAND  Y15, Y5, Y5 // e

	// e = 0, or e ≤ q = relSkip·|r| and q ≥ 2^-1020, or e/|r| ≤ relMax
	// (|r| ≥ MinNormal in the lanes that Takes passes): the division only
	// when the cheap tests leave a lane out.
	VMULPD    160(R8), Y2, Y1
	VCMPPD    $0x12, Y1, Y5, Y8
	VCMPPD    $0x1d, tiny4<>(SB), Y1, Y1
	VPAND     Y1, Y8, Y8
	VPCMPEQQ  Y12, Y5, Y1
	VPOR      Y1, Y8, Y8
	VMOVMSKPD Y8, BX
	CMPQ      BX, $15
	JEQ       relok
	VDIVPD    Y2, Y5, Y1
	VCMPPD    $0x12, 384(R8), Y1, Y1
	VPOR      Y1, Y8, Y8

relok:
	VPAND Y8, Y4, Y4

	VMULPD Y3, Y5, Y3 // t = e·inv

	// Not a candidate for the worst: e = 0, or not (t > floor or t = floor and e > floor2).
	VPCMPGTQ 224(R8), Y5, Y1  // e > floor2
	VPCMPEQQ 192(R8), Y3, Y2  // t = floor
	VPAND    Y2, Y1, Y2
	VPCMPGTQ 192(R8), Y3, Y1  // t > floor
	VPOR     Y2, Y1, Y1
	VPCMPEQQ Y12, Y5, Y2      // e = 0
	VPANDN   Y1, Y2, Y1
	VPANDN   Y4, Y1, Y4

	VMOVMSKPD Y4, BX
	CMPQ      BX, $15
	JNE       xdone

	VMAXPD Y5, Y10, Y10
	VMAXPD Y3, Y9, Y9
	VPSUBQ Y2, Y7, Y7
	VANDPD Y15, Y0, Y1         // |g|
	VMAXPD Y1, Y11, Y11
	VANDPD (DX)(AX*8), Y15, Y1 // |r|
	VMAXPD Y1, Y11, Y11
	ADDQ   $4, AX
	JMP    xloop

xdone:
	VMOVUPD Y10, 288(R8)
	VMOVUPD Y9, 320(R8)
	VMOVDQU Y7, 352(R8)
	VMOVUPD Y11, 416(R8)
	VZEROUPPER
	MOVQ    AX, ret+32(FP)
	RET

// func chunkMaxAVX2(gv, rv *float64, n int) (maxE, maxV float64)
TEXT ·chunkMaxAVX2(SB), NOSPLIT, $0-40
	MOVQ         gv+0(FP), SI
	MOVQ         rv+8(FP), DI
	MOVQ         n+16(FP), CX
	VBROADCASTSD absmask<>(SB), Y15
	VBROADCASTSD expmask<>(SB), Y14
	VXORPD       Y12, Y12, Y12 // maxE
	VXORPD       Y13, Y13, Y13 // maxV
	XORQ         AX, AX

mloop:
	CMPQ AX, CX
	JGE  mdone
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD (DI)(AX*8), Y1

	NONFINITE(Y14, Y0, Y1, Y2, Y3)

	VSUBPD  Y1, Y0, Y4  // g − r
	VANDPD  Y15, Y4, Y4 // e = |g − r|
	VANDPD  Y15, Y0, Y5 // |g|
	VANDPD  Y15, Y1, Y6 // |r|
	VMAXPD  Y6, Y5, Y5  // max(|g|, |r|)
	VANDNPD Y4, Y2, Y4
	VANDNPD Y5, Y2, Y5
	VMAXPD  Y4, Y12, Y12
	VMAXPD  Y5, Y13, Y13
	ADDQ    $4, AX
	JMP     mloop

mdone:
	HMAX(Y12, X12)
	VMOVSD       X0, maxE+24(FP)
	HMAX(Y13, X13)
	VMOVSD       X0, maxV+32(FP)
	VZEROUPPER
	RET

// func sameRun16AVX2(got, base *byte, n int, inf uint16, nonFinite bool) (j, nonFin int)
TEXT ·sameRun16AVX2(SB), NOSPLIT, $0-48
	MOVQ         got+0(FP), SI
	MOVQ         base+8(FP), DI
	MOVQ         n+16(FP), CX
	MOVWQZX      inf+24(FP), AX
	DECQ         AX            // inf − 1: a magnitude above it is non-finite
	VMOVQ        AX, X15
	VPBROADCASTW X15, Y15
	MOVQ         $0x7fff, AX
	VMOVQ        AX, X14
	VPBROADCASTW X14, Y14      // the magnitude's bits
	MOVBQZX      nonFinite+26(FP), R9
	XORQ         AX, AX        // j
	XORQ         BX, BX        // nonFin

sloop:
	CMPQ      AX, CX
	JGE       sdone
	VMOVDQU   (DI)(AX*2), Y0
	VPCMPEQW  (SI)(AX*2), Y0, Y1 // got's lane = the base's
	VPMOVMSKB Y1, DX
	CMPL      DX, $0xffffffff
	JNE       sdone
	VPAND     Y14, Y0, Y2
	VPCMPGTW  Y15, Y2, Y2        // |x| > inf − 1: non-finite
	VPMOVMSKB Y2, DX
	TESTL     DX, DX
	JZ        snext
	TESTQ     R9, R9
	JZ        sdone
	POPCNTL   DX, DX
	SHRL      $1, DX             // two mask bits a lane
	ADDQ      DX, BX

snext:
	ADDQ $16, AX
	JMP  sloop

sdone:
	VZEROUPPER
	MOVQ AX, j+32(FP)
	MOVQ BX, nonFin+40(FP)
	RET

DATA belowinf<>+0(SB)/8, $0x7fefffffffffffff
GLOBL belowinf<>(SB), RODATA|NOPTR, $8

// func acceptRunAVX2(v *exactRunVec, gv, rv *float64, n int, inf uint64) int
TEXT ·acceptRunAVX2(SB), NOSPLIT, $0-48
	MOVQ         v+0(FP), R8
	MOVQ         gv+8(FP), SI
	MOVQ         rv+16(FP), DX
	MOVQ         n+24(FP), CX
	VBROADCASTSD absmask<>(SB), Y15
	VBROADCASTSD belowinf<>(SB), Y14
	VBROADCASTSD inf+32(FP), Y13 // all ones under overflow=inf, else 0
	VPXOR        Y12, Y12, Y12   // zero
	VMOVDQU      0(R8), Y11      // min
	VMOVDQU      32(R8), Y10     // span
	VMOVDQU      64(R8), Y9      // half
	VMOVDQU      96(R8), Y8      // mask
	VMOVQ        256(R8), X6     // shift
	XORQ         AX, AX

aloop:
	CMPQ    AX, CX
	JGE     adone
	VMOVUPD (SI)(AX*8), Y0 // g
	VMOVUPD (DX)(AX*8), Y1 // r

	VPAND Y15, Y1, Y2 // |r|
	SHORTROUNDED(Y11, Y10, Y9, Y8)

	// Or g's bits are r's and r is a zero, or (inf) r is ±Inf or NaN;
	// or (inf) g and r are both NaN.
	VPCMPEQQ  Y0, Y1, Y3  // same bits
	VPCMPGTQ  Y14, Y2, Y5 // |r| is ±Inf or NaN
	VPAND     Y13, Y5, Y5
	VPCMPEQQ  Y12, Y2, Y7 // r is a zero
	VPOR      Y7, Y5, Y5
	VPAND     Y5, Y3, Y3
	VPOR      Y3, Y4, Y4
	VCMPPD    $3, Y0, Y0, Y3 // g is NaN
	VCMPPD    $3, Y1, Y1, Y5 // r is NaN
	VPAND     Y5, Y3, Y3
	VPAND     Y13, Y3, Y3
	VPOR      Y3, Y4, Y4
	VMOVMSKPD Y4, BX
	CMPQ      BX, $15
	JNE       adone
	ADDQ      $4, AX
	JMP       aloop

adone:
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET

// func sumSquares4AVX2(r0, r1, r2, r3 *float64, n int, inv *[4]float64, l *[4][4]float64)
TEXT ·sumSquares4AVX2(SB), NOSPLIT, $0-56
	MOVQ r0+0(FP), SI
	MOVQ r1+8(FP), DI
	MOVQ r2+16(FP), R8
	MOVQ r3+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ inv+40(FP), R10
	MOVQ l+48(FP), R11
	VBROADCASTSD 0(R10), Y8
	VBROADCASTSD 8(R10), Y9
	VBROADCASTSD 16(R10), Y10
	VBROADCASTSD 24(R10), Y11
	VMOVUPD      0(R11), Y4
	VMOVUPD      32(R11), Y5
	VMOVUPD      64(R11), Y6
	VMOVUPD      96(R11), Y7
	XORQ         AX, AX

sqloop:
	CMPQ   AX, CX
	JGE    sqdone
	VMULPD (SI)(AX*8), Y8, Y0 // r·inv
	VMULPD (DI)(AX*8), Y9, Y1
	VMULPD (R8)(AX*8), Y10, Y2
	VMULPD (R9)(AX*8), Y11, Y3
	VMULPD Y0, Y0, Y0
	VMULPD Y1, Y1, Y1
	VMULPD Y2, Y2, Y2
	VMULPD Y3, Y3, Y3
	VADDPD Y0, Y4, Y4
	VADDPD Y1, Y5, Y5
	VADDPD Y2, Y6, Y6
	VADDPD Y3, Y7, Y7
	ADDQ   $4, AX
	JMP    sqloop

sqdone:
	VMOVUPD Y4, 0(R11)
	VMOVUPD Y5, 32(R11)
	VMOVUPD Y6, 64(R11)
	VMOVUPD Y7, 96(R11)
	VZEROUPPER
	RET

// func maxAbsAVX2(r *float64, n int) float64
TEXT ·maxAbsAVX2(SB), NOSPLIT, $0-24
	MOVQ         r+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD absmask<>(SB), Y15
	VXORPD       Y10, Y10, Y10
	VXORPD       Y11, Y11, Y11
	XORQ         AX, AX

maloop:
	CMPQ   AX, CX
	JGE    madone
	VANDPD (SI)(AX*8), Y15, Y0
	VANDPD 32(SI)(AX*8), Y15, Y1
	VMAXPD Y0, Y10, Y10
	VMAXPD Y1, Y11, Y11
	ADDQ   $8, AX
	JMP    maloop

madone:
	VMAXPD Y11, Y10, Y10
	HMAX(Y10, X10)
	VZEROUPPER
	VMOVSD X0, ret+16(FP)
	RET

// The lean path's loops (leanRunAVX2 and its forms that widen fp16
// values themselves): Y6…Y10 are the unscaled lane sums (mere, sq, gr,
// gg, rr), Y11…Y13 the largest e, |r| and e/(|r| + guard) per lane, Y14
// the count of e = 0 per lane (as negated masks), Y0…Y5 the step's
// values (g in Y0, r in Y1); the short form's constants are read from v
// (R8). The index is AX, the count CX.

// LEAN_ENTER loads the absolute-value mask (Y15) and the figures of v
// (R8), and starts the index at 0. (The arguments are loaded outside the
// macros, where go vet checks them against each function's frame.)
#define LEAN_ENTER \
	VBROADCASTSD absmask<>(SB), Y15 \
	VMOVUPD      256(R8), Y6        \
	VMOVUPD      288(R8), Y7        \
	VMOVUPD      320(R8), Y8        \
	VMOVUPD      352(R8), Y9        \
	VMOVUPD      384(R8), Y10       \
	VMOVUPD      416(R8), Y11       \
	VMOVUPD      448(R8), Y12       \
	VMOVUPD      480(R8), Y13       \
	VMOVDQU      512(R8), Y14       \
	XORQ         AX, AX

// LEAN_CHECK sets Y2 to |r| and BX to the mask of the lanes in the short
// form whose g is bit for bit their Rounded (Y4 the same as lanes):
// Takes as |r|bits + bias < limit (signed); Rounded as (b + half +
// (b>>shift)&1) &^ mask.
#define LEAN_CHECK \
	VPAND     Y15, Y1, Y2       \
	VPADDQ    0(R8), Y2, Y3     \
	VMOVDQU   32(R8), Y4        \
	VPCMPGTQ  Y3, Y4, Y3        \
	VPSRLVQ   160(R8), Y1, Y4   \
	VPAND     192(R8), Y4, Y4   \
	VPADDQ    64(R8), Y4, Y4    \
	VPADDQ    Y1, Y4, Y4        \
	VMOVDQU   96(R8), Y5        \
	VPANDN    Y4, Y5, Y4        \
	VPCMPEQQ  Y0, Y4, Y4        \
	VPAND     Y3, Y4, Y4        \
	VMOVMSKPD Y4, BX

// LEAN_BELOW adds to Y4 the lanes whose |r| is below min and whose g has
// r's bits (inline too), and sets BX to the mask.
#define LEAN_BELOW \
	VMOVDQU   128(R8), Y5 \
	VPCMPGTQ  Y2, Y5, Y5  \
	VPCMPEQQ  Y0, Y1, Y3  \
	VPAND     Y3, Y5, Y5  \
	VPOR      Y5, Y4, Y4  \
	VMOVMSKPD Y4, BX

// LEAN_GATHER adds the step's four elements to the figures: e = |g − r|,
// m = e / (|r| + guard), and to the lane sums m, e², g·r, g², r².
#define LEAN_GATHER \
	VSUBPD   Y1, Y0, Y5     \
	VANDPD   Y15, Y5, Y5    \
	VMAXPD   Y5, Y11, Y11   \
	VPXOR    Y3, Y3, Y3     \
	VPCMPEQQ Y3, Y5, Y3     \
	VPSUBQ   Y3, Y14, Y14   \
	VMAXPD   Y2, Y12, Y12   \
	VADDPD   224(R8), Y2, Y2 \
	VDIVPD   Y2, Y5, Y2     \
	VMAXPD   Y2, Y13, Y13   \
	VADDPD   Y2, Y6, Y6     \
	VMULPD   Y5, Y5, Y5     \
	VADDPD   Y5, Y7, Y7     \
	VMULPD   Y1, Y0, Y3     \
	VADDPD   Y3, Y8, Y8     \
	VMULPD   Y0, Y0, Y0     \
	VADDPD   Y0, Y9, Y9     \
	VMULPD   Y1, Y1, Y1     \
	VADDPD   Y1, Y10, Y10   \
	ADDQ     $4, AX

// LEAN_LEAVE stores the figures back into v. (VZEROUPPER follows it in
// each function, where internal/asmcheck sees it before the RET.)
#define LEAN_LEAVE \
	VMOVUPD Y6, 256(R8)  \
	VMOVUPD Y7, 288(R8)  \
	VMOVUPD Y8, 320(R8)  \
	VMOVUPD Y9, 352(R8)  \
	VMOVUPD Y10, 384(R8) \
	VMOVUPD Y11, 416(R8) \
	VMOVUPD Y12, 448(R8) \
	VMOVUPD Y13, 480(R8) \
	VMOVDQU Y14, 512(R8)

// func leanRunAVX2(v *leanVec, gv, rv *float64, n int) int
TEXT ·leanRunAVX2(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), R8
	MOVQ n+24(FP), CX
	LEAN_ENTER
	MOVQ gv+8(FP), SI
	MOVQ rv+16(FP), DX

lloop:
	CMPQ    AX, CX
	JGE     ldone
	VMOVUPD (SI)(AX*8), Y0 // g
	VMOVUPD (DX)(AX*8), Y1 // r
	LEAN_CHECK
	CMPQ    BX, $15
	JNE     lbelow

lok:
	LEAN_GATHER
	JMP lloop

lbelow:
	LEAN_BELOW
	CMPQ BX, $15
	JEQ  lok

ldone:
	LEAN_LEAVE
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET

// func leanRunH16AVX2(v *leanVec, got *uint16, rv *float64, n int) int
TEXT ·leanRunH16AVX2(SB), NOSPLIT, $0-40
	MOVQ v+0(FP), R8
	MOVQ n+24(FP), CX
	LEAN_ENTER
	MOVQ got+8(FP), SI
	MOVQ rv+16(FP), DX

hloop:
	CMPQ      AX, CX
	JGE       hdone
	VCVTPH2PS (SI)(AX*2), X0 // g, exact
	VCVTPS2PD X0, Y0
	VMOVUPD   (DX)(AX*8), Y1 // r
	LEAN_CHECK
	CMPQ      BX, $15
	JNE       hbelow

hok:
	LEAN_GATHER
	JMP hloop

hbelow:
	LEAN_BELOW
	CMPQ BX, $15
	JEQ  hok

hdone:
	LEAN_LEAVE
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET

// h16abs and h16inf are an fp16 value's magnitude mask and the bits of
// +Inf, in each of eight 16-bit lanes.
DATA h16abs<>+0(SB)/8, $0x7fff7fff7fff7fff
DATA h16abs<>+8(SB)/8, $0x7fff7fff7fff7fff
GLOBL h16abs<>(SB), RODATA|NOPTR, $16
DATA h16inf<>+0(SB)/8, $0x7c007c007c007c00
DATA h16inf<>+8(SB)/8, $0x7c007c007c007c00
GLOBL h16inf<>(SB), RODATA|NOPTR, $16

// LEAN_GATHER_EXACT is LEAN_GATHER for an element of vector_add's fp16
// sums (g in Y0, r = x + y in Y1; Y4 and Y5 scratch, Y0 and Y1
// clobbered; the index is not moved): e·e, g·r and g·g are exact in
// float64 there (see leanRunH16SumAVX2), so one fused multiply-add each
// rounds as the product and then the sum do.
#define LEAN_GATHER_EXACT \
	VSUBPD      Y1, Y0, Y5      \
	VANDPD      Y15, Y5, Y5     \
	VMAXPD      Y5, Y11, Y11    \
	VXORPD      Y4, Y4, Y4      \
	VPCMPEQQ    Y4, Y5, Y4      \
	VPSUBQ      Y4, Y14, Y14    \
	VFMADD231PD Y5, Y5, Y7      \
	VFMADD231PD Y1, Y0, Y8      \
	VFMADD231PD Y0, Y0, Y9      \
	VMULPD      Y1, Y1, Y0      \
	VADDPD      Y0, Y10, Y10    \
	VANDPD      Y15, Y1, Y1     \
	VMAXPD      Y1, Y12, Y12    \
	VADDPD      224(R8), Y1, Y1 \
	VDIVPD      Y1, Y5, Y1      \
	VMAXPD      Y1, Y13, Y13    \
	VADDPD      Y1, Y6, Y6

// func leanRunH16SumAVX2(v *leanVec, got, x, y *uint16, n int) int
//
// n is the fourth argument here: the frame differs from the others'.
// Eight elements a step while they pass the fp16 test (sumfast; not
// under flush, v's min 1), else four by the short form's test, as
// leanRunH16AVX2 (sumloop), which goes back to eight after each four.
TEXT ·leanRunH16SumAVX2(SB), NOSPLIT, $0-48
	MOVQ v+0(FP), R8
	MOVQ n+32(FP), CX
	LEAN_ENTER
	MOVQ got+8(FP), SI
	MOVQ x+16(FP), DX
	MOVQ y+24(FP), DI
	MOVQ CX, R9
	SUBQ $8, R9       // a step of eight starts at most at n − 8
	CMPQ 128(R8), $1
	JNE  sumfast
	MOVQ $-1, R9      // under flush, none

sumfast:
	CMPQ         AX, R9
	JGT          sumloop
	VCVTPH2PS    (DX)(AX*2), Y0 // x, exact
	VCVTPH2PS    (DI)(AX*2), Y1 // y
	VADDPS       Y1, Y0, Y2
	VCVTPS2PH    $0, Y2, X2     // h, x + y rounded to fp32 and then to fp16 (ties to even)
	VPCMPEQW     (SI)(AX*2), X2, X3 // got bit for bit h
	VPAND        h16abs<>(SB), X2, X2
	VMOVDQU      h16inf<>(SB), X4
	VPCMPGTW     X2, X4, X4     // h finite
	VPAND        X4, X3, X3
	VPMOVMSKB    X3, BX
	CMPQ         BX, $0xffff
	JNE          sumloop
	VEXTRACTF128 $1, Y0, X2     // x and y of the upper four
	VEXTRACTF128 $1, Y1, X3
	VCVTPS2PD    X0, Y0
	VCVTPS2PD    X1, Y1
	VADDPD       Y1, Y0, Y1     // r = x + y, x's first (exact)
	VCVTPH2PS    (SI)(AX*2), X0
	VCVTPS2PD    X0, Y0         // g, exact
	LEAN_GATHER_EXACT
	VCVTPS2PD    X2, Y2
	VCVTPS2PD    X3, Y3
	VADDPD       Y3, Y2, Y1
	VCVTPH2PS    8(SI)(AX*2), X0
	VCVTPS2PD    X0, Y0
	LEAN_GATHER_EXACT
	ADDQ         $8, AX
	JMP          sumfast

sumloop:
	CMPQ      AX, CX
	JGE       sumdone
	VCVTPH2PS (SI)(AX*2), X0 // g, exact
	VCVTPS2PD X0, Y0
	VCVTPH2PS (DX)(AX*2), X1 // x
	VCVTPS2PD X1, Y1
	VCVTPH2PS (DI)(AX*2), X2 // y
	VCVTPS2PD X2, Y2
	VADDPD    Y2, Y1, Y1 // r = x + y, x's first (exact)
	LEAN_CHECK
	CMPQ      BX, $15
	JNE       sumbelow

sumok:
	LEAN_GATHER
	JMP sumfast

sumbelow:
	LEAN_BELOW
	CMPQ BX, $15
	JEQ  sumok

sumdone:
	LEAN_LEAVE
	VZEROUPPER
	MOVQ AX, ret+40(FP)
	RET

// func sumSquares4F16AVX2(b0, b1, b2, b3 *uint16, n int, l, mx *[4][4]float64)
//
// Four fp16 chunks at once, four values of each a step: widened exactly
// (F16C to fp32, then to float64), the magnitude zeroed where it is not
// below +Inf (Inf, NaN), its maximum kept and its square (rounded) added
// to lane j mod 4 of the chunk's sums.
TEXT ·sumSquares4F16AVX2(SB), NOSPLIT, $0-56
	MOVQ         b0+0(FP), SI
	MOVQ         b1+8(FP), DI
	MOVQ         b2+16(FP), R8
	MOVQ         b3+24(FP), R9
	MOVQ         n+32(FP), CX
	MOVQ         l+40(FP), R10
	MOVQ         mx+48(FP), R11
	VBROADCASTSD absmask<>(SB), Y12
	VBROADCASTSD expmask<>(SB), Y13 // +Inf
	VMOVUPD      0(R10), Y4
	VMOVUPD      32(R10), Y5
	VMOVUPD      64(R10), Y6
	VMOVUPD      96(R10), Y7
	VMOVUPD      0(R11), Y8
	VMOVUPD      32(R11), Y9
	VMOVUPD      64(R11), Y10
	VMOVUPD      96(R11), Y11
	XORQ         AX, AX

h16sqloop:
	CMPQ      AX, CX
	JGE       h16sqdone
	VCVTPH2PS (SI)(AX*2), X0
	VCVTPH2PS (DI)(AX*2), X1
	VCVTPH2PS (R8)(AX*2), X2
	VCVTPH2PS (R9)(AX*2), X3
	VCVTPS2PD X0, Y0
	VCVTPS2PD X1, Y1
	VCVTPS2PD X2, Y2
	VCVTPS2PD X3, Y3
	VANDPD    Y12, Y0, Y0
	VANDPD    Y12, Y1, Y1
	VANDPD    Y12, Y2, Y2
	VANDPD    Y12, Y3, Y3
	VCMPPD    $0x11, Y13, Y0, Y14 // |x| < +Inf, false for Inf and NaN
	VANDPD    Y14, Y0, Y0
	VCMPPD    $0x11, Y13, Y1, Y14
	VANDPD    Y14, Y1, Y1
	VCMPPD    $0x11, Y13, Y2, Y14
	VANDPD    Y14, Y2, Y2
	VCMPPD    $0x11, Y13, Y3, Y14
	VANDPD    Y14, Y3, Y3
	VMAXPD    Y0, Y8, Y8
	VMAXPD    Y1, Y9, Y9
	VMAXPD    Y2, Y10, Y10
	VMAXPD    Y3, Y11, Y11
	VMULPD    Y0, Y0, Y0
	VMULPD    Y1, Y1, Y1
	VMULPD    Y2, Y2, Y2
	VMULPD    Y3, Y3, Y3
	VADDPD    Y0, Y4, Y4
	VADDPD    Y1, Y5, Y5
	VADDPD    Y2, Y6, Y6
	VADDPD    Y3, Y7, Y7
	ADDQ      $4, AX
	JMP       h16sqloop

h16sqdone:
	VMOVUPD Y4, 0(R10)
	VMOVUPD Y5, 32(R10)
	VMOVUPD Y6, 64(R10)
	VMOVUPD Y7, 96(R10)
	VMOVUPD Y8, 0(R11)
	VMOVUPD Y9, 32(R11)
	VMOVUPD Y10, 64(R11)
	VMOVUPD Y11, 96(R11)
	VZEROUPPER
	RET
