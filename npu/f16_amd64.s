//go:build amd64 && !purego

#include "textflag.h"

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
	MOVBQZX op+0(FP), R8
	MOVQ    z+8(FP), DI
	MOVQ    a+16(FP), SI
	MOVQ    b+24(FP), DX
	MOVQ    n+32(FP), CX
	XORQ    AX, AX
	MOVL    $0xFFC00000, R9
	MOVQ    R9, X15
	VPBROADCASTD X15, Y15
	CMPQ    R8, $1
	JEQ     sub
	JGT     mul

add:
	CMPQ AX, CX
	JGE  done
	OPF16(VADDPS)
	JMP  add

sub:
	CMPQ AX, CX
	JGE  done
	OPF16(VSUBPS)
	JMP  sub

mul:
	CMPQ AX, CX
	JGE  done
	OPF16(VMULPS)
	JMP  mul

done:
	VZEROUPPER
	RET

// func fixBits16AVX2(z *uint16, n int, exp, frac, maxFinite uint16, sat, flush bool)
// fixBits on sixteen patterns at a time (n a positive multiple of 16):
// the lanes to change are found by comparisons and blended, no branch.
TEXT ·fixBits16AVX2(SB), NOSPLIT, $0-24
	MOVQ         z+0(FP), DI
	MOVQ         n+8(FP), CX
	MOVWLZX      exp+16(FP), AX
	MOVQ         AX, X0
	VPBROADCASTW X0, Y10          // exp
	MOVWLZX      frac+18(FP), AX
	MOVQ         AX, X0
	VPBROADCASTW X0, Y11          // frac
	MOVWLZX      maxFinite+20(FP), AX
	MOVQ         AX, X0
	VPBROADCASTW X0, Y8           // maxFinite
	MOVBLZX      sat+22(FP), AX
	NEGL         AX
	MOVQ         AX, X0
	VPBROADCASTW X0, Y13          // all ones under saturation
	MOVBLZX      flush+23(FP), AX
	NEGL         AX
	MOVQ         AX, X0
	VPBROADCASTW X0, Y14          // all ones under flush
	VPXOR        Y9, Y9, Y9       // zero
	VPCMPEQW     Y15, Y15, Y15
	VPOR         Y11, Y10, Y12
	VPXOR        Y15, Y12, Y12    // sign = ^(exp | frac)
	XORQ         AX, AX

fixloop:
	CMPQ      AX, CX
	JGE       fixdone
	VMOVDQU   (DI)(AX*2), Y0      // v
	VPAND     Y10, Y0, Y1         // e = v & exp
	VPCMPEQW  Y10, Y1, Y2         // e = exp
	VPAND     Y11, Y0, Y3
	VPCMPEQW  Y9, Y3, Y3          // v & frac = 0
	VPCMPEQW  Y9, Y1, Y4          // e = 0
	VPANDN    Y4, Y3, Y4          // subnormal
	VPANDN    Y2, Y3, Y5          // NaN
	VPAND     Y3, Y2, Y6          // ±Inf
	VPAND     Y14, Y4, Y4
	VPAND     Y13, Y5, Y5
	VPAND     Y13, Y6, Y6
	VPAND     Y12, Y0, Y7         // v & sign
	VPOR      Y8, Y7, Y1          // ±max
	VPBLENDVB Y6, Y1, Y0, Y0      // ±Inf → ±max
	VPBLENDVB Y4, Y7, Y0, Y0      // subnormal → signed zero
	VPANDN    Y0, Y5, Y0          // NaN → +0
	VMOVDQU   Y0, (DI)(AX*2)
	ADDQ      $16, AX
	JMP       fixloop

fixdone:
	VZEROUPPER
	RET

// func fixBits32AVX2(z *uint32, n int, exp, frac, maxFinite uint32, sat, flush bool)
// fixBits16AVX2 on 32-bit patterns, eight at a time (n a positive
// multiple of 8).
TEXT ·fixBits32AVX2(SB), NOSPLIT, $0-30
	MOVQ         z+0(FP), DI
	MOVQ         n+8(FP), CX
	MOVL         exp+16(FP), AX
	MOVQ         AX, X0
	VPBROADCASTD X0, Y10          // exp
	MOVL         frac+20(FP), AX
	MOVQ         AX, X0
	VPBROADCASTD X0, Y11          // frac
	MOVL         maxFinite+24(FP), AX
	MOVQ         AX, X0
	VPBROADCASTD X0, Y8           // maxFinite
	MOVBLZX      sat+28(FP), AX
	NEGL         AX
	MOVQ         AX, X0
	VPBROADCASTD X0, Y13          // all ones under saturation
	MOVBLZX      flush+29(FP), AX
	NEGL         AX
	MOVQ         AX, X0
	VPBROADCASTD X0, Y14          // all ones under flush
	VPXOR        Y9, Y9, Y9       // zero
	VPCMPEQD     Y15, Y15, Y15
	VPOR         Y11, Y10, Y12
	VPXOR        Y15, Y12, Y12    // sign = ^(exp | frac)
	XORQ         AX, AX

fix32loop:
	CMPQ      AX, CX
	JGE       fix32done
	VMOVDQU   (DI)(AX*4), Y0      // v
	VPAND     Y10, Y0, Y1         // e = v & exp
	VPCMPEQD  Y10, Y1, Y2         // e = exp
	VPAND     Y11, Y0, Y3
	VPCMPEQD  Y9, Y3, Y3          // v & frac = 0
	VPCMPEQD  Y9, Y1, Y4          // e = 0
	VPANDN    Y4, Y3, Y4          // subnormal
	VPANDN    Y2, Y3, Y5          // NaN
	VPAND     Y3, Y2, Y6          // ±Inf
	VPAND     Y14, Y4, Y4
	VPAND     Y13, Y5, Y5
	VPAND     Y13, Y6, Y6
	VPAND     Y12, Y0, Y7         // v & sign
	VPOR      Y8, Y7, Y1          // ±max
	VPBLENDVB Y6, Y1, Y0, Y0      // ±Inf → ±max
	VPBLENDVB Y4, Y7, Y0, Y0      // subnormal → signed zero
	VPANDN    Y0, Y5, Y0          // NaN → +0
	VMOVDQU   Y0, (DI)(AX*4)
	ADDQ      $8, AX
	JMP       fix32loop

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
	MOVBQZX      op+0(FP), R8
	MOVQ         z+8(FP), DI
	MOVQ         a+16(FP), SI
	MOVQ         b+24(FP), DX
	MOVQ         n+32(FP), CX
	XORQ         AX, AX
	MOVL         $0xFFC00000, R9
	MOVQ         R9, X15
	VPBROADCASTD X15, Y15
	CMPQ         R8, $1
	JEQ          f32sub
	JGT          f32mul

f32add:
	CMPQ AX, CX
	JGE  f32done
	OPF32(VADDPS)
	JMP  f32add

f32sub:
	CMPQ AX, CX
	JGE  f32done
	OPF32(VSUBPS)
	JMP  f32sub

f32mul:
	CMPQ AX, CX
	JGE  f32done
	OPF32(VMULPS)
	JMP  f32mul

f32done:
	VZEROUPPER
	RET

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
	MOVBQZX      op+0(FP), R8
	MOVQ         z+8(FP), DI
	MOVQ         a+16(FP), SI
	MOVQ         b+24(FP), DX
	MOVQ         n+32(FP), CX
	XORQ         AX, AX
	MOVL         $0xFFC0, R9
	MOVQ         R9, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x7FFF, R9
	MOVQ         R9, X12
	VPBROADCASTD X12, Y12
	MOVL         $1, R9
	MOVQ         R9, X13
	VPBROADCASTD X13, Y13
	CMPQ         R8, $1
	JEQ          bfsub
	JGT          bfmul

bfadd:
	CMPQ AX, CX
	JGE  bfdone
	OPBF16(VADDPS)
	JMP  bfadd

bfsub:
	CMPQ AX, CX
	JGE  bfdone
	OPBF16(VSUBPS)
	JMP  bfsub

bfmul:
	CMPQ AX, CX
	JGE  bfdone
	OPBF16(VMULPS)
	JMP  bfmul

bfdone:
	VZEROUPPER
	RET
