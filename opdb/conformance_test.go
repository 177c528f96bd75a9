package opdb_test

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// world is what the conformance check looks up outside an op's record:
// the fuzz targets and the embedded golden store. The test of
// the check itself swaps parts of it out.
type world struct {
	fuzzTargets map[string]bool // FuzzXxx functions in package fuzz
	golden      map[string]bool // "<op>/<name>" IDs in the embedded store
}

func realWorld(t *testing.T) world {
	t.Helper()
	w := world{fuzzTargets: map[string]bool{}, golden: map[string]bool{}}
	files, err := filepath.Glob(filepath.Join("..", "fuzz", "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("fuzz targets: no files in ../fuzz (%v)", err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Fuzz") && takesTestingF(fn) {
				w.fuzzTargets[fn.Name.Name] = true
			}
		}
	}
	for _, c := range golden.Embedded().Cases() {
		w.golden[c.ID] = true
	}
	return w
}

// takesTestingF reports whether fn has the one parameter *testing.F.
func takesTestingF(fn *ast.FuncDecl) bool {
	ps := fn.Type.Params.List
	if len(ps) != 1 || len(ps[0].Names) > 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "F" && fmt.Sprint(sel.X) == "testing"
}

// checkLayers returns one error per layer info lacks, each starting with
// the op's name and the layer: the contract, the reference and bound
// (Expect on the op's first golden case gives every output of the
// contract a reference and a bound per element), the emulated kernel
// (which passes that case), golden cases (listed, and present in the
// embedded store), samples, a fault catalogue, valid variants and a fuzz
// target with seeds its decoder accepts.
func checkLayers(info *opdb.Info, w world) []error {
	var errs []error
	fail := func(layer, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s: %s", info.Name(), layer, fmt.Sprintf(format, args...)))
	}
	name := info.Name()
	if name == "" || info.Op.Doc() == "" || len(info.Op.Dists()) == 0 {
		fail("contract", "want a name, a doc line and at least one input distribution")
	}

	var first *ops.Case
	if info.GoldenCases == nil {
		fail("golden cases", "GoldenCases is nil")
	} else {
		cs := info.GoldenCases()
		if len(cs) == 0 {
			fail("golden cases", "none listed")
		}
		for i, c := range cs {
			if c.Op != name {
				fail("golden cases", "case %q is of op %q", c.Name, c.Op)
			}
			if !w.golden[name+"/"+c.Name] {
				fail("golden cases", "case %q is not in the embedded store (run make golden)", c.Name)
			}
			if first == nil {
				first = &cs[i]
			}
		}
	}
	if first != nil {
		checkRun(info, *first, fail)
	}

	var samples []ops.Case
	if info.Samples != nil {
		samples = info.Samples()
	}
	if len(samples) == 0 {
		fail("samples", "none listed (the suites run them on every backend)")
	}
	seen := map[string]bool{}
	for _, c := range samples {
		key := strings.Join(c.Labels, ",") + "|" + c.Name
		switch {
		case c.Op != name:
			fail("samples", "sample %q is of op %q", c.Name, c.Op)
		case c.Name == "" || seen[key]:
			fail("samples", "sample %q: want a name unique within its labels", c.Name)
		}
		seen[key] = true
		if _, err := info.Op.Validate(c.Params); err != nil {
			fail("samples", "sample %q: %v", c.Name, err)
		}
	}
	if len(info.Faults) == 0 {
		fail("faults", "the fault catalogue is empty")
	}
	for _, f := range info.Faults {
		if f.Op != name || !strings.HasPrefix(string(f.Fault), name+"/") || f.Models == "" {
			fail("faults", "fault %+v: want op %q, a name %q/… and the bug it models", f, name, name)
		}
	}
	if len(info.Variants) == 0 {
		fail("variants", "no valid variant (another tiling, core count or order)")
	}
	for _, v := range info.Variants {
		if v.Op != name || v.Name == "" || v.Options == nil {
			fail("variants", "variant %+v: want op %q, a name and options", v, name)
		}
	}
	switch {
	case info.FuzzTarget == "" || !w.fuzzTargets[info.FuzzTarget]:
		fail("fuzz target", "no func %s(*testing.F) in package fuzz", orNone(info.FuzzTarget))
	case len(info.FuzzSeeds) == 0 || info.FuzzDecode == nil:
		fail("fuzz target", "want seeds and a decoder")
	default:
		for i, s := range info.FuzzSeeds {
			if _, ok := info.FuzzDecode(s); !ok {
				fail("fuzz target", "seed %d does not decode", i)
			}
		}
	}
	return errs
}

// checkRun holds the reference, bound and kernel layers to the op's first
// golden case.
func checkRun(info *opdb.Info, c ops.Case, fail func(layer, format string, args ...any)) {
	pc, err := harness.Prepare(c)
	if err != nil {
		fail("contract", "case %s: %v", c.Name, err)
		return
	}
	num := npu.Ascend910B().Numerics
	if c.Numerics != nil {
		num = *c.Numerics
	}
	specs, err := info.Op.Outputs(pc.Params, pc.Inputs)
	if err != nil {
		fail("contract", "case %s: outputs: %v", c.Name, err)
		return
	}
	exp, err := info.Op.Expect(pc.Params, pc.Inputs, num)
	if err != nil {
		fail("reference and bound", "case %s: Expect: %v", c.Name, err)
	}
	for _, s := range specs {
		e := exp[s.Name]
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		if e == nil || e.Len() != n || e.Check() != nil {
			fail("reference and bound", "case %s: output %q has no reference and bound for its %d elements", c.Name, s.Name, n)
		}
	}
	if info.Kernel == nil {
		fail("kernel", "no emulated kernel")
		return
	}
	r, err := harness.RunPrepared(context.Background(), emulator.New(npu.Ascend910B()), pc, harness.Options{})
	switch {
	case err != nil:
		fail("kernel", "case %s: %v", c.Name, err)
	case !r.Pass():
		fail("kernel", "case %s fails its checks:\n%s", c.Name, r.Verify.Failure())
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none named)"
	}
	return s
}

// TestConformance: every registered op has every layer.
func TestConformance(t *testing.T) {
	w := realWorld(t)
	if len(opdb.Names()) < 2 {
		t.Fatalf("opdb has %v, want vector_add and gemm at least", opdb.Names())
	}
	for _, info := range opdb.All() {
		for _, err := range checkLayers(info, w) {
			t.Error(err)
		}
	}
}

// TestConformanceCatchesEachMissingLayer removes one layer at a time from
// a real record (or from the world around it) and requires the check to
// name exactly that layer: the conformance test cannot pass an op that
// lacks one.
func TestConformanceCatchesEachMissingLayer(t *testing.T) {
	w := realWorld(t)
	for _, real := range opdb.All() {
		if errs := checkLayers(real, w); len(errs) != 0 {
			t.Fatalf("%s: the intact record fails: %v", real.Name(), errs)
		}
		for _, c := range []struct {
			layer  string
			remove func(*opdb.Info, *world)
		}{
			{"kernel", func(i *opdb.Info, _ *world) { i.Kernel = nil }},
			{"golden cases", func(i *opdb.Info, _ *world) { i.GoldenCases = nil }},
			{"golden cases", func(i *opdb.Info, w *world) { w.golden = map[string]bool{} }},
			{"samples", func(i *opdb.Info, _ *world) { i.Samples = nil }},
			{"samples", func(i *opdb.Info, _ *world) { i.Samples = func() []ops.Case { return nil } }},
			{"faults", func(i *opdb.Info, _ *world) { i.Faults = nil }},
			{"variants", func(i *opdb.Info, _ *world) { i.Variants = nil }},
			{"fuzz target", func(i *opdb.Info, _ *world) { i.FuzzTarget = "" }},
			{"fuzz target", func(_ *opdb.Info, w *world) { w.fuzzTargets = map[string]bool{} }},
			{"fuzz target", func(i *opdb.Info, _ *world) { i.FuzzSeeds = nil }},
			{"reference and bound", func(i *opdb.Info, _ *world) { i.Op = noExpect{i.Op} }},
		} {
			info, world := *real, w
			c.remove(&info, &world)
			errs := checkLayers(&info, world)
			if len(errs) == 0 {
				t.Errorf("%s without its %s: conformance passes, want a failure naming %q", real.Name(), c.layer, c.layer)
				continue
			}
			for _, err := range errs {
				if !strings.HasPrefix(err.Error(), real.Name()+": "+c.layer+":") {
					t.Errorf("%s without its %s: reported %v, want only %q failures", real.Name(), c.layer, err, c.layer)
				}
			}
		}
	}
}

// noExpect is a contract whose reference and bound are missing: Expect
// returns nothing.
type noExpect struct{ ops.Op }

func (noExpect) Expect(ops.Params, map[string]*tensor.Tensor, tensor.Numerics) (map[string]*bound.Expected, error) {
	return nil, nil
}
