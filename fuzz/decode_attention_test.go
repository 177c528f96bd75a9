package fuzz_test

import "testing"

// FuzzDecodeAttention: header bytes → layout, cache dtype, sizes, GQA
// group, distribution and seed (opdb.DecodeAttention's decoder).
func FuzzDecodeAttention(f *testing.F) { fuzzOp(f, "decode_attention") }
