//go:build amd64 && !purego

#include "textflag.h"

DATA f16absmask<>+0(SB)/8, $0x7fff7fff7fff7fff
DATA f16absmask<>+8(SB)/8, $0x7fff7fff7fff7fff
GLOBL f16absmask<>(SB), RODATA|NOPTR, $16

// func absF16F32F16C(dst *float32, src *uint16, n int)
TEXT ·absF16F32F16C(SB), NOSPLIT, $0-24
	MOVQ    dst+0(FP), DI
	MOVQ    src+8(FP), SI
	MOVQ    n+16(FP), CX
	VMOVDQU f16absmask<>(SB), X2
	XORQ    AX, AX

loop:
	CMPQ      AX, CX
	JGE       done
	VPAND     (SI)(AX*2), X2, X0
	VCVTPH2PS X0, Y1
	VMOVUPS   Y1, (DI)(AX*4)
	ADDQ      $8, AX
	JMP       loop

done:
	VZEROUPPER
	RET

// func absF16F32Panel16(dst *float32, src *uint16, rows, ld int)
TEXT ·absF16F32Panel16(SB), NOSPLIT, $0-32
	MOVQ    dst+0(FP), DI
	MOVQ    src+8(FP), SI
	MOVQ    rows+16(FP), CX
	MOVQ    ld+24(FP), DX
	SHLQ    $1, DX           // the row stride in bytes
	VMOVDQU f16absmask<>(SB), X2

ploop:
	VPAND     (SI), X2, X0
	VPAND     16(SI), X2, X3
	VCVTPH2PS X0, Y1
	VCVTPH2PS X3, Y4
	VMOVUPS   Y1, (DI)
	VMOVUPS   Y4, 32(DI)
	ADDQ      DX, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       ploop
	VZEROUPPER
	RET
