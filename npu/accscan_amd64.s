//go:build amd64 && !purego

#include "textflag.h"

// func holdsNegZeroOrSNaNAVX2(c *float32, n int) bool
// Per lane v: −0 is v = 0x80000000; a signalling NaN is v & 0x7FC00000 =
// 0x7F800000 (exponent all ones, quiet bit clear) with v & 0x003FFFFF ≠ 0
// (not an infinity). Returns at the first group of eight that has one.
TEXT ·holdsNegZeroOrSNaNAVX2(SB), NOSPLIT, $0-17
	MOVQ         c+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVL         $0x80000000, AX
	VMOVQ        AX, X0
	VPBROADCASTD X0, Y0          // −0
	MOVL         $0x7FC00000, AX
	VMOVQ        AX, X1
	VPBROADCASTD X1, Y1          // exponent and quiet bit
	MOVL         $0x7F800000, AX
	VMOVQ        AX, X2
	VPBROADCASTD X2, Y2          // exponent all ones, quiet bit clear
	MOVL         $0x003FFFFF, AX
	VMOVQ        AX, X3
	VPBROADCASTD X3, Y3          // the payload below the quiet bit
	VPXOR        Y4, Y4, Y4

loop:
	VMOVDQU  (SI), Y5
	VPCMPEQD Y0, Y5, Y6      // v = −0
	VPAND    Y1, Y5, Y7
	VPCMPEQD Y2, Y7, Y7      // a NaN or an infinity, quiet bit clear
	VPAND    Y3, Y5, Y8
	VPCMPEQD Y4, Y8, Y8      // payload zero
	VPANDN   Y7, Y8, Y8      // quiet bit clear and payload non-zero: a signalling NaN
	VPOR     Y6, Y8, Y6
	VPTEST   Y6, Y6
	JNZ      found
	ADDQ     $32, SI
	SUBQ     $8, CX
	JNZ      loop
	VZEROUPPER
	MOVB     $0, ret+16(FP)
	RET

found:
	VZEROUPPER
	MOVB $1, ret+16(FP)
	RET

// func scanF16AVX2(src *uint16, n int) (nonFinite, zero bool)
TEXT ·scanF16AVX2(SB), NOSPLIT, $0-18
	MOVQ         src+0(FP), SI
	MOVQ         n+8(FP), CX
	MOVQ         $0x7fff, AX
	VMOVQ        AX, X15
	VPBROADCASTW X15, Y15     // the magnitude's bits
	MOVQ         $0x0400, AX
	VMOVQ        AX, X14
	VPBROADCASTW X14, Y14
	MOVQ         $1, AX
	VMOVQ        AX, X13
	VPBROADCASTW X13, Y13
	VPXOR        Y0, Y0, Y0   // nonFinite lanes
	VPXOR        Y1, Y1, Y1   // zero lanes
	XORQ         AX, AX

floop:
	CMPQ   AX, CX
	JGE    fdone
	VPAND  (SI)(AX*2), Y15, Y2 // a
	VPADDW Y14, Y2, Y3         // a + 0x0400
	VPOR   Y3, Y0, Y0
	VPSUBW Y13, Y2, Y4         // a − 1
	VPOR   Y4, Y1, Y1
	ADDQ   $16, AX
	JMP    floop

fdone:
	VPMOVMSKB Y0, DX
	ANDL      $0xaaaaaaaa, DX  // bit 15 of each lane: its high byte's top bit
	SETNE     nonFinite+16(FP)
	VPMOVMSKB Y1, DX
	ANDL      $0xaaaaaaaa, DX
	SETNE     zero+17(FP)
	VZEROUPPER
	RET
