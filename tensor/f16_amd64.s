//go:build amd64 && !purego

#include "textflag.h"

// func f16ToF64F16C(dst *float64, src *uint16, n int)
TEXT ·f16ToF64F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

	// Eight values a step: one VCVTPH2PS for two VCVTPS2PD, and half
	// the loop's own instructions a value.
	MOVQ CX, DX
	ANDQ $-8, DX

loop8:
	CMPQ         AX, DX
	JGE          loop
	VCVTPH2PS    (SI)(AX*2), Y0
	VCVTPS2PD    X0, Y1
	VEXTRACTF128 $1, Y0, X2
	VCVTPS2PD    X2, Y3
	VMOVUPD      Y1, (DI)(AX*8)
	VMOVUPD      Y3, 32(DI)(AX*8)
	ADDQ         $8, AX
	JMP          loop8

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

// func bf16ToF64AVX2(dst *float64, src *uint16, n int)
TEXT ·bf16ToF64AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

bf16loop:
	CMPQ         AX, CX
	JGE          bf16done
	VPMOVZXWD    (SI)(AX*2), Y0
	VPSLLD       $16, Y0, Y0
	VCVTPS2PD    X0, Y1
	VEXTRACTI128 $1, Y0, X2
	VCVTPS2PD    X2, Y3
	VMOVUPD      Y1, (DI)(AX*8)
	VMOVUPD      Y3, 32(DI)(AX*8)
	ADDQ         $8, AX
	JMP          bf16loop

bf16done:
	VZEROUPPER
	RET

// func f32ToF64AVX2(dst *float64, src *float32, n int)
TEXT ·f32ToF64AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

f32loop:
	CMPQ      AX, CX
	JGE       f32done
	VCVTPS2PD (SI)(AX*4), Y0
	VCVTPS2PD 16(SI)(AX*4), Y1
	VMOVUPD   Y0, (DI)(AX*8)
	VMOVUPD   Y1, 32(DI)(AX*8)
	ADDQ      $8, AX
	JMP       f32loop

f32done:
	VZEROUPPER
	RET

// func f16ToF32F16C(dst *float32, src *uint16, n int)
TEXT ·f16ToF32F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX

loop32:
	CMPQ      AX, CX
	JGE       done32
	VCVTPH2PS (SI)(AX*2), Y0
	VMOVUPS   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	JMP       loop32

done32:
	VZEROUPPER
	RET

// func f16ToF64Grouped8(dst *float64, src *uint16, runs, stride int)
TEXT ·f16ToF64Grouped8(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ runs+16(FP), CX
	MOVQ stride+24(FP), DX
	SHLQ $3, DX                // stride in bytes

gloop:
	TESTQ        CX, CX
	JZ           gdone
	VCVTPH2PS    (SI), Y0      // eight fp16 values as fp32
	VCVTPS2PD    X0, Y1
	VEXTRACTF128 $1, Y0, X2
	VCVTPS2PD    X2, Y3
	VMOVUPD      Y1, (DI)
	VMOVUPD      Y3, 32(DI)
	ADDQ         $16, SI
	ADDQ         DX, DI
	DECQ         CX
	JMP          gloop

gdone:
	VZEROUPPER
	RET

// func f16AddToF64F16C(dst *float64, x, y *uint16, n int)
TEXT ·f16AddToF64F16C(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), BX
	MOVQ n+24(FP), CX
	XORQ AX, AX

addloop:
	CMPQ         AX, CX
	JGE          adddone
	VCVTPH2PS    (SI)(AX*2), Y0
	VCVTPH2PS    (BX)(AX*2), Y4
	VCVTPS2PD    X0, Y1
	VCVTPS2PD    X4, Y5
	VADDPD       Y5, Y1, Y1 // x + y: of two NaNs, x's
	VEXTRACTF128 $1, Y0, X2
	VEXTRACTF128 $1, Y4, X6
	VCVTPS2PD    X2, Y3
	VCVTPS2PD    X6, Y7
	VADDPD       Y7, Y3, Y3
	VMOVUPD      Y1, (DI)(AX*8)
	VMOVUPD      Y3, 32(DI)(AX*8)
	ADDQ         $8, AX
	JMP          addloop

adddone:
	VZEROUPPER
	RET
