//go:build amd64 && !purego

#include "textflag.h"

// AVX2 kernels of decode_attention's Expect. Every lane holds its own sum
// (a query head or a column), added to in the order the Go versions in
// decode_attention_kern.go use, with separate multiplies and adds (no
// FMA), so each lane's bits are the Go code's.

DATA absmask<>+0(SB)/8, $0x7fffffffffffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $8

// func cvtF16F64AVX(dst *float64, src *float16.Float16, n int)
// n a positive multiple of 4.
TEXT ·cvtF16F64AVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX

cvtloop:
	VCVTPH2PS (SI), X0
	VCVTPS2PD X0, Y0
	VMOVUPD   Y0, (DI)
	ADDQ      $8, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       cvtloop
	VZEROUPPER
	RET

// func scores4AVX(qT, k *float64, d, n int, s4, m4 *float64)
// n a positive multiple of 4 rows, d > 0. Lane g of the accumulators is
// query g; four rows at a time, each its own pair of accumulators.
TEXT ·scores4AVX(SB), NOSPLIT, $0-48
	MOVQ qT+0(FP), SI
	MOVQ k+8(FP), DI
	MOVQ d+16(FP), CX
	MOVQ n+24(FP), DX
	MOVQ s4+32(FP), R8
	MOVQ m4+40(FP), R9
	VBROADCASTSD absmask<>(SB), Y15
	MOVQ CX, R10
	SHLQ $3, R10 // row stride in bytes
	SHRQ $2, DX

sblock:
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	MOVQ   SI, R11
	MOVQ   DI, R12
	LEAQ   (DI)(R10*1), R13
	LEAQ   (R13)(R10*1), R14
	LEAQ   (R14)(R10*1), BX
	MOVQ   CX, AX

sinner:
	VMOVUPD      (R11), Y8
	VBROADCASTSD (R12), Y9
	VBROADCASTSD (R13), Y10
	VBROADCASTSD (R14), Y11
	VBROADCASTSD (BX), Y12
	VMULPD       Y9, Y8, Y9
	VMULPD       Y10, Y8, Y10
	VMULPD       Y11, Y8, Y11
	VMULPD       Y12, Y8, Y12
	VADDPD       Y9, Y0, Y0
	VADDPD       Y10, Y1, Y1
	VADDPD       Y11, Y2, Y2
	VADDPD       Y12, Y3, Y3
	VANDPD       Y15, Y9, Y9
	VANDPD       Y15, Y10, Y10
	VANDPD       Y15, Y11, Y11
	VANDPD       Y15, Y12, Y12
	VADDPD       Y9, Y4, Y4
	VADDPD       Y10, Y5, Y5
	VADDPD       Y11, Y6, Y6
	VADDPD       Y12, Y7, Y7
	ADDQ         $32, R11
	ADDQ         $8, R12
	ADDQ         $8, R13
	ADDQ         $8, R14
	ADDQ         $8, BX
	DECQ         AX
	JNZ          sinner

	VMOVUPD Y0, (R8)
	VMOVUPD Y1, 32(R8)
	VMOVUPD Y2, 64(R8)
	VMOVUPD Y3, 96(R8)
	VMOVUPD Y4, (R9)
	VMOVUPD Y5, 32(R9)
	VMOVUPD Y6, 64(R9)
	VMOVUPD Y7, 96(R9)
	ADDQ    $128, R8
	ADDQ    $128, R9
	LEAQ    (DI)(R10*4), DI
	DECQ    DX
	JNZ     sblock
	VZEROUPPER
	RET

// func accumOAAVX(p, v *float64, d, n, cols int, o, a *float64)
// n > 0 rows of stride d; cols a positive multiple of 16: for each block
// of 16 columns, o and a stay in registers over all n rows.
TEXT ·accumOAAVX(SB), NOSPLIT, $0-56
	MOVQ p+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ d+16(FP), R10
	SHLQ $3, R10
	MOVQ n+24(FP), DX
	MOVQ cols+32(FP), CX
	SHRQ $4, CX
	MOVQ o+40(FP), R8
	MOVQ a+48(FP), R9
	VBROADCASTSD absmask<>(SB), Y15

oablock:
	VMOVUPD (R8), Y0
	VMOVUPD 32(R8), Y1
	VMOVUPD 64(R8), Y2
	VMOVUPD 96(R8), Y3
	VMOVUPD (R9), Y4
	VMOVUPD 32(R9), Y5
	VMOVUPD 64(R9), Y6
	VMOVUPD 96(R9), Y7
	MOVQ    SI, R11
	MOVQ    DI, R12
	MOVQ    DX, AX

oarow:
	VBROADCASTSD (R11), Y8
	VMOVUPD      (R12), Y9
	VMOVUPD      32(R12), Y10
	VMOVUPD      64(R12), Y11
	VMOVUPD      96(R12), Y12
	VMULPD       Y8, Y9, Y13
	VADDPD       Y13, Y0, Y0
	VMULPD       Y8, Y10, Y14
	VADDPD       Y14, Y1, Y1
	VMULPD       Y8, Y11, Y13
	VADDPD       Y13, Y2, Y2
	VMULPD       Y8, Y12, Y14
	VADDPD       Y14, Y3, Y3
	VANDPD       Y15, Y9, Y9
	VANDPD       Y15, Y10, Y10
	VANDPD       Y15, Y11, Y11
	VANDPD       Y15, Y12, Y12
	VMULPD       Y8, Y9, Y9
	VMULPD       Y8, Y10, Y10
	VMULPD       Y8, Y11, Y11
	VMULPD       Y8, Y12, Y12
	VADDPD       Y9, Y4, Y4
	VADDPD       Y10, Y5, Y5
	VADDPD       Y11, Y6, Y6
	VADDPD       Y12, Y7, Y7
	ADDQ         $8, R11
	ADDQ         R10, R12
	DECQ         AX
	JNZ          oarow

	VMOVUPD Y0, (R8)
	VMOVUPD Y1, 32(R8)
	VMOVUPD Y2, 64(R8)
	VMOVUPD Y3, 96(R8)
	VMOVUPD Y4, (R9)
	VMOVUPD Y5, 32(R9)
	VMOVUPD Y6, 64(R9)
	VMOVUPD Y7, 96(R9)
	ADDQ    $128, R8
	ADDQ    $128, R9
	ADDQ    $128, DI
	DECQ    CX
	JNZ     oablock
	VZEROUPPER
	RET

// func accumT3AVX(w, v *float64, d, n, cols int, o, t3 *float64)
// As accumOAAVX: t3 += w_j·|v_j − o| per column, o held in registers.
TEXT ·accumT3AVX(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ d+16(FP), R10
	SHLQ $3, R10
	MOVQ n+24(FP), DX
	MOVQ cols+32(FP), CX
	SHRQ $4, CX
	MOVQ o+40(FP), R8
	MOVQ t3+48(FP), R9
	VBROADCASTSD absmask<>(SB), Y15

t3block:
	VMOVUPD (R9), Y0
	VMOVUPD 32(R9), Y1
	VMOVUPD 64(R9), Y2
	VMOVUPD 96(R9), Y3
	VMOVUPD (R8), Y4
	VMOVUPD 32(R8), Y5
	VMOVUPD 64(R8), Y6
	VMOVUPD 96(R8), Y7
	MOVQ    SI, R11
	MOVQ    DI, R12
	MOVQ    DX, AX

t3row:
	VBROADCASTSD (R11), Y8
	VMOVUPD      (R12), Y9
	VMOVUPD      32(R12), Y10
	VMOVUPD      64(R12), Y11
	VMOVUPD      96(R12), Y12
	VSUBPD       Y4, Y9, Y9
	VSUBPD       Y5, Y10, Y10
	VSUBPD       Y6, Y11, Y11
	VSUBPD       Y7, Y12, Y12
	VANDPD       Y15, Y9, Y9
	VANDPD       Y15, Y10, Y10
	VANDPD       Y15, Y11, Y11
	VANDPD       Y15, Y12, Y12
	VMULPD       Y9, Y8, Y9
	VMULPD       Y10, Y8, Y10
	VMULPD       Y11, Y8, Y11
	VMULPD       Y12, Y8, Y12
	VADDPD       Y9, Y0, Y0
	VADDPD       Y10, Y1, Y1
	VADDPD       Y11, Y2, Y2
	VADDPD       Y12, Y3, Y3
	ADDQ         $8, R11
	ADDQ         R10, R12
	DECQ         AX
	JNZ          t3row

	VMOVUPD Y0, (R9)
	VMOVUPD Y1, 32(R9)
	VMOVUPD Y2, 64(R9)
	VMOVUPD Y3, 96(R9)
	ADDQ    $128, R8
	ADDQ    $128, R9
	ADDQ    $128, DI
	DECQ    CX
	JNZ     t3block
	VZEROUPPER
	RET

// func cvtF16RowsAVX(dst *float64, src *float16.Float16, rows *int, n, avail, d, stride int)
// Converts n > 0 rows of d values (d a positive multiple of 4), row r at
// src + 2·stride·rows[r], back to back into dst. Before row r it
// prefetches row r+16 when r+16 < avail (rows may list rows past n):
// rows a cache row apart are read at DRAM latency otherwise.
TEXT ·cvtF16RowsAVX(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ rows+16(FP), R8
	MOVQ n+24(FP), DX
	MOVQ avail+32(FP), R10
	MOVQ d+40(FP), R9
	MOVQ stride+48(FP), BX
	SHLQ $1, BX          // row stride in bytes
	LEAQ (R8)(R10*8), R10 // end of rows
	LEAQ (R9)(R9*1), R13  // row bytes

rowloop:
	LEAQ  128(R8), R11 // &rows[r+16]
	CMPQ  R11, R10
	JAE   noprefetch
	MOVQ  (R11), R12
	IMULQ BX, R12
	ADDQ  SI, R12
	XORQ  AX, AX

pfloop:
	PREFETCHT0 (R12)(AX*1)
	ADDQ       $64, AX
	CMPQ       AX, R13
	JB         pfloop

noprefetch:
	MOVQ  (R8), R12
	IMULQ BX, R12
	ADDQ  SI, R12
	MOVQ  R9, CX
	SHRQ  $2, CX

rcvt:
	VCVTPH2PS (R12), X0
	VCVTPS2PD X0, Y0
	VMOVUPD   Y0, (DI)
	ADDQ      $8, R12
	ADDQ      $32, DI
	DECQ      CX
	JNZ       rcvt
	ADDQ      $8, R8
	DECQ      DX
	JNZ       rowloop
	VZEROUPPER
	RET
