package fuzz_test

import "testing"

// FuzzTransData: arbitrary bytes → a legal format pair, a dtype, small
// sizes (channel and fractal edges included), a core split, a tile height
// and bit patterns (padding too, which must never reach the output) for
// transdata.
func FuzzTransData(f *testing.F) { fuzzOp(f, "transdata") }
