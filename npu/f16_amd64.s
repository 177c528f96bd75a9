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
