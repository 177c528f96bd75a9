package fuzz_test

import "testing"

// FuzzSparseCompress: arbitrary bytes → shape, keep_ratio, sinks, a
// variant and k, v bit patterns (NaN, Inf, exact ties) for sparse_compress,
// judged tie-aware.
func FuzzSparseCompress(f *testing.F) { fuzzOp(f, "sparse_compress") }
