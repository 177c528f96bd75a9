//go:build amd64 && !purego

#include "textflag.h"

DATA f16abs<>+0(SB)/8, $0x7fffffffffffffff
GLOBL f16abs<>(SB), RODATA|NOPTR, $8
DATA f16sign<>+0(SB)/8, $0x8000000000000000
GLOBL f16sign<>(SB), RODATA|NOPTR, $8
DATA f16exp<>+0(SB)/8, $0x7ff
GLOBL f16exp<>(SB), RODATA|NOPTR, $8
DATA f16emin<>+0(SB)/8, $1008
GLOBL f16emin<>(SB), RODATA|NOPTR, $8
DATA f16one<>+0(SB)/8, $1
GLOBL f16one<>(SB), RODATA|NOPTR, $8
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

// func fused16AVX2(c, b *float32, x float64, n int) int
// Four lanes j at a time: s = c[j] + x·b[j] in float64, the product and
// the sum unfused; a group any of whose sums is inexact (twoSum's error
// nonzero) or NaN stops the loop before it; otherwise c[j] = rn16(s),
// each lane as rn16: for a biased exponent above 1008 (|s| ≥ 2^-14) the
// significand rounded to 10 bits, ties to even, by integer addition and
// a mask, ±Inf above 65504; below, (|s| + 1.5·2^28) − 1.5·2^28 with s's
// sign. Returns how many elements it stored.
TEXT ·fused16AVX2(SB), NOSPLIT, $0-40
	MOVQ         c+0(FP), DI
	MOVQ         b+8(FP), SI
	VBROADCASTSD x+16(FP), Y15
	MOVQ         n+24(FP), CX
	VBROADCASTSD f16abs<>(SB), Y14
	VBROADCASTSD f16sign<>(SB), Y13
	VPXOR        Y12, Y12, Y12
	XORQ         AX, AX

floop:
	CMPQ      AX, CX
	JGE       fdone
	VCVTPS2PD (DI)(AX*4), Y0 // c
	VCVTPS2PD (SI)(AX*4), Y1 // y
	VMULPD    Y15, Y1, Y1    // p = x·y
	VADDPD    Y1, Y0, Y2     // s = c + p
	VSUBPD    Y0, Y2, Y3     // bb = s − c
	VSUBPD    Y3, Y2, Y4     // s − bb
	VSUBPD    Y4, Y0, Y4     // c − (s − bb)
	VSUBPD    Y3, Y1, Y5     // p − bb
	VADDPD    Y5, Y4, Y4     // the sum's error
	VCMPPD    $4, Y12, Y4, Y4 // ≠ 0, or NaN
	VMOVMSKPD Y4, BX
	TESTQ     BX, BX
	JNZ       fdone

	// Normal fp16 range: bits + (2^41 − 1) + bit 42, then bits 0–41 cleared.
	VPSRLQ       $52, Y2, Y6
	VPBROADCASTQ f16exp<>(SB), Y7
	VPAND        Y7, Y6, Y6
	VPBROADCASTQ f16emin<>(SB), Y7
	VPCMPGTQ     Y7, Y6, Y6 // biased exponent > 1008
	VPSRLQ       $42, Y2, Y7
	VPBROADCASTQ f16one<>(SB), Y8
	VPAND        Y8, Y7, Y7
	VPBROADCASTQ f16bias<>(SB), Y8
	VPADDQ       Y8, Y7, Y7
	VPADDQ       Y2, Y7, Y7
	VPBROADCASTQ f16low<>(SB), Y8
	VPANDN       Y7, Y8, Y7 // r

	// |r| > 65504: ±Inf with s's sign.
	VANDPD       Y14, Y7, Y8
	VBROADCASTSD f16max<>(SB), Y9
	VCMPPD       $0x1e, Y9, Y8, Y8 // |r| > 65504
	VANDPD       Y13, Y2, Y9
	VBROADCASTSD f16inf<>(SB), Y10
	VORPD        Y10, Y9, Y9
	VPANDN       Y7, Y8, Y7
	VPAND        Y8, Y9, Y9
	VPOR         Y9, Y7, Y7

	// Subnormal fp16 range: (|s| + magic) − magic, s's sign.
	VANDPD       Y14, Y2, Y10
	VBROADCASTSD f16magic<>(SB), Y11
	VADDPD       Y11, Y10, Y10
	VSUBPD       Y11, Y10, Y10
	VANDPD       Y13, Y2, Y11
	VORPD        Y11, Y10, Y10

	VPAND      Y6, Y7, Y7
	VPANDN     Y10, Y6, Y10
	VPOR       Y10, Y7, Y7
	VCVTPD2PSY Y7, X7
	VMOVUPS    X7, (DI)(AX*4)
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
	VMULPD    Y15, Y1, Y1    // p = x·y
	VADDPD    Y1, Y0, Y2     // s = s0 + p
	VSUBPD    Y0, Y2, Y3     // bb = s − s0
	VMOVUPD   Y2, (DI)(AX*8)
	VSUBPD    Y3, Y2, Y4     // s − bb
	VSUBPD    Y4, Y0, Y4     // s0 − (s − bb)
	VSUBPD    Y3, Y1, Y5     // p − bb
	VADDPD    Y5, Y4, Y4     // the error
	VPSLLQ    $1, Y4, Y4
	VPOR      (DX)(AX*8), Y4, Y4
	VMOVDQU   Y4, (DX)(AX*8)
	ADDQ      $4, AX
	JMP       bloop

bdone:
	VZEROUPPER
	RET
