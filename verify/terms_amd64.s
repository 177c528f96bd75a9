//go:build amd64 && !purego

#include "textflag.h"

DATA absmask<>+0(SB)/8, $0x7fffffffffffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $8
DATA expmask<>+0(SB)/8, $0x7ff0000000000000
GLOBL expmask<>(SB), RODATA|NOPTR, $8

// func termsAVX2(gv, rv, mere, es, gs, rs *float64, n int, scaleE, scaleV, guard float64) (mare float64)
TEXT ·termsAVX2(SB), NOSPLIT, $0-88
	MOVQ gv+0(FP), SI
	MOVQ rv+8(FP), DI
	MOVQ mere+16(FP), R8
	MOVQ es+24(FP), R9
	MOVQ gs+32(FP), R10
	MOVQ rs+40(FP), R11
	MOVQ n+48(FP), CX
	VBROADCASTSD scaleE+56(FP), Y12
	VBROADCASTSD scaleV+64(FP), Y13
	VBROADCASTSD guard+72(FP), Y14
	VBROADCASTSD absmask<>(SB), Y15
	VBROADCASTSD expmask<>(SB), Y11
	VXORPD Y10, Y10, Y10
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD (DI)(AX*8), Y1

	// Y2: all ones in the lanes where g or r is ±Inf or NaN.
	VANDPD   Y11, Y0, Y2
	VPCMPEQQ Y11, Y2, Y2
	VANDPD   Y11, Y1, Y3
	VPCMPEQQ Y11, Y3, Y3
	VORPD    Y3, Y2, Y2

	VSUBPD Y1, Y0, Y4  // g − r
	VANDPD Y15, Y4, Y4 // e = |g − r|
	VANDPD Y15, Y1, Y5 // |r|
	VADDPD Y14, Y5, Y5 // |r| + guard
	VDIVPD Y5, Y4, Y6  // e / (|r| + guard)
	VDIVPD Y12, Y4, Y7 // e / scaleE
	VDIVPD Y13, Y0, Y8 // g / scaleV
	VDIVPD Y13, Y1, Y9 // r / scaleV

	VANDNPD Y6, Y2, Y6
	VANDNPD Y7, Y2, Y7
	VANDNPD Y8, Y2, Y8
	VANDNPD Y9, Y2, Y9
	VMAXPD  Y6, Y10, Y10

	VMOVUPD Y6, (R8)(AX*8)
	VMOVUPD Y7, (R9)(AX*8)
	VMOVUPD Y8, (R10)(AX*8)
	VMOVUPD Y9, (R11)(AX*8)
	ADDQ    $4, AX
	JMP     loop

done:
	VEXTRACTF128 $1, Y10, X0
	VMAXPD       X0, X10, X0
	VPERMILPD    $1, X0, X1
	VMAXSD       X1, X0, X0
	VZEROUPPER
	MOVSD        X0, mare+80(FP)
	RET
