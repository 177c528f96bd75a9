package ops

import (
	"hash/fnv"

	"github.com/npuverify/npuverify/tensor"
)

// Case is one reproducible verification case: everything needed to
// regenerate its inputs bit for bit.
type Case struct {
	Name   string         `json:"name,omitempty"`
	Op     string         `json:"op"`
	Params Params         `json:"params"`
	Dims   map[string]int `json:"dims"`
	Dist   string         `json:"dist"`
	Seed   uint64         `json:"seed"`
	Labels []string       `json:"labels,omitempty"`
	// Policy is the accuracy policy the case is judged by ("" = bound).
	Policy string `json:"policy,omitempty"`
	// Numerics, when set, overrides the backend's numerics profile for this
	// case (e.g. the saturate cases).
	Numerics *tensor.Numerics `json:"numerics,omitempty"`
	// Recipe marks a large case (10^6 elements, K in the thousands, more
	// output tiles than cores) that the golden store keeps as a recipe:
	// case.json alone, with the sha256 of every input and expected output
	// and no .npy files, so the checked-in store stays small while the
	// sizes where kernels change behaviour are still checked by default.
	// Its inputs are regenerated from the seed (Gen.Rand) and held to the
	// recorded hashes (docs/golden.md, "Recipes"). Nothing outside the
	// golden store reads it.
	Recipe bool `json:"recipe,omitempty"`
}

// Gen returns the case's generation spec.
func (c Case) Gen() Gen { return Gen{Dims: c.Dims, Dist: c.Dist, Seed: c.Seed} }

// CaseSeed derives a case's seed from its op and name, so seeds never
// change when cases are added or reordered.
func CaseSeed(op, name string) uint64 {
	h := fnv.New32a()
	h.Write([]byte(op + "/" + name))
	return uint64(h.Sum32())
}

// NewCase builds a named case whose seed is CaseSeed(op, name), labelled
// ST and op:<op> before the given labels.
func NewCase(op, name string, params Params, dims map[string]int, dist string, labels ...string) Case {
	return Case{
		Name: name, Op: op, Params: params, Dims: dims, Dist: dist, Seed: CaseSeed(op, name),
		Labels: append([]string{"ST", "op:" + op}, labels...),
	}
}
