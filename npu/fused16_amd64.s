//go:build amd64 && !purego

#include "textflag.h"

DATA f16abs<>+0(SB)/8, $0x7fffffffffffffff
GLOBL f16abs<>(SB), RODATA|NOPTR, $8
DATA f16sign<>+0(SB)/8, $0x8000000000000000
GLOBL f16sign<>(SB), RODATA|NOPTR, $8
DATA f16min<>+0(SB)/8, $0x3f10000000000000
GLOBL f16min<>(SB), RODATA|NOPTR, $8
DATA f16bias<>+0(SB)/8, $0x1ffffffffff
GLOBL f16bias<>(SB), RODATA|NOPTR, $8
DATA f16low<>+0(SB)/8, $0x3ffffffffff
GLOBL f16low<>(SB), RODATA|NOPTR, $8
DATA f16max<>+0(SB)/8, $65504.0
GLOBL f16max<>(SB), RODATA|NOPTR, $8
DATA f16inf<>+0(SB)/8, $0x7ff0000000000000
GLOBL f16inf<>(SB), RODATA|NOPTR, $8
DATA f16magic<>+0(SB)/8, $402653184.0
GLOBL f16magic<>(SB), RODATA|NOPTR, $8

// TWOSUM is one step of both kernels on four lanes: from the running
// value in Y0 and the widened b in Y1, with x in Y15, p = x·b (Y1) and
// s = Y0 + p (Y2), unfused, and twoSum's error (Y0 − (s − bb)) + (p − bb)
// with bb = s − Y0 (Y4); Y3 and Y5 are scratch.
#define TWOSUM \
	VMULPD Y15, Y1, Y1 \
	VADDPD Y1, Y0, Y2  \
	VSUBPD Y0, Y2, Y3  \
	VSUBPD Y3, Y2, Y4  \
	VSUBPD Y4, Y0, Y4  \
	VSUBPD Y3, Y1, Y5  \
	VADDPD Y5, Y4, Y4

// func fused16AVX2(c, b *float32, x float64, n int) int
// Four lanes j at a time: s = c[j] + x·b[j] in float64, the product and
// the sum unfused; a group any of whose sums is inexact (twoSum's error
// nonzero) or NaN stops the loop before it; otherwise c[j] = rn16(s),
// each lane as rn16: for |s| ≥ 2^-14 (rn16's biased exponent of at least
// 1009) the significand rounded to 10 bits, ties to even, by integer
// addition and a mask, ±Inf above 65504; below, (|s| + 1.5·2^28) −
// 1.5·2^28 with s's sign. The constants stay in Y6–Y15 for the whole
// loop. Returns how many elements it stored.
TEXT ·fused16AVX2(SB), NOSPLIT, $0-40
	MOVQ         c+0(FP), DI
	MOVQ         b+8(FP), SI
	VBROADCASTSD x+16(FP), Y15
	MOVQ         n+24(FP), CX
	VBROADCASTSD f16abs<>(SB), Y14
	VBROADCASTSD f16sign<>(SB), Y13
	VPXOR        Y12, Y12, Y12
	VBROADCASTSD f16min<>(SB), Y11
	VBROADCASTSD f16bias<>(SB), Y10
	VBROADCASTSD f16low<>(SB), Y9
	VBROADCASTSD f16max<>(SB), Y8
	VBROADCASTSD f16inf<>(SB), Y7
	VBROADCASTSD f16magic<>(SB), Y6
	XORQ         AX, AX

floop:
	CMPQ      AX, CX
	JGE       fdone
	VCVTPS2PD (DI)(AX*4), Y0 // c
	VCVTPS2PD (SI)(AX*4), Y1 // y
	TWOSUM
	VCMPPD    $4, Y12, Y4, Y4 // ≠ 0, or NaN
	VMOVMSKPD Y4, BX
	TESTQ     BX, BX
	JNZ       fdone

	// Normal fp16 range: bits + (2^41 − 1) + bit 42, then bits 0–41
	// cleared (bit 42 by shifting it to the top and back).
	VANDPD Y14, Y2, Y0       // |s|
	VCMPPD $0x1d, Y11, Y0, Y1 // |s| ≥ 2^-14
	VPSLLQ $21, Y2, Y3
	VPSRLQ $63, Y3, Y3
	VPADDQ Y10, Y3, Y3
	VPADDQ Y2, Y3, Y3
	VPANDN Y3, Y9, Y3 // r

	// |r| > 65504: ±Inf with s's sign.
	VANDPD Y14, Y3, Y4
	VCMPPD $0x1e, Y8, Y4, Y4
	VANDPD Y13, Y2, Y5
	VORPD  Y7, Y5, Y5
	VPANDN Y3, Y4, Y3
	VPAND  Y4, Y5, Y5
	VPOR   Y5, Y3, Y3

	// Subnormal fp16 range: (|s| + magic) − magic, s's sign.
	VADDPD Y6, Y0, Y0
	VSUBPD Y6, Y0, Y0
	VANDPD Y13, Y2, Y5
	VORPD  Y5, Y0, Y0

	VPAND      Y1, Y3, Y3
	VPANDN     Y0, Y1, Y0
	VPOR       Y0, Y3, Y3
	VCVTPD2PSY Y3, X3
	VMOVUPS    X3, (DI)(AX*4)
	ADDQ       $4, AX
	JMP        floop

fdone:
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET

// func blockRowAVX2(st *float64, et *uint64, b *float32, x float64, n int)
// Four lanes j at a time: p = x·b[j] and s = st[j] + p in float64,
// unfused; st[j] = s; et[j] |= the bits of twoSum's error, shifted left
// by one (the sign out).
TEXT ·blockRowAVX2(SB), NOSPLIT, $0-40
	MOVQ         st+0(FP), DI
	MOVQ         et+8(FP), DX
	MOVQ         b+16(FP), SI
	VBROADCASTSD x+24(FP), Y15
	MOVQ         n+32(FP), CX
	XORQ         AX, AX

bloop:
	CMPQ      AX, CX
	JGE       bdone
	VMOVUPD   (DI)(AX*8), Y0 // s0
	VCVTPS2PD (SI)(AX*4), Y1 // y
	TWOSUM
	VMOVUPD   Y2, (DI)(AX*8)
	VPSLLQ    $1, Y4, Y4
	VPOR      (DX)(AX*8), Y4, Y4
	VMOVDQU   Y4, (DX)(AX*8)
	ADDQ      $4, AX
	JMP       bloop

bdone:
	VZEROUPPER
	RET
