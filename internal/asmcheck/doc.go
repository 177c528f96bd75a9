// Package asmcheck holds, in its test, rules every amd64 assembly file of
// the module keeps that neither the assembler nor go vet enforces, both
// about the SSE/AVX register state. The kernels use 256-bit Y registers;
// on some x86 CPUs a legacy SSE instruction (a mnemonic without the VEX V
// prefix, such as MOVQ or MOVSD, and all of the Go compiler's
// floating-point code) run while the upper halves of the Y registers are
// in use costs a switch of the register state, tens of cycles.
//
//   - No legacy SSE instruction names an X register: the VEX form
//     (VMOVQ, VMOVSD) does the same. On this project's machine one such
//     MOVQ at the entry of verify's exactRunAVX2, a function called some
//     140 times per fuzz input, held three quarters of that function's
//     time, and the VEX forms of all of them took a third off
//     FuzzVectorAdd's body (docs/performance.md).
//   - No function or macro that uses a Y register (or a Z register, the
//     two AVX-512 GEMM kernels') returns without a VZEROUPPER after its
//     last such instruction, or the caller's Go code would pay the switch.
package asmcheck
