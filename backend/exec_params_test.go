package backend_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
)

// TestExecCaseFileCarriesEveryParam: the case.json an exec kernel reads
// names every param of the op's contract with its default filled in, for
// a case run with no params at all (the backend called directly, not
// through the harness, which completes them too), one per op at the sizes
// of its stored golden case closest to the defaults. decode_attention's scale, whose
// default depends on D, is written as RN32(1/√D), parsing back to exactly
// that value as a float64 and as a float32.
func TestExecCaseFileCarriesEveryParam(t *testing.T) {
	save := filepath.Join(t.TempDir(), "case.json")
	b := newExec(t, script(t, `cp "$NPUVERIFY_CASE" `+quoteArg(save)+`; exit 1`), backend.ExecOptions{})
	// Each op's sizes come from its stored case closest to the defaults
	// (fewest params set away from them), so the dims fit the default
	// params: transdata's first case converts ND to FRACTAL_NZ (dims m, k),
	// its defaults NCHW to NC1HWC0 (dims n, c, h, w).
	first := map[string]ops.Case{}
	off := map[string]int{}
	for _, c := range opdb.GoldenCases() {
		if c.Recipe {
			continue
		}
		op, err := ops.Lookup(c.Op)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range op.ParamSpecs() {
			if v, ok := c.Params[s.Name]; ok && s.Default != "" && v != s.Default {
				n++
			}
		}
		if best, ok := off[c.Op]; !ok || n < best {
			first[c.Op], off[c.Op] = c, n
		}
	}
	for _, name := range ops.Names() {
		c, ok := first[name]
		if !ok {
			t.Errorf("%s: no golden case to take sizes from", name)
			continue
		}
		op, err := ops.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := op.Validate(ops.Params{})
		if err != nil {
			t.Fatalf("%s params={}: %v", name, err)
		}
		in, err := op.Generate(p, ops.Gen{Dims: c.Dims, Dist: op.Dists()[0], Seed: c.Seed})
		if err != nil {
			t.Fatalf("%s params={} dims=%v seed=%d: %v", name, c.Dims, c.Seed, err)
		}
		os.Remove(save)
		_, _, runErr := b.Run(context.Background(), name, ops.Params{}, in)
		if runErr == nil {
			t.Fatalf("%s params={} seed=%d: the script exits 1, got no error", name, c.Seed)
		}
		raw, err := os.ReadFile(save)
		if err != nil {
			t.Fatalf("%s params={} seed=%d: case.json not written (%v): got the run's error %v", name, c.Seed, err, runErr)
		}
		var cf struct {
			Params map[string]string `json:"params"`
		}
		if err := json.Unmarshal(raw, &cf); err != nil {
			t.Fatalf("%s params={} seed=%d: %v", name, c.Seed, err)
		}
		for _, s := range op.ParamSpecs() {
			v, ok := cf.Params[s.Name]
			switch {
			case !ok:
				t.Errorf("%s params={} seed=%d: case.json has no param %q: got params %v, want every param of the contract", name, c.Seed, s.Name, cf.Params)
			case s.Default != "" && v != s.Default:
				t.Errorf("%s params={} seed=%d: param %q: got %q, want the default %q", name, c.Seed, s.Name, v, s.Default)
			}
		}
		if len(cf.Params) != len(op.ParamSpecs()) {
			t.Errorf("%s params={} seed=%d: got params %v, want exactly the %d of the contract", name, c.Seed, cf.Params, len(op.ParamSpecs()))
		}
		if name == "decode_attention" {
			d := in["q"].Shape[2]
			want := ops.DecodeScale(ops.Params{}, d)
			f64, err64 := strconv.ParseFloat(cf.Params["scale"], 64)
			f32, err32 := strconv.ParseFloat(cf.Params["scale"], 32)
			if err64 != nil || err32 != nil || f64 != want || f32 != want {
				t.Errorf("%s params={} d=%d seed=%d: scale %q parses to %v (float64), %v (float32); want both %v = RN32(1/√D)", name, d, c.Seed, cf.Params["scale"], f64, f32, want)
			}
		}
	}
}
