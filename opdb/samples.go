package opdb

import (
	"github.com/npuverify/npuverify/ops"
)

// Sample labels. A sample case carries the group it is reported under
// (its first "mode:" label, else its first "dtype:" label) and, when it is
// part of the long sweep, LabelLong.
const (
	// LabelLong marks a sample of the long sweep: larger shapes the
	// default run leaves out (suites run them with NPUVERIFY_LONG=1).
	LabelLong = "long"
)

// sample builds one sample case: name describes it within its group.
func sample(op, name string, p ops.Params, dims map[string]int, dist string, seed uint64, labels ...string) ops.Case {
	return ops.Case{Name: name, Op: op, Params: p, Dims: dims, Dist: dist, Seed: seed, Labels: append([]string{"UT", "op:" + op}, labels...)}
}
