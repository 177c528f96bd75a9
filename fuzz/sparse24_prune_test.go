package fuzz_test

import "testing"

// FuzzSparse24Prune: arbitrary bytes → shape, core count, tile size and
// fp16 bit patterns (NaN, ±Inf, ±0 ties included) for sparse24_prune.
func FuzzSparse24Prune(f *testing.F) { fuzzOp(f, "sparse24_prune") }
