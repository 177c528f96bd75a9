package golden

import (
	"cmp"
	"slices"

	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
)

// DefaultCases returns the default golden case set: every registered op's
// golden cases (opdb.Info.GoldenCases), sorted by op and name. Names are
// stable: they are the directory names under golden/cases/<op>/.
func DefaultCases() []ops.Case {
	var out []ops.Case
	for _, info := range opdb.All() {
		cs := info.GoldenCases()
		slices.SortFunc(cs, func(a, b ops.Case) int { return cmp.Compare(a.Name, b.Name) })
		out = append(out, cs...)
	}
	return out
}
