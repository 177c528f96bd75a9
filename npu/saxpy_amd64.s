//go:build amd64 && !purego

#include "textflag.h"

// func saxpyAVX(c, b *float32, x float32, n int)
TEXT ·saxpyAVX(SB), NOSPLIT, $0-32
	MOVQ         c+0(FP), DI
	MOVQ         b+8(FP), SI
	VBROADCASTSS x+16(FP), Y8
	MOVQ         n+24(FP), CX
	XORQ         AX, AX

saxloop:
	CMPQ    AX, CX
	JGE     saxdone
	VMULPS  (SI)(AX*4), Y8, Y0 // x·b, rounded
	VADDPS  (DI)(AX*4), Y0, Y0 // + c, rounded
	VMOVUPS Y0, (DI)(AX*4)
	ADDQ    $8, AX
	JMP     saxloop

saxdone:
	VZEROUPPER
	RET
