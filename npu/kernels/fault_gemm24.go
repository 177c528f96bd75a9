package kernels

import "github.com/npuverify/npuverify/npu"

// gemm24 faults: bugs of the meta decode in UB.
const (
	// FaultG24MetaBitsSwapped: the decode takes the first index from bits
	// 2–3 and the second from bits 0–1, so each kept value multiplies the
	// other kept row of b.
	FaultG24MetaBitsSwapped npu.Fault = "gemm24/meta-bits-swapped"
	// FaultG24SecondIgnored: the second kept index is never decoded (its
	// field is masked off with the wrong mask), so both values of a group
	// multiply the first kept row.
	FaultG24SecondIgnored npu.Fault = "gemm24/second-index-ignored"
	// FaultG24GroupOffset: the group base offset 4·g is computed for the
	// previous group (g−1) from the second group of a slice on.
	FaultG24GroupOffset npu.Fault = "gemm24/group-offset-off-by-one"
)

// GEMM24Faults is gemm24's fault catalogue.
var GEMM24Faults = []FaultInfo{
	{FaultG24MetaBitsSwapped, "gemm24", "meta fields swapped: first index read from bits 2–3"},
	{FaultG24SecondIgnored, "gemm24", "second kept index ignored: both values multiply the first kept row"},
	{FaultG24GroupOffset, "gemm24", "group offset off by one: group g decoded against base 4·(g−1)"},
}
