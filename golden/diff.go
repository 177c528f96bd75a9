package golden

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// What Update prints for a changed case: per file its old → new sha256,
// and for case.json the fields, metrics and budgets that moved.

func shortSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])[:12]
}

// describeChange prints, per differing file, what changed.
func describeChange(w io.Writer, old, cur map[string][]byte) {
	names := slices.Sorted(maps.Keys(old))
	for n := range cur {
		if _, ok := old[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		o, hadOld := old[n]
		c, hasNew := cur[n]
		switch {
		case !hadOld:
			fmt.Fprintf(w, "    + %s sha256 %s\n", n, shortSum(c))
		case !hasNew:
			fmt.Fprintf(w, "    - %s sha256 %s\n", n, shortSum(o))
		case bytes.Equal(o, c):
		case n == CaseJSON:
			fmt.Fprintf(w, "    ~ %s sha256 %s → %s\n", n, shortSum(o), shortSum(c))
			describeCaseJSON(w, o, c)
		default:
			fmt.Fprintf(w, "    ~ %s sha256 %s → %s\n", n, shortSum(o), shortSum(c))
		}
	}
}

// describeCaseJSON prints the fields of case.json that differ, with metric
// and budget deltas.
func describeCaseJSON(w io.Writer, oldB, newB []byte) {
	o, err1 := ParseCaseFile(oldB)
	n, err2 := ParseCaseFile(newB)
	if err1 != nil || err2 != nil {
		if err1 != nil {
			fmt.Fprintf(w, "        old case.json did not parse: %v\n", err1)
		}
		return
	}
	for _, f := range []struct {
		name     string
		old, new any
	}{
		{"params", o.Params, n.Params}, {"dims", o.Dims, n.Dims}, {"dist", o.Dist, n.Dist},
		{"seed", o.Seed, n.Seed}, {"labels", o.Labels, n.Labels}, {"policy", o.Policy, n.Policy},
		{"numerics", o.Numerics, n.Numerics}, {"inputs", entrySummary(o.Inputs), entrySummary(n.Inputs)},
		{"outputs", entrySummary(o.Outputs), entrySummary(n.Outputs)},
	} {
		if !reflect.DeepEqual(f.old, f.new) {
			fmt.Fprintf(w, "        %s: %v → %v\n", f.name, render(f.old), render(f.new))
		}
	}
	for _, out := range slices.Sorted(maps.Keys(unionKeys(o.Metrics, n.Metrics))) {
		if d := metricFields(o.Metrics[out], n.Metrics[out]); len(d) > 0 {
			fmt.Fprintf(w, "        metrics %s: %s\n", out, strings.Join(d, ", "))
		}
	}
	var ob, nb Budgets
	if o.Budgets != nil {
		ob = *o.Budgets
	}
	if n.Budgets != nil {
		nb = *n.Budgets
	}
	var d []string
	if ob.Cycles != nb.Cycles {
		d = append(d, fmt.Sprintf("cycles %d → %d (%+.2f%%)", ob.Cycles, nb.Cycles, pct(float64(ob.Cycles), float64(nb.Cycles))))
	}
	if ob.GMBytes != nb.GMBytes {
		d = append(d, fmt.Sprintf("gm_bytes %d → %d", ob.GMBytes, nb.GMBytes))
	}
	if ob.VectorUtil != nb.VectorUtil {
		d = append(d, fmt.Sprintf("vector_util %g → %g", ob.VectorUtil, nb.VectorUtil))
	}
	if ob.LoadBalance != nb.LoadBalance {
		d = append(d, fmt.Sprintf("load_balance %g → %g", ob.LoadBalance, nb.LoadBalance))
	}
	if len(d) > 0 {
		fmt.Fprintf(w, "        budgets: %s\n", strings.Join(d, ", "))
	}
}

func pct(a, b float64) float64 {
	if a == 0 {
		return 0
	}
	return 100 * (b - a) / a
}

// unionKeys is the set of keys in a or b.
func unionKeys[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// metricFields lists "name old → new" for the metrics that differ.
func metricFields(o, n Metrics) []string {
	var d []string
	add := func(name string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			d = append(d, fmt.Sprintf("%s %v → %v", name, a, b))
		}
	}
	add("n", o.N, n.N)
	add("tightness", float64(o.Tightness), float64(n.Tightness))
	add("max_abs", float64(o.MaxAbs), float64(n.MaxAbs))
	add("max_rel", float64(o.MaxRel), float64(n.MaxRel))
	add("mere", float64(o.MERE), float64(n.MERE))
	add("mare", float64(o.MARE), float64(n.MARE))
	add("rmse", float64(o.RMSE), float64(n.RMSE))
	add("cosine", float64(o.Cosine), float64(n.Cosine))
	add("ulp_hist", o.UlpHist, n.UlpHist)
	add("nonfinite_mismatch", o.NonFiniteMismatch, n.NonFiniteMismatch)
	add("ambiguous", o.Ambiguous, n.Ambiguous)
	return d
}

func entrySummary(es []FileEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = fmt.Sprintf("%s:%s%v", e.Name, e.DType, e.Shape)
	}
	return out
}

func render(v any) string {
	switch x := v.(type) {
	case nil:
		return "none"
	case fmt.Stringer:
		if reflect.ValueOf(v).Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil() {
			return "none"
		}
		return x.String()
	}
	return fmt.Sprint(v)
}
