package fuzz_test

import "testing"

// FuzzGEMM: arbitrary bytes → mode, accumulate model, alpha/beta, small
// M×K×N, numerics and element bit patterns, Inf, NaN and subnormals
// included (opdb.GEMM's decoder). The kernel package's FuzzGEMMKernel
// also compares against its math/big model.
func FuzzGEMM(f *testing.F) { fuzzOp(f, "gemm") }
