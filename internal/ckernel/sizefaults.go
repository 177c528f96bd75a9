package ckernel

import "github.com/npuverify/npuverify/ops"

// SizeFault is one of the C kernel's injected faults that shows only at
// sizes the golden set does not hold: the default check passes the kernel
// with it switched on, and a generated case at a trigger size catches it.
// They are what a search over generated cases (npuverify explore) must
// find; each is the kind of tail or remainder bug a kernel developer
// writes, triggered by a class of sizes that boundary or random sizes hit
// often, not by one magic size. backend/testdata/ckernel/case.c describes
// the bugs.
type SizeFault struct {
	// Name is the value of FaultEnv that switches the fault on.
	Name string
	// Op is the op it breaks.
	Op string
	// Trigger is the class of sizes where it shows, in the op's dims.
	Trigger string
	// Example is a case at a trigger size that the fault fails and the
	// correct kernel passes, under the case's default policy.
	Example ops.Case
}

// SizeFaults lists the C kernel's size-only faults, one per op family.
func SizeFaults() []SizeFault {
	return []SizeFault{
		{
			Name: "vtail", Op: "vector_add",
			Trigger: "n mod B is B/4 or 3B/4, B = 32 bytes / itemsize (fp16 and bf16: n ≡ 4, 12 mod 16; fp32: n ≡ 2, 6 mod 8; int8: n ≡ 8, 24 mod 32): the tail's quarter-block step is skipped and those B/4 elements of z stay zero",
			Example: ops.Case{Name: "vtail_n100", Op: "vector_add", Params: ops.Params{"dtype": "fp16"},
				Dims: map[string]int{"n": 100}, Dist: "uniform", Seed: 32},
		},
		{
			Name: "kunroll", Op: "gemm",
			Trigger: "k ≡ 2 mod 4, any mode: the last two k of every dot product are dropped",
			Example: ops.Case{Name: "kunroll_16x18x16", Op: "gemm", Params: ops.Params{"mode": "fp16_fp32acc"},
				Dims: map[string]int{"m": 16, "k": 18, "n": 16}, Dist: "uniform", Seed: 32},
		},
		{
			Name: "outblock", Op: "decode_attention",
			Trigger: "d > 16 and d mod 16 ≠ 0, any layout and cache dtype: the last d mod 16 elements of every out row repeat those 16 before",
			Example: ops.Case{Name: "outblock_d24", Op: "decode_attention", Params: ops.Params{"layout": "contiguous", "cache_dtype": "fp16"},
				Dims: map[string]int{"b": 4, "s": 3, "hq": 2, "h": 1, "d": 24, "l": 20}, Dist: "uniform", Seed: 32},
		},
		{
			Name: "sqtail", Op: "sparse_compress",
			Trigger: "d mod 4 ≠ 0 (with more candidates than kept): importance drops the last d mod 4 squares, so other tokens are selected",
			Example: ops.Case{Name: "sqtail_2x32x6", Op: "sparse_compress", Params: ops.Params{"keep_ratio": "0.5", "sinks": "2"},
				Dims: map[string]int{"h": 2, "l": 32, "d": 6}, Dist: "uniform", Seed: 32},
		},
		{
			Name: "grouppair", Op: "sparse24_prune",
			Trigger: "k/4 ≡ 2 mod 4, i.e. k ≡ 8 mod 16: the last two groups of every row are left zero (values 0, meta 0)",
			Example: ops.Case{Name: "grouppair_8x40", Op: "sparse24_prune",
				Dims: map[string]int{"m": 8, "k": 40}, Dist: "uniform", Seed: 32},
		},
	}
}
