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

// gemm24Faults is gemm24's fault plan for one launch (GEMM24Kernel builds
// it from the launch's context), consulted by the meta decode through
// decodeGroup. The zero value is the correct kernel.
type gemm24Faults struct {
	metaBitsSwapped, secondIgnored, groupOffset bool
}

func newGEMM24Faults(fs npu.Faults) gemm24Faults {
	return gemm24Faults{
		metaBitsSwapped: fs.Has(FaultG24MetaBitsSwapped),
		secondIgnored:   fs.Has(FaultG24SecondIgnored),
		groupOffset:     fs.Has(FaultG24GroupOffset),
	}
}

// decodeGroup turns meta byte b of group g of a slice into the two B-row
// indices relative to the slice's first k: 4·g + first, 4·g + second, with
// the fields swapped (meta-bits-swapped), the second replaced by the
// first (second-index-ignored) or the base taken from group g−1
// (group-offset-off-by-one).
func (f gemm24Faults) decodeGroup(b uint8, g int) (uint8, uint8) {
	first, second := b&3, b>>2&3
	if f.metaBitsSwapped {
		first, second = second, first
	}
	if f.secondIgnored {
		second = first
	}
	base := uint8(4 * g)
	if f.groupOffset && g > 0 {
		base -= 4
	}
	return base + first, base + second
}
