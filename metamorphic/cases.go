package metamorphic

import (
	"strings"

	"github.com/npuverify/npuverify/ops"
)

// Cases returns n cases of op, or one for each combination of the values
// of its enumerated params when there are more, on which every relation
// of op has something to compare (a batch of several entries, GQA with two query heads per kv
// head, K holding several groups of four), cycling through the values of
// its enumerated params, its distributions and a few small shapes, seeds
// 0, 1, …: for a suite that puts a backend under the relations without
// cases of its own. An op with no relation has none.
func Cases(op string, n int) []ops.Case {
	if len(Relations(op)) == 0 {
		return nil
	}
	o, err := ops.Lookup(op)
	if err != nil {
		return nil
	}
	shapes := caseShapes[op]
	combos := paramCombos(o)
	dists := o.Dists()
	n = max(n, len(combos))
	cs := make([]ops.Case, 0, n)
	for i := range n {
		cs = append(cs, ops.Case{
			Op: op, Params: combos[i%len(combos)].Clone(), Dims: shapes[i%len(shapes)],
			Dist: dists[i%len(dists)], Seed: uint64(i), Name: "metamorphic",
		})
	}
	return cs
}

// caseShapes are the generation sizes Cases takes, small, with odd sizes
// next to tile-friendly ones.
var caseShapes = map[string][]map[string]int{
	"vector_add":     {{"n": 4097}, {"n": 17}, {"n": 1}},
	"sparse24_prune": {{"m": 17, "k": 16384}, {"m": 3, "k": 64}, {"m": 5, "k": 12}, {"m": 1, "k": 4}}, // past 2^16 elements first
	"gemm24":         {{"m": 5, "k": 32, "n": 7}, {"m": 3, "k": 12, "n": 17}},
	"gemm":           {{"m": 9, "k": 20, "n": 6}, {"m": 17, "k": 3, "n": 33}},
	"kv_update": {
		{"b": 8, "s": 6, "h": 2, "d": 16, "l": 40, "bs": 8},
		{"b": 7, "s": 5, "h": 3, "d": 5, "l": 12, "bs": 4},
	},
	"decode_attention": {
		{"b": 6, "s": 5, "hq": 4, "h": 2, "d": 16, "l": 40, "bs": 8},
		{"b": 7, "s": 5, "hq": 6, "h": 2, "d": 5, "l": 12, "bs": 4},
	},
}

// paramCombos are op's params taking every combination of the values of
// its enumerated params (the others at their defaults); gemm's also take
// beta = 0.5, so c is read and permuted. The operand layouts of gemm and
// gemm24 (format_a, format_b, format_out) stay ND: the relations permute
// and decompress ND matrices, and an NZ case is the ND one's values laid
// out (ops' TestGEMMLayoutExpectIsNDMapped, the kernels'
// TestGEMMNZMatchesND).
func paramCombos(o ops.Op) []ops.Params {
	combos := []ops.Params{{}}
	for _, s := range o.ParamSpecs() {
		if len(s.Values) == 0 || strings.HasPrefix(s.Name, "format_") && (o.Name() == "gemm" || o.Name() == "gemm24") {
			continue
		}
		var next []ops.Params
		for _, p := range combos {
			for _, v := range s.Values {
				q := p.Clone()
				q[s.Name] = v
				next = append(next, q)
			}
		}
		combos = next
	}
	if o.Name() == "gemm" {
		for i := range combos {
			if i%2 == 1 {
				combos[i]["beta"] = "0.5"
			}
		}
	}
	return combos
}
