//go:build amd64 && !purego

#include "textflag.h"

DATA brabs<>+0(SB)/8, $0x7fffffffffffffff
DATA brabs<>+8(SB)/8, $0x7fffffffffffffff
DATA brabs<>+16(SB)/8, $0x7fffffffffffffff
DATA brabs<>+24(SB)/8, $0x7fffffffffffffff
GLOBL brabs<>(SB), RODATA|NOPTR, $32
DATA brmaxfin<>+0(SB)/8, $0x7fefffffffffffff
DATA brmaxfin<>+8(SB)/8, $0x7fefffffffffffff
DATA brmaxfin<>+16(SB)/8, $0x7fefffffffffffff
DATA brmaxfin<>+24(SB)/8, $0x7fefffffffffffff
GLOBL brmaxfin<>(SB), RODATA|NOPTR, $32
DATA brexp<>+0(SB)/8, $0x7ff0000000000000
DATA brexp<>+8(SB)/8, $0x7ff0000000000000
DATA brexp<>+16(SB)/8, $0x7ff0000000000000
DATA brexp<>+24(SB)/8, $0x7ff0000000000000
GLOBL brexp<>(SB), RODATA|NOPTR, $32
DATA brtiny<>+0(SB)/8, $0x0030000000000000
DATA brtiny<>+8(SB)/8, $0x0030000000000000
DATA brtiny<>+16(SB)/8, $0x0030000000000000
DATA brtiny<>+24(SB)/8, $0x0030000000000000
GLOBL brtiny<>(SB), RODATA|NOPTR, $32

// func boundRunAVX2(v *boundRunVec, gv, rv, bv *float64, av *bound.Special, n int) int
TEXT ·boundRunAVX2(SB), NOSPLIT, $0-56
	MOVQ    v+0(FP), R8
	MOVQ    gv+8(FP), SI
	MOVQ    rv+16(FP), DX
	MOVQ    bv+24(FP), R9
	MOVQ    av+32(FP), DI
	MOVQ    n+40(FP), CX
	VMOVDQU 256(R8), Y10 // counts: zero | >u
	VMOVDQU 288(R8), Y11 // >2u | >4u
	VMOVDQU 320(R8), Y12 // >8u | >16u
	VMOVUPD 192(R8), Y13 // maxAbs
	VMOVUPD 224(R8), Y14 // tight
	XORQ    AX, AX

bloop:
	CMPQ  AX, CX
	JGE   bdone
	MOVL  (DI)(AX*1), BX // four alternatives, all none
	TESTL BX, BX
	JNZ   bdone

	VMOVUPD (SI)(AX*8), Y0 // g
	VMOVUPD (DX)(AX*8), Y1 // r
	VMOVUPD (R9)(AX*8), Y2 // b
	VPAND   brabs<>(SB), Y0, Y3 // |g|
	VPAND   brabs<>(SB), Y1, Y4 // |r|
	VSUBPD  Y1, Y0, Y5          // g − r
	VPAND   brabs<>(SB), Y5, Y5 // e

	// ok: g and r finite (|x| at most the largest finite's bits) and e ≤ b.
	VPCMPGTQ brmaxfin<>(SB), Y3, Y6
	VPCMPGTQ brmaxfin<>(SB), Y4, Y7
	VPOR     Y7, Y6, Y6
	VCMPPD   $0x12, Y2, Y5, Y7 // e ≤ b
	VPANDN   Y7, Y6, Y6

	// t = e/b, +0 where e = 0.
	VDIVPD   Y2, Y5, Y2
	VPXOR    Y9, Y9, Y9
	VPCMPEQQ Y9, Y5, Y7        // e = 0
	VPANDN   Y2, Y7, Y2

	// Relative error: e ≤ q = relSkip·|r| and q ≥ 2^-1020, or e = 0.
	VMULPD 0(R8), Y4, Y0
	VCMPPD $0x12, Y0, Y5, Y1
	VCMPPD $0x1d, brtiny<>(SB), Y0, Y0
	VPAND  Y0, Y1, Y1
	VPOR   Y7, Y1, Y1
	VPAND  Y1, Y6, Y6

	// Not a candidate for the worst: e = 0, or not (t > floor or t = floor and e > floor2).
	VPCMPGTQ 32(R8), Y2, Y0 // t > floor
	VPCMPEQQ 32(R8), Y2, Y1 // t = floor
	VPCMPGTQ 64(R8), Y5, Y8 // e > floor2
	VPAND    Y8, Y1, Y1
	VPOR     Y1, Y0, Y0
	VPANDN   Y0, Y7, Y0     // candidate
	VPANDN   Y6, Y0, Y6

	VMOVMSKPD Y6, BX
	CMPQ      BX, $15
	JNE       bdone

	// u = ulp at r: 2^(clamp(exponent(r), Emin, Emax)) · 2^(1−P).
	VPAND  brexp<>(SB), Y4, Y4
	VMAXPD 96(R8), Y4, Y4
	VMINPD 128(R8), Y4, Y4
	VMULPD 160(R8), Y4, Y4
	VCMPPD $0x1e, Y4, Y5, Y0 // e > u
	VADDPD Y4, Y4, Y4
	VCMPPD $0x1e, Y4, Y5, Y1 // e > 2u
	VADDPD Y4, Y4, Y4
	VCMPPD $0x1e, Y4, Y5, Y6 // e > 4u
	VADDPD Y4, Y4, Y4
	VCMPPD $0x1e, Y4, Y5, Y8 // e > 8u
	VADDPD Y4, Y4, Y4
	VCMPPD $0x1e, Y4, Y5, Y9 // e > 16u

	// Pairs of masks, one in each 32-bit half, counted.
	VPBLENDD $0xaa, Y0, Y7, Y7
	VPSUBD   Y7, Y10, Y10
	VPBLENDD $0xaa, Y6, Y1, Y1
	VPSUBD   Y1, Y11, Y11
	VPBLENDD $0xaa, Y9, Y8, Y8
	VPSUBD   Y8, Y12, Y12

	VMAXPD Y5, Y13, Y13
	VMAXPD Y2, Y14, Y14
	ADDQ   $4, AX
	JMP    bloop

bdone:
	VMOVDQU Y10, 256(R8)
	VMOVDQU Y11, 288(R8)
	VMOVDQU Y12, 320(R8)
	VMOVUPD Y13, 192(R8)
	VMOVUPD Y14, 224(R8)
	VZEROUPPER
	MOVQ    AX, ret+48(FP)
	RET
