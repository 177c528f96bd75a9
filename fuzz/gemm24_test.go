package fuzz_test

import "testing"

// FuzzSparseGEMM24: arbitrary bytes → mode, accumulate model, shape,
// numerics, meta (every valid pair) and operand bit patterns for gemm24.
// (Not FuzzGEMM24: a target whose name extends another's, FuzzGEMM, is
// ambiguous to OSS-Fuzz's native Go build.)
func FuzzSparseGEMM24(f *testing.F) { fuzzOp(f, "gemm24") }
