package fuzz_test

import "testing"

// FuzzVectorAdd: arbitrary bytes → dtype, length, core count, tile size,
// overflow mode and element bit patterns (opdb.VectorAdd's decoder).
func FuzzVectorAdd(f *testing.F) { fuzzOp(f, "vector_add") }
