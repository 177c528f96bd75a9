//go:build amd64 && !purego

#include "textflag.h"

// ZARGS loads the arguments of the AVX-512 fp32 kernels: CX = k, AX =
// A's row 0 and BX its row 3, DX = lda and R8 = ldc in bytes, SI = the
// packed panel, DI = C's row 0 and R9 its row 3. It stands before every
// TEXT, where vet reads no function's frame offsets into it.
#define ZARGS \
	MOVQ k+0(FP), CX       \
	MOVQ a+8(FP), AX       \
	MOVQ lda+16(FP), DX    \
	MOVQ b+24(FP), SI      \
	MOVQ c+32(FP), DI      \
	MOVQ ldc+40(FP), R8    \
	SHLQ $2, DX            \
	SHLQ $2, R8            \
	LEAQ (AX)(DX*2), BX    \
	ADDQ DX, BX            \
	LEAQ (DI)(R8*2), R9    \
	ADDQ R8, R9

DATA defaultNaN32<>+0(SB)/4, $0xFFC00000
GLOBL defaultNaN32<>(SB), RODATA|NOPTR, $4

// func kernel6x16AVX2(k int, a *float32, lda int, b *float32, c *float32, ldc int)
//
// C[6×16] (row stride ldc) += A[6×k] (row stride lda) · Bp[k×16] (packed,
// 16 floats per k), each element by one VFMADD231PS per k, k ascending;
// for k > 0 a NaN result is stored as the default NaN 0xFFC00000.
TEXT ·kernel6x16AVX2(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ lda+16(FP), DX
	MOVQ b+24(FP), SI
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), R8
	SHLQ $2, DX // lda in bytes
	SHLQ $2, R8 // ldc in bytes
	LEAQ (AX)(DX*2), BX
	ADDQ DX, BX // BX = row 3 of A

	// Load the C tile: rows DI, DI+ldc, ... (R9 = DI + 3·ldc).
	LEAQ (DI)(R8*2), R9
	ADDQ R8, R9
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS (DI)(R8*1), Y2
	VMOVUPS 32(DI)(R8*1), Y3
	VMOVUPS (DI)(R8*2), Y4
	VMOVUPS 32(DI)(R8*2), Y5
	VMOVUPS (R9), Y6
	VMOVUPS 32(R9), Y7
	VMOVUPS (R9)(R8*1), Y8
	VMOVUPS 32(R9)(R8*1), Y9
	VMOVUPS (R9)(R8*2), Y10
	VMOVUPS 32(R9)(R8*2), Y11

	TESTQ CX, CX
	JZ    store

loop:
	VMOVUPS      (SI), Y12
	VMOVUPS      32(SI), Y13
	VBROADCASTSS (AX), Y14
	VBROADCASTSS (AX)(DX*1), Y15
	VFMADD231PS  Y12, Y14, Y0
	VFMADD231PS  Y13, Y14, Y1
	VFMADD231PS  Y12, Y15, Y2
	VFMADD231PS  Y13, Y15, Y3
	VBROADCASTSS (AX)(DX*2), Y14
	VBROADCASTSS (BX), Y15
	VFMADD231PS  Y12, Y14, Y4
	VFMADD231PS  Y13, Y14, Y5
	VFMADD231PS  Y12, Y15, Y6
	VFMADD231PS  Y13, Y15, Y7
	VBROADCASTSS (BX)(DX*1), Y14
	VBROADCASTSS (BX)(DX*2), Y15
	VFMADD231PS  Y12, Y14, Y8
	VFMADD231PS  Y13, Y14, Y9
	VFMADD231PS  Y12, Y15, Y10
	VFMADD231PS  Y13, Y15, Y11
	ADDQ         $4, AX
	ADDQ         $4, BX
	ADDQ         $64, SI
	DECQ         CX
	JNZ          loop

	// A NaN accumulator becomes the default NaN 0xFFC00000 (the package's
	// convention; the hardware's NaN is the host's): per register, an
	// unordered self-compare picks the lanes, a blend writes the NaN.
	VBROADCASTSS defaultNaN32<>(SB), Y14
	VCMPPS       $3, Y0, Y0, Y15
	VBLENDVPS    Y15, Y14, Y0, Y0
	VCMPPS       $3, Y1, Y1, Y15
	VBLENDVPS    Y15, Y14, Y1, Y1
	VCMPPS       $3, Y2, Y2, Y15
	VBLENDVPS    Y15, Y14, Y2, Y2
	VCMPPS       $3, Y3, Y3, Y15
	VBLENDVPS    Y15, Y14, Y3, Y3
	VCMPPS       $3, Y4, Y4, Y15
	VBLENDVPS    Y15, Y14, Y4, Y4
	VCMPPS       $3, Y5, Y5, Y15
	VBLENDVPS    Y15, Y14, Y5, Y5
	VCMPPS       $3, Y6, Y6, Y15
	VBLENDVPS    Y15, Y14, Y6, Y6
	VCMPPS       $3, Y7, Y7, Y15
	VBLENDVPS    Y15, Y14, Y7, Y7
	VCMPPS       $3, Y8, Y8, Y15
	VBLENDVPS    Y15, Y14, Y8, Y8
	VCMPPS       $3, Y9, Y9, Y15
	VBLENDVPS    Y15, Y14, Y9, Y9
	VCMPPS       $3, Y10, Y10, Y15
	VBLENDVPS    Y15, Y14, Y10, Y10
	VCMPPS       $3, Y11, Y11, Y15
	VBLENDVPS    Y15, Y14, Y11, Y11

store:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, (DI)(R8*1)
	VMOVUPS Y3, 32(DI)(R8*1)
	VMOVUPS Y4, (DI)(R8*2)
	VMOVUPS Y5, 32(DI)(R8*2)
	VMOVUPS Y6, (R9)
	VMOVUPS Y7, 32(R9)
	VMOVUPS Y8, (R9)(R8*1)
	VMOVUPS Y9, 32(R9)(R8*1)
	VMOVUPS Y10, (R9)(R8*2)
	VMOVUPS Y11, 32(R9)(R8*2)
	VZEROUPPER
	RET

// func fma32AVX2(a, b, c float32) float32
//
// One VFMADD231SS: RN32(a·b + c), for the NaN-order test.
TEXT ·fma32AVX2(SB), NOSPLIT, $0-20
	VMOVSS a+0(FP), X1
	VMOVSS b+4(FP), X2
	VMOVSS c+8(FP), X0
	VFMADD231SS X2, X1, X0
	VMOVSS X0, ret+16(FP)
	RET

// func packFullAVX2(k, panels int, b unsafe.Pointer, ldb int, bp unsafe.Pointer)
//
// The full column panels of packB: for kk < k and p < panels,
// bp[(p·k + kk)·16 : +16] = b[kk·ldb + p·16 : +16].
TEXT ·packFullAVX2(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ panels+8(FP), R8
	MOVQ b+16(FP), SI
	MOVQ ldb+24(FP), DX
	MOVQ bp+32(FP), DI
	SHLQ $2, DX      // ldb in bytes
	MOVQ CX, R9
	SHLQ $6, R9      // one panel: k·64 bytes
	TESTQ CX, CX
	JZ    done
	TESTQ R8, R8
	JZ    done

row:
	MOVQ SI, AX // B[kk, 0]
	MOVQ DI, BX // bp of panel 0 at kk
	MOVQ R8, R10

panel:
	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVUPS Y0, (BX)
	VMOVUPS Y1, 32(BX)
	ADDQ    $64, AX
	ADDQ    R9, BX
	DECQ    R10
	JNZ     panel

	ADDQ DX, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  row

done:
	VZEROUPPER
	RET

// func kernel6x16IntAVX2(k int, a *int32, lda int, b *int32, c *int32, ldc int)
//
// kernel6x16AVX2 in int32: C += A·Bp with VPMULLD and VPADDD (wrap-around).
TEXT ·kernel6x16IntAVX2(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), AX
	MOVQ lda+16(FP), DX
	MOVQ b+24(FP), SI
	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), R8
	SHLQ $2, DX
	SHLQ $2, R8
	LEAQ (AX)(DX*2), BX
	ADDQ DX, BX
	LEAQ (DI)(R8*2), R9
	ADDQ R8, R9
	VMOVDQU (DI), Y0
	VMOVDQU 32(DI), Y1
	VMOVDQU (DI)(R8*1), Y2
	VMOVDQU 32(DI)(R8*1), Y3
	VMOVDQU (DI)(R8*2), Y4
	VMOVDQU 32(DI)(R8*2), Y5
	VMOVDQU (R9), Y6
	VMOVDQU 32(R9), Y7
	VMOVDQU (R9)(R8*1), Y8
	VMOVDQU 32(R9)(R8*1), Y9
	VMOVDQU (R9)(R8*2), Y10
	VMOVDQU 32(R9)(R8*2), Y11

	TESTQ CX, CX
	JZ    istore

iloop:
	VMOVDQU      (SI), Y12
	VMOVDQU      32(SI), Y13
	VPBROADCASTD (AX), Y14
	VPMULLD      Y12, Y14, Y15
	VPADDD       Y15, Y0, Y0
	VPMULLD      Y13, Y14, Y15
	VPADDD       Y15, Y1, Y1
	VPBROADCASTD (AX)(DX*1), Y14
	VPMULLD      Y12, Y14, Y15
	VPADDD       Y15, Y2, Y2
	VPMULLD      Y13, Y14, Y15
	VPADDD       Y15, Y3, Y3
	VPBROADCASTD (AX)(DX*2), Y14
	VPMULLD      Y12, Y14, Y15
	VPADDD       Y15, Y4, Y4
	VPMULLD      Y13, Y14, Y15
	VPADDD       Y15, Y5, Y5
	VPBROADCASTD (BX), Y14
	VPMULLD      Y12, Y14, Y15
	VPADDD       Y15, Y6, Y6
	VPMULLD      Y13, Y14, Y15
	VPADDD       Y15, Y7, Y7
	VPBROADCASTD (BX)(DX*1), Y14
	VPMULLD      Y12, Y14, Y15
	VPADDD       Y15, Y8, Y8
	VPMULLD      Y13, Y14, Y15
	VPADDD       Y15, Y9, Y9
	VPBROADCASTD (BX)(DX*2), Y14
	VPMULLD      Y12, Y14, Y15
	VPADDD       Y15, Y10, Y10
	VPMULLD      Y13, Y14, Y15
	VPADDD       Y15, Y11, Y11
	ADDQ         $4, AX
	ADDQ         $4, BX
	ADDQ         $64, SI
	DECQ         CX
	JNZ          iloop

istore:
	VMOVDQU Y0, (DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, (DI)(R8*1)
	VMOVDQU Y3, 32(DI)(R8*1)
	VMOVDQU Y4, (DI)(R8*2)
	VMOVDQU Y5, 32(DI)(R8*2)
	VMOVDQU Y6, (R9)
	VMOVDQU Y7, 32(R9)
	VMOVDQU Y8, (R9)(R8*1)
	VMOVDQU Y9, 32(R9)(R8*1)
	VMOVDQU Y10, (R9)(R8*2)
	VMOVDQU Y11, 32(R9)(R8*2)
	VZEROUPPER
	RET

// The AVX-512 fp32 kernels' pieces, on three rows of a tile at a time:
// rows base, base+ldc, base+2·ldc of C (R8 = ldc in bytes) in three zmm
// registers; the rows arow, arow+lda, arow+2·lda of A (DX = lda in bytes)
// broadcast, one element a step, into multiply-adds with the sixteen b
// values in Z16; a NaN sum made the default NaN (Z17) by an unordered
// self-compare into a mask and a masked move.
#define ZLOAD3(base, r0, r1, r2) \
	VMOVUPS (base), r0        \
	VMOVUPS (base)(R8*1), r1  \
	VMOVUPS (base)(R8*2), r2

#define ZSTORE3(base, r0, r1, r2) \
	VMOVUPS r0, (base)        \
	VMOVUPS r1, (base)(R8*1)  \
	VMOVUPS r2, (base)(R8*2)

#define ZFMA3(arow, r0, r1, r2) \
	VFMADD231PS.BCST (arow), Z16, r0       \
	VFMADD231PS.BCST (arow)(DX*1), Z16, r1 \
	VFMADD231PS.BCST (arow)(DX*2), Z16, r2

#define ZNAN3(r0, r1, r2) \
	VCMPPS  $3, r0, r0, K1 \
	VMOVUPS Z17, K1, r0    \
	VCMPPS  $3, r1, r1, K1 \
	VMOVUPS Z17, K1, r1    \
	VCMPPS  $3, r2, r2, K1 \
	VMOVUPS Z17, K1, r2

// func kernel6x16AVX512(k int, a *float32, lda int, b *float32, c *float32, ldc int)
//
// kernel6x16AVX2 (same arguments and bits) with AVX-512: one zmm register
// per row of the C tile and one VFMADD231PS with a broadcast a per row
// and k, k ascending; for k > 0 a NaN result is stored as the default
// NaN 0xFFC00000.
TEXT ·kernel6x16AVX512(SB), NOSPLIT, $0-48
	ZARGS
	ZLOAD3(DI, Z0, Z1, Z2)
	ZLOAD3(R9, Z3, Z4, Z5)
	TESTQ CX, CX
	JZ    zstore

zloop:
	VMOVUPS (SI), Z16
	ZFMA3(AX, Z0, Z1, Z2)
	ZFMA3(BX, Z3, Z4, Z5)
	ADDQ    $4, AX
	ADDQ    $4, BX
	ADDQ    $64, SI
	DECQ    CX
	JNZ     zloop

	VBROADCASTSS defaultNaN32<>(SB), Z17
	ZNAN3(Z0, Z1, Z2)
	ZNAN3(Z3, Z4, Z5)

zstore:
	ZSTORE3(DI, Z0, Z1, Z2)
	ZSTORE3(R9, Z3, Z4, Z5)
	VZEROUPPER
	RET

// func kernel12x16AVX512(k int, a *float32, lda int, b *float32, c *float32, ldc int)
//
// kernel6x16AVX512 on two tiles of six rows at once, rows 0–11 of A and C
// (same arguments and bits): twelve independent chains of multiply-adds,
// where six wait on the multiply-add's latency. R10 and R11 are A's rows
// 6 and 9, R12 and R13 C's.
TEXT ·kernel12x16AVX512(SB), NOSPLIT, $0-48
	ZARGS
	LEAQ (BX)(DX*2), R10
	ADDQ DX, R10
	LEAQ (R10)(DX*2), R11
	ADDQ DX, R11
	LEAQ (R9)(R8*2), R12
	ADDQ R8, R12
	LEAQ (R12)(R8*2), R13
	ADDQ R8, R13
	ZLOAD3(DI, Z0, Z1, Z2)
	ZLOAD3(R9, Z3, Z4, Z5)
	ZLOAD3(R12, Z6, Z7, Z8)
	ZLOAD3(R13, Z9, Z10, Z11)
	TESTQ CX, CX
	JZ    pstore

ploop:
	VMOVUPS (SI), Z16
	ZFMA3(AX, Z0, Z1, Z2)
	ZFMA3(BX, Z3, Z4, Z5)
	ZFMA3(R10, Z6, Z7, Z8)
	ZFMA3(R11, Z9, Z10, Z11)
	ADDQ    $4, AX
	ADDQ    $4, BX
	ADDQ    $4, R10
	ADDQ    $4, R11
	ADDQ    $64, SI
	DECQ    CX
	JNZ     ploop

	VBROADCASTSS defaultNaN32<>(SB), Z17
	ZNAN3(Z0, Z1, Z2)
	ZNAN3(Z3, Z4, Z5)
	ZNAN3(Z6, Z7, Z8)
	ZNAN3(Z9, Z10, Z11)

pstore:
	ZSTORE3(DI, Z0, Z1, Z2)
	ZSTORE3(R9, Z3, Z4, Z5)
	ZSTORE3(R12, Z6, Z7, Z8)
	ZSTORE3(R13, Z9, Z10, Z11)
	VZEROUPPER
	RET
