package fuzz_test

import "testing"

// FuzzKVUpdate: header bytes → layout, cache dtype, sizes, distribution
// and seed (opdb.KVUpdate's decoder); values from the op's generator.
func FuzzKVUpdate(f *testing.F) { fuzzOp(f, "kv_update") }
