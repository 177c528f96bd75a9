package fuzz_test

import "testing"

// FuzzSparse24Prune: arbitrary bytes → shape, core count, tile size and
// fp16 bit patterns (NaN, ±Inf, ±0 ties included) for sparse24_prune.
func FuzzSparse24Prune(f *testing.F) { fuzzOp(f, "sparse24_prune") }

// FuzzGEMM24: arbitrary bytes → mode, accumulate model, shape, numerics,
// meta (every valid pair) and operand bit patterns for gemm24.
func FuzzGEMM24(f *testing.F) { fuzzOp(f, "gemm24") }
