//go:build amd64 && !purego

#include "textflag.h"

// MULARGS loads the arguments of the Mul kernels (mulAVX2, mulAVX512):
// CX = kcc, SI = the packed A panel, DI = the packed B panel, R8 = d's
// row 0, R10 = ldc in bytes, R11 and R12 = d's rows 2 and 4, AX = load.
// It stands before every TEXT, where vet reads no function's frame
// offsets into it.
#define MULARGS \
	MOVQ    kcc+0(FP), CX     \
	MOVQ    a+8(FP), SI       \
	MOVQ    b+16(FP), DI      \
	MOVQ    d+24(FP), R8      \
	MOVQ    ldc+32(FP), R10   \
	SHLQ    $3, R10           \
	LEAQ    (R8)(R10*2), R11  \
	LEAQ    (R11)(R10*2), R12 \
	MOVBQZX load+40(FP), AX

// One step of k for row r of the 3×8 tile: broadcast a[r] into Y14, add
// a[r]·b into the row's d accumulators, then |a[r]|·|b| into its s ones.
// Y12, Y13 hold b (8 values); |b| is read from the packed panel at 64(DI);
// Y15 is the magnitude mask. The products are exact (MulAbs's
// precondition), so each FMA rounds like the loop's multiply-then-add.
#define ROW(aoff, d0, d1, s0, s1) \
	VBROADCASTSD aoff(SI), Y14 \
	VFMADD231PD  Y12, Y14, d0  \
	VFMADD231PD  Y13, Y14, d1  \
	VANDPD       Y15, Y14, Y14 \
	VFMADD231PD  64(DI), Y14, s0 \
	VFMADD231PD  96(DI), Y14, s1

#define STEP \
	VMOVUPD (DI), Y12 \
	VMOVUPD 32(DI), Y13 \
	ROW(0, Y0, Y1, Y6, Y7) \
	ROW(8, Y2, Y3, Y8, Y9) \
	ROW(16, Y4, Y5, Y10, Y11) \
	ADDQ $24, SI \
	ADDQ $128, DI

// func mulAbsAVX2(kcc int, a, b, d, s *float64, ldc int, load bool)
TEXT ·mulAbsAVX2(SB), NOSPLIT, $0-49
	MOVQ kcc+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ d+24(FP), R8
	MOVQ s+32(FP), R9
	MOVQ ldc+40(FP), R10
	SHLQ $3, R10
	LEAQ (R8)(R10*2), R11
	LEAQ (R9)(R10*2), R12
	MOVQ $0x7fffffffffffffff, AX
	VMOVQ AX, X15
	VPBROADCASTQ X15, Y15
	MOVBQZX load+48(FP), AX
	TESTQ AX, AX
	JZ   zero
	VMOVUPD (R8), Y0
	VMOVUPD 32(R8), Y1
	VMOVUPD (R8)(R10*1), Y2
	VMOVUPD 32(R8)(R10*1), Y3
	VMOVUPD (R11), Y4
	VMOVUPD 32(R11), Y5
	VMOVUPD (R9), Y6
	VMOVUPD 32(R9), Y7
	VMOVUPD (R9)(R10*1), Y8
	VMOVUPD 32(R9)(R10*1), Y9
	VMOVUPD (R12), Y10
	VMOVUPD 32(R12), Y11
	JMP  body

zero:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11

body:
	// Two steps per iteration while at least two remain, then the odd one.
	MOVQ CX, DX
	SHRQ $1, DX
	JZ   tail

loop2:
	STEP
	STEP
	DECQ DX
	JNZ  loop2

tail:
	ANDQ $1, CX
	JZ   done
	STEP

done:
	VMOVUPD Y0, (R8)
	VMOVUPD Y1, 32(R8)
	VMOVUPD Y2, (R8)(R10*1)
	VMOVUPD Y3, 32(R8)(R10*1)
	VMOVUPD Y4, (R11)
	VMOVUPD Y5, 32(R11)
	VMOVUPD Y6, (R9)
	VMOVUPD Y7, 32(R9)
	VMOVUPD Y8, (R9)(R10*1)
	VMOVUPD Y9, 32(R9)(R10*1)
	VMOVUPD Y10, (R12)
	VMOVUPD Y11, 32(R12)
	VZEROUPPER
	RET

// One step of k for row r of Mul's 6×8 tile: broadcast a[r] into Y14
// and add a[r]·b (Y12, Y13) into the row's accumulators. Exact products
// (Mul's precondition): each FMA rounds like the loop's add.
#define MROW(aoff, d0, d1) \
	VBROADCASTSD aoff(SI), Y14 \
	VFMADD231PD  Y12, Y14, d0  \
	VFMADD231PD  Y13, Y14, d1

#define MROWS \
	MROW(0, Y0, Y1) \
	MROW(8, Y2, Y3) \
	MROW(16, Y4, Y5) \
	MROW(24, Y6, Y7) \
	MROW(32, Y8, Y9) \
	MROW(40, Y10, Y11) \
	ADDQ $48, SI

// One step of k of the 6×8 tile on float64 panels (mulAVX2): b's eight
// values from 64 bytes.
#define MSTEP \
	VMOVUPD (DI), Y12 \
	VMOVUPD 32(DI), Y13 \
	MROWS \
	ADDQ $64, DI

// One step of k of the 6×8 tile on fp16 panels (mulAVX2H): b's eight
// values from 16 bytes, widened exactly to fp32 (F16C) and then to
// float64, so that the FMAs see the values MSTEP loads.
#define MSTEPH \
	VCVTPH2PS    (DI), Y15 \
	VCVTPS2PD    X15, Y12 \
	VEXTRACTF128 $1, Y15, X15 \
	VCVTPS2PD    X15, Y13 \
	MROWS \
	ADDQ $16, DI

// The 6×8 tile's accumulators: rows 0–5 of d at R8, R8+R10, R11,
// R11+R10, R12, R12+R10, in Y0–Y11.
#define MLOAD \
	VMOVUPD (R8), Y0 \
	VMOVUPD 32(R8), Y1 \
	VMOVUPD (R8)(R10*1), Y2 \
	VMOVUPD 32(R8)(R10*1), Y3 \
	VMOVUPD (R11), Y4 \
	VMOVUPD 32(R11), Y5 \
	VMOVUPD (R11)(R10*1), Y6 \
	VMOVUPD 32(R11)(R10*1), Y7 \
	VMOVUPD (R12), Y8 \
	VMOVUPD 32(R12), Y9 \
	VMOVUPD (R12)(R10*1), Y10 \
	VMOVUPD 32(R12)(R10*1), Y11

#define MZERO \
	VXORPD Y0, Y0, Y0 \
	VXORPD Y1, Y1, Y1 \
	VXORPD Y2, Y2, Y2 \
	VXORPD Y3, Y3, Y3 \
	VXORPD Y4, Y4, Y4 \
	VXORPD Y5, Y5, Y5 \
	VXORPD Y6, Y6, Y6 \
	VXORPD Y7, Y7, Y7 \
	VXORPD Y8, Y8, Y8 \
	VXORPD Y9, Y9, Y9 \
	VXORPD Y10, Y10, Y10 \
	VXORPD Y11, Y11, Y11

#define MSTORE \
	VMOVUPD Y0, (R8) \
	VMOVUPD Y1, 32(R8) \
	VMOVUPD Y2, (R8)(R10*1) \
	VMOVUPD Y3, 32(R8)(R10*1) \
	VMOVUPD Y4, (R11) \
	VMOVUPD Y5, 32(R11) \
	VMOVUPD Y6, (R11)(R10*1) \
	VMOVUPD Y7, 32(R11)(R10*1) \
	VMOVUPD Y8, (R12) \
	VMOVUPD Y9, 32(R12) \
	VMOVUPD Y10, (R12)(R10*1) \
	VMOVUPD Y11, 32(R12)(R10*1)

// TILE is the body of a Mul kernel after its arguments: the accumulators
// loaded (load) or zeroed, kcc steps of STEP two at a time, the
// accumulators stored. Labels are the function's own, so each kernel
// expands it once.
#define TILE(LOAD, ZERO, STEP, STORE) \
	TESTQ AX, AX \
	JZ    zero \
	LOAD \
	JMP   body \
zero: \
	ZERO \
body: \
	MOVQ CX, DX \
	SHRQ $1, DX \
	JZ   tail \
loop2: \
	STEP \
	STEP \
	DECQ DX \
	JNZ  loop2 \
tail: \
	ANDQ $1, CX \
	JZ   done \
	STEP \
done: \
	STORE \
	VZEROUPPER \
	RET

// func mulAVX2(kcc int, a, b, d *float64, ldc int, load bool)
TEXT ·mulAVX2(SB), NOSPLIT, $0-41
	MULARGS
	TILE(MLOAD, MZERO, MSTEP, MSTORE)

// func mulAVX2H(kcc int, a, b, d *float64, ldc int, load bool)
// mulAVX2 on fp16 panels (b points at their bit patterns).
TEXT ·mulAVX2H(SB), NOSPLIT, $0-41
	MULARGS
	TILE(MLOAD, MZERO, MSTEPH, MSTORE)

// One step of k for Mul's 8×8 AVX-512 tile, b's eight values in Z16: for
// each row r, a[r] broadcast from memory into a multiply-add into the
// row's accumulator Zr. Exact products (Mul's precondition): each FMA
// rounds like the loop's add.
#define ZROWS \
	VFMADD231PD.BCST 0(SI), Z16, Z0 \
	VFMADD231PD.BCST 8(SI), Z16, Z1 \
	VFMADD231PD.BCST 16(SI), Z16, Z2 \
	VFMADD231PD.BCST 24(SI), Z16, Z3 \
	VFMADD231PD.BCST 32(SI), Z16, Z4 \
	VFMADD231PD.BCST 40(SI), Z16, Z5 \
	VFMADD231PD.BCST 48(SI), Z16, Z6 \
	VFMADD231PD.BCST 56(SI), Z16, Z7 \
	ADDQ             $64, SI

// One step on float64 panels (mulAVX512): b from 64 bytes.
#define ZSTEP \
	VMOVUPD (DI), Z16 \
	ZROWS \
	ADDQ    $64, DI

// One step on fp16 panels (mulAVX512H): b from 16 bytes, widened exactly
// to fp32 (F16C) and then to float64.
#define ZSTEPH \
	VCVTPH2PS (DI), Y8 \
	VCVTPS2PD Y8, Z16 \
	ZROWS \
	ADDQ      $16, DI

// The 8×8 tile's accumulators: row r of d in Zr, at R8 + r·R10 (rows 6
// and 7 from R13).
#define ZLOAD \
	VMOVUPD (R8), Z0 \
	VMOVUPD (R8)(R10*1), Z1 \
	VMOVUPD (R11), Z2 \
	VMOVUPD (R11)(R10*1), Z3 \
	VMOVUPD (R12), Z4 \
	VMOVUPD (R12)(R10*1), Z5 \
	VMOVUPD (R13), Z6 \
	VMOVUPD (R13)(R10*1), Z7

#define ZZERO \
	VPXORQ Z0, Z0, Z0 \
	VPXORQ Z1, Z1, Z1 \
	VPXORQ Z2, Z2, Z2 \
	VPXORQ Z3, Z3, Z3 \
	VPXORQ Z4, Z4, Z4 \
	VPXORQ Z5, Z5, Z5 \
	VPXORQ Z6, Z6, Z6 \
	VPXORQ Z7, Z7, Z7

#define ZSTORE \
	VMOVUPD Z0, (R8) \
	VMOVUPD Z1, (R8)(R10*1) \
	VMOVUPD Z2, (R11) \
	VMOVUPD Z3, (R11)(R10*1) \
	VMOVUPD Z4, (R12) \
	VMOVUPD Z5, (R12)(R10*1) \
	VMOVUPD Z6, (R13) \
	VMOVUPD Z7, (R13)(R10*1)

// func mulAVX512(kcc int, a, b, d *float64, ldc int, load bool)
TEXT ·mulAVX512(SB), NOSPLIT, $0-41
	MULARGS
	LEAQ (R12)(R10*2), R13
	TILE(ZLOAD, ZZERO, ZSTEP, ZSTORE)

// func mulAVX512H(kcc int, a, b, d *float64, ldc int, load bool)
// mulAVX512 on fp16 panels (b points at their bit patterns).
TEXT ·mulAVX512H(SB), NOSPLIT, $0-41
	MULARGS
	LEAQ (R12)(R10*2), R13
	TILE(ZLOAD, ZZERO, ZSTEPH, ZSTORE)

// func ellRowAVX2(kh int, v *float64, c *int, panel, d, s *float64)
// For t < kh: x = v[t], row = panel + 16·c[t] (in values); d[0:16] += x·row,
// s[0:16] += |x|·|row|, from +0. Y0–Y3 and Y4–Y7 are d's and s's
// accumulators, Y8 and Y9 x and |x|, Y10–Y13 the row, Y15 the magnitude
// mask.
TEXT ·ellRowAVX2(SB), NOSPLIT, $0-48
	MOVQ kh+0(FP), CX
	MOVQ v+8(FP), SI
	MOVQ c+16(FP), DX
	MOVQ panel+24(FP), BX
	MOVQ d+32(FP), DI
	MOVQ s+40(FP), R8
	MOVQ $0x7fffffffffffffff, AX
	VMOVQ AX, X15
	VPBROADCASTQ X15, Y15
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	XORQ AX, AX

ellloop:
	CMPQ AX, CX
	JGE  elldone
	MOVQ (DX)(AX*8), R10
	SHLQ $7, R10 // 16 values of 8 bytes a row of the panel
	ADDQ BX, R10
	VBROADCASTSD (SI)(AX*8), Y8
	VANDPD       Y15, Y8, Y9
	VMOVUPD      (R10), Y10
	VMOVUPD      32(R10), Y11
	VMOVUPD      64(R10), Y12
	VMOVUPD      96(R10), Y13
	VFMADD231PD  Y10, Y8, Y0
	VFMADD231PD  Y11, Y8, Y1
	VFMADD231PD  Y12, Y8, Y2
	VFMADD231PD  Y13, Y8, Y3
	VANDPD       Y15, Y10, Y10
	VANDPD       Y15, Y11, Y11
	VANDPD       Y15, Y12, Y12
	VANDPD       Y15, Y13, Y13
	VFMADD231PD  Y10, Y9, Y4
	VFMADD231PD  Y11, Y9, Y5
	VFMADD231PD  Y12, Y9, Y6
	VFMADD231PD  Y13, Y9, Y7
	INCQ AX
	JMP  ellloop

elldone:
	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	VMOVUPD Y4, (R8)
	VMOVUPD Y5, 32(R8)
	VMOVUPD Y6, 64(R8)
	VMOVUPD Y7, 96(R8)
	VZEROUPPER
	RET

// The 8×16 tile of MulAbsH32 (mulAbsH32AVX512): row r of d in Z(2r) and
// Z(2r+1) (columns 0–7 and 8–15, float64), of s in Z(16+r) (sixteen fp32
// sums); per step b's sixteen fp16 values widened to fp32 (Z24), their
// magnitudes (Z25) and their float64 values (Z26, Z27); a[r] and |a[r]|
// broadcast from the packed rows at SI (float64) and BX (fp32). Every
// product is exact in its format, so each FMA rounds as the loop's
// product and then its sum do.
#define H32ROW(ao, so, d0, d1, s0) \
	VFMADD231PD.BCST ao(SI), Z26, d0 \
	VFMADD231PD.BCST ao(SI), Z27, d1 \
	VFMADD231PS.BCST so(BX), Z25, s0

#define H32STEP \
	H32ROW(0, 0, Z0, Z1, Z16) \
	H32ROW(8, 4, Z2, Z3, Z17) \
	H32ROW(16, 8, Z4, Z5, Z18) \
	H32ROW(24, 12, Z6, Z7, Z19) \
	H32ROW(32, 16, Z8, Z9, Z20) \
	H32ROW(40, 20, Z10, Z11, Z21) \
	H32ROW(48, 24, Z12, Z13, Z22) \
	H32ROW(56, 28, Z14, Z15, Z23)

// A row's sums from d and s (R12 and R13, moved on to the next row, R10
// bytes on); s holds fp32 values as float64, whose narrowing is exact.
#define H32LOADROW(d0, d1, s0) \
	VMOVUPD      (R12), d0 \
	VMOVUPD      64(R12), d1 \
	VMOVUPD      (R13), Z28 \
	VCVTPD2PS    Z28, Y28 \
	VMOVUPD      64(R13), Z29 \
	VCVTPD2PS    Z29, Y29 \
	VINSERTF64X4 $1, Y29, Z28, s0 \
	ADDQ         R10, R12 \
	ADDQ         R10, R13

// A row's sums into d and s, s widened to float64 (exact); sy is s0's
// lower half.
#define H32STOREROW(d0, d1, s0, sy) \
	VMOVUPD       d0, (R12) \
	VMOVUPD       d1, 64(R12) \
	VEXTRACTF64X4 $1, s0, Y29 \
	VCVTPS2PD     sy, Z28 \
	VMOVUPD       Z28, (R13) \
	VCVTPS2PD     Y29, Z29 \
	VMOVUPD       Z29, 64(R13) \
	ADDQ          R10, R12 \
	ADDQ          R10, R13

#define H32LOAD \
	H32LOADROW(Z0, Z1, Z16) \
	H32LOADROW(Z2, Z3, Z17) \
	H32LOADROW(Z4, Z5, Z18) \
	H32LOADROW(Z6, Z7, Z19) \
	H32LOADROW(Z8, Z9, Z20) \
	H32LOADROW(Z10, Z11, Z21) \
	H32LOADROW(Z12, Z13, Z22) \
	H32LOADROW(Z14, Z15, Z23)

#define H32ZERO \
	VPXORQ Z0, Z0, Z0 \
	VPXORQ Z1, Z1, Z1 \
	VPXORQ Z16, Z16, Z16 \
	VPXORQ Z2, Z2, Z2 \
	VPXORQ Z3, Z3, Z3 \
	VPXORQ Z17, Z17, Z17 \
	VPXORQ Z4, Z4, Z4 \
	VPXORQ Z5, Z5, Z5 \
	VPXORQ Z18, Z18, Z18 \
	VPXORQ Z6, Z6, Z6 \
	VPXORQ Z7, Z7, Z7 \
	VPXORQ Z19, Z19, Z19 \
	VPXORQ Z8, Z8, Z8 \
	VPXORQ Z9, Z9, Z9 \
	VPXORQ Z20, Z20, Z20 \
	VPXORQ Z10, Z10, Z10 \
	VPXORQ Z11, Z11, Z11 \
	VPXORQ Z21, Z21, Z21 \
	VPXORQ Z12, Z12, Z12 \
	VPXORQ Z13, Z13, Z13 \
	VPXORQ Z22, Z22, Z22 \
	VPXORQ Z14, Z14, Z14 \
	VPXORQ Z15, Z15, Z15 \
	VPXORQ Z23, Z23, Z23

#define H32STORE \
	H32STOREROW(Z0, Z1, Z16, Y16) \
	H32STOREROW(Z2, Z3, Z17, Y17) \
	H32STOREROW(Z4, Z5, Z18, Y18) \
	H32STOREROW(Z6, Z7, Z19, Y19) \
	H32STOREROW(Z8, Z9, Z20, Y20) \
	H32STOREROW(Z10, Z11, Z21, Y21) \
	H32STOREROW(Z12, Z13, Z22, Y22) \
	H32STOREROW(Z14, Z15, Z23, Y23)

// func mulAbsH32AVX512(kcc int, a *float64, aa *float32, b *uint16, ldb int, d, s *float64, ldc int, load bool)
// CX counts the steps; SI, BX and DI walk a, aa and b (R9 = ldb in
// bytes); R8 and R11 are d's and s's first rows (R10 = ldc in bytes);
// Z31 is the fp32 magnitude mask.
TEXT ·mulAbsH32AVX512(SB), NOSPLIT, $0-65
	MOVQ         kcc+0(FP), CX
	MOVQ         a+8(FP), SI
	MOVQ         aa+16(FP), BX
	MOVQ         b+24(FP), DI
	MOVQ         ldb+32(FP), R9
	SHLQ         $1, R9
	MOVQ         d+40(FP), R8
	MOVQ         s+48(FP), R11
	MOVQ         ldc+56(FP), R10
	SHLQ         $3, R10
	MOVBQZX      load+64(FP), AX
	MOVL         $0x7fffffff, DX
	VPBROADCASTD DX, Z31
	MOVQ         R8, R12
	MOVQ         R11, R13
	TESTQ        AX, AX
	JZ           h32zero
	H32LOAD
	JMP          h32loop

h32zero:
	H32ZERO

h32loop:
	VCVTPH2PS     (DI), Z24
	VANDPS        Z31, Z24, Z25
	VCVTPS2PD     Y24, Z26
	VEXTRACTF64X4 $1, Z24, Y27
	VCVTPS2PD     Y27, Z27
	H32STEP
	ADDQ          $64, SI
	ADDQ          $32, BX
	ADDQ          R9, DI
	DECQ          CX
	JNZ           h32loop
	MOVQ          R8, R12
	MOVQ          R11, R13
	H32STORE
	VZEROUPPER
	RET

// Twelve independent zmm multiply-adds a step, n steps: the core's
// multiply-add throughput and nothing else (BenchmarkFMAPeak). Z12 and
// Z13 are zero, so no value is ever subnormal.
#define PEAK12(op) \
	op Z12, Z13, Z0 \
	op Z12, Z13, Z1 \
	op Z12, Z13, Z2 \
	op Z12, Z13, Z3 \
	op Z12, Z13, Z4 \
	op Z12, Z13, Z5 \
	op Z12, Z13, Z6 \
	op Z12, Z13, Z7 \
	op Z12, Z13, Z8 \
	op Z12, Z13, Z9 \
	op Z12, Z13, Z10 \
	op Z12, Z13, Z11

#define PEAKZERO \
	ZZERO \
	VPXORQ Z8, Z8, Z8 \
	VPXORQ Z9, Z9, Z9 \
	VPXORQ Z10, Z10, Z10 \
	VPXORQ Z11, Z11, Z11 \
	VPXORQ Z12, Z12, Z12 \
	VPXORQ Z13, Z13, Z13

// func fmaPeak(n int, f32 bool)
TEXT ·fmaPeak(SB), NOSPLIT, $0-9
	MOVQ    n+0(FP), CX
	MOVBQZX f32+8(FP), AX
	PEAKZERO
	TESTQ   AX, AX
	JNZ     peakf32

peakf64:
	PEAK12(VFMADD231PD)
	DECQ CX
	JNZ  peakf64
	JMP  peakdone

peakf32:
	PEAK12(VFMADD231PS)
	DECQ CX
	JNZ  peakf32

peakdone:
	VZEROUPPER
	RET
