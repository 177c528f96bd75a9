// Package asmcheck holds, in its test, the rules every amd64 assembly file
// of the module keeps that neither the assembler nor go vet enforces.
//
// One rule so far: no legacy SSE instruction (a mnemonic without the VEX
// V prefix, such as MOVQ or MOVSD) names an X register. The kernels use
// 256-bit AVX registers and end with VZEROUPPER; a legacy SSE instruction
// executed while the upper halves of the Y registers are in use costs a
// state transition on some x86 CPUs, tens of cycles, every call. On this
// project's CI machine one such MOVQ at the entry of verify's
// exactRunAVX2, a function called some 140 times per fuzz input, held
// three quarters of that function's time, and the fixes of all of them
// (the VEX forms, the same bits) took a third off FuzzVectorAdd's body
// (BenchmarkFuzzVectorAddRandom, docs/performance.md).
package asmcheck
