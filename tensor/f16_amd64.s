//go:build amd64 && !purego

#include "textflag.h"

// func f16ToF64F16C(dst *float64, src *uint16, n int)
TEXT ·f16ToF64F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

loop:
	CMPQ      AX, CX
	JGE       done
	VCVTPH2PS (SI)(AX*2), X0
	VCVTPS2PD X0, Y1
	VMOVUPD   Y1, (DI)(AX*8)
	ADDQ      $4, AX
	JMP       loop

done:
	VZEROUPPER
	RET
