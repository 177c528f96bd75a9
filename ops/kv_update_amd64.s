//go:build amd64 && !purego

#include "textflag.h"

// func ntCopy64AVX(dst, src *float64, n int)
// n a positive multiple of 4; dst 32-byte aligned. Non-temporal stores:
// an Expected's slices are written once and read much later, so their
// cache lines need not be read for ownership first. SFENCE orders the
// stores before the caller's later (synchronising) writes.
TEXT ·ntCopy64AVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX

ntloop:
	VMOVUPD  (SI), Y0
	VMOVNTPD Y0, (DI)
	ADDQ     $32, SI
	ADDQ     $32, DI
	DECQ     CX
	JNZ      ntloop
	SFENCE
	VZEROUPPER
	RET

// func ntCopy8AVX(dst, src *byte, n int)
// n a positive multiple of 32; dst 32-byte aligned.
TEXT ·ntCopy8AVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $5, CX

nt8loop:
	VMOVDQU  (SI), Y0
	VMOVNTDQ Y0, (DI)
	ADDQ     $32, SI
	ADDQ     $32, DI
	DECQ     CX
	JNZ      nt8loop
	SFENCE
	VZEROUPPER
	RET
