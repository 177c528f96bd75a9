//go:build amd64 && !purego

#include "textflag.h"

// BINARGS loads a binary kernel's arguments (op binOp, z, a, b *T, n
// int): op R8, z DI, a SI, b DX, n CX; the index AX starts at 0.
#define BINARGS \
	MOVBQZX op+0(FP), R8 \
	MOVQ    z+8(FP), DI \
	MOVQ    a+16(FP), SI \
	MOVQ    b+24(FP), DX \
	MOVQ    n+32(FP), CX \
	XORQ    AX, AX

// BINLOOPS runs STEP(VADDPS), STEP(VSUBPS) or STEP(VMULPS), as op (R8)
// is 0, 1 or 2, until AX reaches n (CX), and returns. STEP advances AX.
#define BINLOOPS(STEP) \
	CMPQ R8, $1 \
	JEQ  sub \
	JGT  mul \
add: \
	CMPQ AX, CX \
	JGE  done \
	STEP(VADDPS) \
	JMP  add \
sub: \
	CMPQ AX, CX \
	JGE  done \
	STEP(VSUBPS) \
	JMP  sub \
mul: \
	CMPQ AX, CX \
	JGE  done \
	STEP(VMULPS) \
	JMP  mul \
done: \
	VZEROUPPER \
	RET

// OPF16 is one 8-element step of binF16F16C: widen a and b to fp32
// (exact), apply INSN, replace NaN lanes by the fp32 NaN whose fp16
// conversion is the default NaN 0xFE00, round to fp16 ties to even.
#define OPF16(INSN) \
	VCVTPH2PS (SI)(AX*2), Y0 \
	VCVTPH2PS (DX)(AX*2), Y1 \
	INSN      Y1, Y0, Y0 \
	VCMPPS    $3, Y0, Y0, Y2 \
	VBLENDVPS Y2, Y15, Y0, Y0 \
	VCVTPS2PH $0, Y0, X0 \
	VMOVDQU   X0, (DI)(AX*2) \
	ADDQ      $8, AX

// func binF16F16C(op binOp, z, a, b *uint16, n int)
TEXT ·binF16F16C(SB), NOSPLIT, $0-40
	BINARGS
	MOVL         $0xFFC00000, R9
	VMOVQ        R9, X15
	VPBROADCASTD X15, Y15
	BINLOOPS(OPF16)

// FIXSETUP loads fixBits's constants, each broadcast by BCAST into every
// lane: exp Y10, frac Y11, maxFinite Y8, all ones under saturation Y13,
// all ones under flushing Y14, zero Y9, sign = ^(exp | frac) Y12.
#define FIXSETUP(BCAST, CMPEQ) \
	VMOVQ    R10, X0 \
	BCAST    X0, Y10 \
	VMOVQ    R11, X0 \
	BCAST    X0, Y11 \
	VMOVQ    R12, X0 \
	BCAST    X0, Y8 \
	NEGL     R13 \
	VMOVQ    R13, X0 \
	BCAST    X0, Y13 \
	NEGL     R9 \
	VMOVQ    R9, X0 \
	BCAST    X0, Y14 \
	VPXOR    Y9, Y9, Y9 \
	CMPEQ    Y15, Y15, Y15 \
	VPOR     Y11, Y10, Y12 \
	VPXOR    Y15, Y12, Y12 \
	XORQ     AX, AX

// FIXSTEP is one step of fixBits over the 32 bytes at (DI)(AX*SCALE),
// lanes compared by CMPEQ: the lanes to change are found by comparisons
// and blended, no branch.
#define FIXSTEP(CMPEQ, SCALE, STEP) \
	VMOVDQU   (DI)(AX*SCALE), Y0 \
	VPAND     Y10, Y0, Y1 \
	CMPEQ     Y10, Y1, Y2 \
	VPAND     Y11, Y0, Y3 \
	CMPEQ     Y9, Y3, Y3 \
	CMPEQ     Y9, Y1, Y4 \
	VPANDN    Y4, Y3, Y4 \
	VPANDN    Y2, Y3, Y5 \
	VPAND     Y3, Y2, Y6 \
	VPAND     Y14, Y4, Y4 \
	VPAND     Y13, Y5, Y5 \
	VPAND     Y13, Y6, Y6 \
	VPAND     Y12, Y0, Y7 \
	VPOR      Y8, Y7, Y1 \
	VPBLENDVB Y6, Y1, Y0, Y0 \
	VPBLENDVB Y4, Y7, Y0, Y0 \
	VPANDN    Y0, Y5, Y0 \
	VMOVDQU   Y0, (DI)(AX*SCALE) \
	ADDQ      $STEP, AX

// In FIXSTEP, with v the lanes: e = v & exp; Y2: e = exp; Y3: v & frac
// = 0; Y4: subnormal (e = 0, fraction set), under flushing; Y5: NaN,
// Y6: ±Inf, under saturation; Y7: v & sign; Y1: ±maxFinite. ±Inf
// becomes ±max, a subnormal a signed zero, a NaN +0.

// func fixBits16AVX2(z *uint16, n int, exp, frac, maxFinite uint16, sat, flush bool)
// fixBits on sixteen patterns at a time (n a positive multiple of 16).
TEXT ·fixBits16AVX2(SB), NOSPLIT, $0-24
	MOVQ    z+0(FP), DI
	MOVQ    n+8(FP), CX
	MOVWLZX exp+16(FP), R10
	MOVWLZX frac+18(FP), R11
	MOVWLZX maxFinite+20(FP), R12
	MOVBLZX sat+22(FP), R13
	MOVBLZX flush+23(FP), R9
	FIXSETUP(VPBROADCASTW, VPCMPEQW)

fixloop:
	CMPQ AX, CX
	JGE  fixdone
	FIXSTEP(VPCMPEQW, 2, 16)
	JMP  fixloop

fixdone:
	VZEROUPPER
	RET

// func fixBits32AVX2(z *uint32, n int, exp, frac, maxFinite uint32, sat, flush bool)
// fixBits on eight 32-bit patterns at a time (n a positive multiple of 8).
TEXT ·fixBits32AVX2(SB), NOSPLIT, $0-30
	MOVQ    z+0(FP), DI
	MOVQ    n+8(FP), CX
	MOVL    exp+16(FP), R10
	MOVL    frac+20(FP), R11
	MOVL    maxFinite+24(FP), R12
	MOVBLZX sat+28(FP), R13
	MOVBLZX flush+29(FP), R9
	FIXSETUP(VPBROADCASTD, VPCMPEQD)

fix32loop:
	CMPQ AX, CX
	JGE  fix32done
	FIXSTEP(VPCMPEQD, 4, 8)
	JMP  fix32loop

fix32done:
	VZEROUPPER
	RET

// OPF32 is one 8-element step of binF32AVX: the fp32 operation, NaN
// lanes replaced by the default NaN (Y15).
#define OPF32(INSN) \
	VMOVUPS   (SI)(AX*4), Y0 \
	INSN      (DX)(AX*4), Y0, Y0 \
	VCMPPS    $3, Y0, Y0, Y2 \
	VBLENDVPS Y2, Y15, Y0, Y0 \
	VMOVUPS   Y0, (DI)(AX*4) \
	ADDQ      $8, AX

// func binF32AVX(op binOp, z, a, b *float32, n int)
TEXT ·binF32AVX(SB), NOSPLIT, $0-40
	BINARGS
	MOVL         $0xFFC00000, R9
	VMOVQ        R9, X15
	VPBROADCASTD X15, Y15
	BINLOOPS(OPF32)

// OPBF16 is one 8-element step of binBF16AVX2: a and b widened to fp32
// (their bits in the high half), the fp32 operation, rounded to bf16
// ties to even (add 0x7FFF and the lowest kept bit, keep the high half),
// NaN lanes replaced by the default NaN (Y14), packed to 16 bits.
#define OPBF16(INSN) \
	VPMOVZXWD   (SI)(AX*2), Y0 \
	VPSLLD      $16, Y0, Y0 \
	VPMOVZXWD   (DX)(AX*2), Y1 \
	VPSLLD      $16, Y1, Y1 \
	INSN        Y1, Y0, Y0 \
	VCMPPS      $3, Y0, Y0, Y2 \
	VPSRLD      $16, Y0, Y3 \
	VPAND       Y13, Y3, Y3 \
	VPADDD      Y12, Y3, Y3 \
	VPADDD      Y0, Y3, Y3 \
	VPSRLD      $16, Y3, Y3 \
	VBLENDVPS   Y2, Y14, Y3, Y3 \
	VEXTRACTI128 $1, Y3, X4 \
	VPACKUSDW   X4, X3, X3 \
	VMOVDQU     X3, (DI)(AX*2) \
	ADDQ        $8, AX

// func binBF16AVX2(op binOp, z, a, b *uint16, n int)
TEXT ·binBF16AVX2(SB), NOSPLIT, $0-40
	BINARGS
	MOVL         $0xFFC0, R9
	VMOVQ        R9, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x7FFF, R9
	VMOVQ        R9, X12
	VPBROADCASTD X12, Y12
	MOVL         $1, R9
	VMOVQ        R9, X13
	VPBROADCASTD X13, Y13
	BINLOOPS(OPBF16)
