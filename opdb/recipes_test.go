package opdb_test

import (
	"testing"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
)

// recipes returns the golden recipes (large cases) of op.
func recipes(t *testing.T, op string) []ops.Case {
	t.Helper()
	info, err := opdb.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	var out []ops.Case
	for _, c := range info.GoldenCases() {
		if c.Recipe {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		t.Errorf("%s: no golden recipe", op)
	}
	return out
}

// paramValues returns the values op's parameter name may take.
func paramValues(t *testing.T, op, name string) []string {
	t.Helper()
	o, err := ops.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range o.ParamSpecs() {
		if p.Name == name && len(p.Values) > 0 {
			return p.Values
		}
	}
	t.Fatalf("%s: no parameter %q with a list of values", op, name)
	return nil
}

// Every op has a recipe: the sizes where its loops change.
func TestEveryOpHasRecipes(t *testing.T) {
	for _, n := range opdb.Names() {
		recipes(t, n)
	}
}

// vector_add's recipes hit the listed size classes: 1000, 2^16 − 1, 2^16,
// 2^16 + 1, 10^6 and one past 2^20, and every dtype past 2^16.
func TestVectorAddRecipeSizes(t *testing.T) {
	sizes := map[int]bool{}
	past16, past20 := map[string]bool{}, false
	for _, c := range recipes(t, "vector_add") {
		n := c.Dims["n"]
		sizes[n] = true
		if n > 1<<16 {
			past16[c.Params["dtype"]] = true
		}
		past20 = past20 || n > 1<<20
	}
	for _, n := range []int{1000, 1<<16 - 1, 1 << 16, 1<<16 + 1, 1000000} {
		if !sizes[n] {
			t.Errorf("vector_add: no recipe of n = %d", n)
		}
	}
	if !past20 {
		t.Error("vector_add: no recipe past 2^20")
	}
	for _, d := range paramValues(t, "vector_add", "dtype") {
		if !past16[d] {
			t.Errorf("vector_add: dtype %s has no recipe past 2^16", d)
		}
	}
}

// gemm's recipes hit every class on the default profile's tiling: a core
// running more than two output tiles, K ≥ 4096, m or n ≥ 1024, and every
// mode has a recipe with a remainder in every dimension (M, N off the
// base block, K off the base K slice) and one with K ≥ 4096.
func TestGEMMRecipeClasses(t *testing.T) {
	prof := npu.Ascend910B()
	var tiles, deep, wide bool
	modes := map[string]int{}
	for _, c := range recipes(t, "gemm") {
		cfg, err := ops.ParseGEMM(c.Params)
		if err != nil {
			t.Fatal(err)
		}
		m, k, n := c.Dims["m"], c.Dims["k"], c.Dims["n"]
		tl, err := kernels.NewGEMMTiling(prof, cfg, m, k, n)
		if err != nil {
			t.Fatal(err)
		}
		blocks := tl.Blocks()
		tiles = tiles || tl.MaxCoreBlocks() > 2
		wide = wide || m >= 1024 || n >= 1024
		if k >= 4096 {
			deep = true
			modes[cfg.Mode.Name] |= 1
		}
		if m%tl.BaseM != 0 && n%tl.BaseN != 0 && k%tl.BaseK != 0 && m%16 != 0 && n%16 != 0 && k%16 != 0 {
			modes[cfg.Mode.Name] |= 2
		}
		t.Logf("%s: %d×%d×%d, base %d×%d×%d, %d output tiles on %d cores", c.Name, m, k, n, tl.BaseM, tl.BaseN, tl.BaseK, blocks, tl.BlockDim)
	}
	if !tiles || !deep || !wide {
		t.Errorf("gemm recipes: a core with more than 2 tiles (of %d cores) %v, K ≥ 4096 %v, m or n ≥ 1024 %v; want all", prof.AICores, tiles, deep, wide)
	}
	for _, mode := range ops.GEMMModes() {
		if modes[mode.Name] != 3 {
			t.Errorf("gemm mode %s: recipes with K ≥ 4096 %v, with a remainder in every dimension %v; want both", mode.Name, modes[mode.Name]&1 != 0, modes[mode.Name]&2 != 0)
		}
	}
}

// The recipes of sparse_compress hit both of its kernel's paths: the
// longest sequence the in-UB path takes (the head's score array fills the
// UB: one token more goes to the chunked path), and one past 2^16 tokens
// (a 16-bit index wraps) on the chunked path, scores spilled to GM.
func TestSparseCompressRecipeAtUBLimit(t *testing.T) {
	ub := npu.Ascend910B().UBBytes
	atLimit, past := false, false
	for _, c := range recipes(t, "sparse_compress") {
		l := c.Dims["l"]
		// scores (8 B per token, 32-byte aligned) and one fp16 row of d.
		need := func(l int) int { return (l*8+31)/32*32 + (c.Dims["d"]*2+31)/32*32 }
		switch {
		case need(l) <= ub && need(l+1) > ub:
			atLimit = true
		case l > 1<<16 && need(l) > ub:
			past = true
		default:
			t.Errorf("%s: L = %d needs %d of %d UB bytes and L+1 %d; want L the largest that fits, or past 2^16", c.Name, l, need(l), ub, need(l+1))
		}
	}
	if !atLimit || !past {
		t.Errorf("sparse_compress recipes: at the UB limit %v, past 2^16 on the chunked path %v; want both", atLimit, past)
	}
}
