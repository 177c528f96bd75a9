package explore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// testDevice is the device the tests draw for: ascend910b's facts.
func testDevice() Device {
	p := npu.Ascend910B()
	return Device{UBBytes: p.UBBytes, BlockBytes: p.UBBlockBytes, Cores: p.VectorCores, Fractal: p.CubeFP16.M}
}

// drawsPerOp is how many cases TestGeneratedCasesLegal draws of each op.
const drawsPerOp = 200

// TestGenerationReproducible: the stream is a function of the seed, the
// shard and the op; another seed or shard gives another stream.
func TestGenerationReproducible(t *testing.T) {
	draw := func(op string, seed uint64, n int) []ops.Case {
		o, err := ops.Lookup(op)
		if err != nil {
			t.Fatal(err)
		}
		g := NewGenerator(o, testDevice(), Limits{MaxElements: 1 << 14, MaxWork: 1 << 16}, seed)
		var out []ops.Case
		for range n {
			pc, err := g.Next()
			if err != nil {
				t.Fatalf("op %s seed %d: %v", op, seed, err)
			}
			out = append(out, pc.Case)
		}
		return out
	}
	for _, op := range ops.Names() {
		a, b := draw(op, 7, 20), draw(op, 7, 20)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("op %s seed 7: two streams differ:\n%v\nwant\n%v", op, b, a)
		}
		c := draw(op, StreamSeed(7, 2), 20)
		if reflect.DeepEqual(a, c) {
			t.Errorf("op %s seed 7: shard 2's stream equals the unsharded one", op)
		}
	}
	if StreamSeed(7, 0) != 7 || StreamSeed(7, 1) == StreamSeed(7, 2) {
		t.Errorf("StreamSeed(7, 0) = %d, want 7; shards 1 and 2: %d, %d, want different", StreamSeed(7, 0), StreamSeed(7, 1), StreamSeed(7, 2))
	}
}

// TestGeneratedCasesLegal draws drawsPerOp cases of every op and holds
// each to the contract (params validate, dims meet their DimSpecs, inputs
// generate and pass CheckInputs, the limits hold), and the stream to its
// coverage: every param at a non-default value, every dist, some dim on a
// device boundary.
func TestGeneratedCasesLegal(t *testing.T) {
	if testing.Short() {
		t.Skip("draws hundreds of cases per op")
	}
	const seed = 11
	bounds := Boundaries(testDevice())
	// Caps below the defaults keep the draws quick; boundaries above 64
	// (cores × fractal, UB capacity in bytes of int8) still fit.
	lim := Limits{MaxElements: 1 << 17, MaxWork: 1 << 20}
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		g := NewGenerator(op, testDevice(), lim, seed)
		nonDefault := map[string]bool{}
		dists := map[string]bool{}
		onBoundary := 0
		for i := range drawsPerOp {
			pc, err := g.Next()
			if err != nil {
				t.Fatalf("op %s seed %d draw %d: %v", name, seed, i, err)
			}
			c := pc.Case
			if _, err := op.Validate(c.Params); err != nil {
				t.Errorf("op %s params %s seed %d: Validate: %v", name, c.Params, seed, err)
			}
			if !dimsLegal(op, c.Dims) {
				t.Errorf("op %s params %s seed %d: dims %v break the DimSpecs", name, c.Params, seed, c.Dims)
			}
			if err := ops.CheckInputs(op, pc.Params, pc.Inputs); err != nil {
				t.Errorf("op %s params %s seed %d: inputs: %v", name, c.Params, seed, err)
			}
			n := 0
			for _, in := range pc.Inputs {
				n += in.Len()
			}
			if n > lim.elements() {
				t.Errorf("op %s params %s seed %d: %d input elements, want ≤ %d", name, c.Params, seed, n, lim.elements())
			}
			for k, v := range c.Params {
				for _, s := range op.ParamSpecs() {
					if s.Name == k && s.Default != v {
						nonDefault[k] = true
					}
				}
			}
			dists[c.Dist] = true
			for _, v := range c.Dims {
				if _, ok := slices.BinarySearch(bounds, v); ok && v > 64 {
					onBoundary++
					break
				}
			}
		}
		for _, s := range op.ParamSpecs() {
			if !nonDefault[s.Name] {
				t.Errorf("op %s seed %d: param %s never took a non-default value in %d cases", name, seed, s.Name, drawsPerOp)
			}
		}
		for _, d := range op.Dists() {
			if !dists[d] {
				t.Errorf("op %s seed %d: dist %s never drawn in %d cases", name, seed, d, drawsPerOp)
			}
		}
		if onBoundary == 0 {
			t.Errorf("op %s seed %d: no dim above 64 on a device boundary in %d cases; got 0, want > 0", name, seed, drawsPerOp)
		}
	}
}

// TestBoundaries: the device's edges and their neighbours are there.
func TestBoundaries(t *testing.T) {
	b := Boundaries(testDevice())
	for _, want := range []int{15, 16, 17, 65535, 65536, 65537, 192<<10/2 - 1, 192 << 10 / 2, 192<<10/2 + 1, 48*16 + 1} {
		if _, ok := slices.BinarySearch(b, want); !ok {
			t.Errorf("Boundaries(ascend910b) lacks %d: got %v", want, b)
		}
	}
}

// corrupting is the emulator with a planted bug: when bad says so, the
// first element of every output is replaced by one the contract cannot
// accept (1 where the answer is ≤ 0 or NaN, −1 where it is positive).
type corrupting struct {
	backend.Backend
	bad func(op string, p ops.Params, in map[string]*tensor.Tensor) bool
}

func (c corrupting) Name() string { return "corrupting" }

func (c corrupting) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	out, m, err := c.Backend.Run(ctx, op, p, in)
	if err != nil || !c.bad(op, p, in) {
		return out, m, err
	}
	for _, t := range out {
		if t.Len() > 0 {
			v := 1.0
			if t.Float64(0) > 0 {
				v = -1
			}
			t.SetFloat64(0, v, tensor.Numerics{})
		}
	}
	return out, m, err
}

func emu() backend.Backend { return emulator.New(npu.Ascend910B()) }

// searchUntilFound runs a search that ends at its first finding (every op
// searched has one); ctx's deadline is only a guard against a search that
// never finds one, which fails the test.
func searchUntilFound(t *testing.T, b backend.Backend, op string, seed uint64) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Run(ctx, b, Options{Ops: []string{op}, Seed: seed, Jobs: 2, Device: testDevice(), Numerics: npu.Ascend910B().Numerics})
	if err != nil {
		t.Fatalf("op %s seed %d: Run: %v", op, seed, err)
	}
	if len(rep.Findings) != 1 {
		t.Fatalf("op %s seed %d: %d findings after %d cases, want 1", op, seed, len(rep.Findings), rep.Cases)
	}
	return rep
}

// TestShrinkToMinimalSize: a bug that corrupts vector_add's outputs from
// n = 300 on is shrunk to n = 300 exactly, with default params and the
// uniform distribution.
func TestShrinkToMinimalSize(t *testing.T) {
	const seed = 3
	b := corrupting{emu(), func(op string, _ ops.Params, in map[string]*tensor.Tensor) bool {
		return op == "vector_add" && in["x"].Len() >= 300
	}}
	rep := searchUntilFound(t, b, "vector_add", seed)
	f := rep.Findings[0]
	if f.Case.Dims["n"] != 300 || len(f.Case.Params) != 0 || f.Case.Dist != ops.DistUniform {
		t.Errorf("op vector_add seed %d: found %s, shrunk to %s in %d runs; want n=300, default params, dist uniform",
			seed, Describe(f.Found), Describe(f.Case), f.ShrinkRuns)
	}
	if f.Kind != "fail" || !slices.Contains(f.Signature, "z:bound") {
		t.Errorf("op vector_add seed %d: kind %q signature %v, want fail with z:bound", seed, f.Kind, f.Signature)
	}
}

// TestShrinkKeepsNeededParam: a bug only under a non-default dtype keeps
// that dtype and shrinks n to 1 (the smallest size with an element).
func TestShrinkKeepsNeededParam(t *testing.T) {
	const seed = 5
	b := corrupting{emu(), func(op string, p ops.Params, _ map[string]*tensor.Tensor) bool {
		return op == "vector_add" && p["dtype"] == "bf16"
	}}
	rep := searchUntilFound(t, b, "vector_add", seed)
	f := rep.Findings[0]
	if f.Case.Params["dtype"] != "bf16" || len(f.Case.Params) != 1 || f.Case.Dims["n"] != 1 || f.Case.Dist != ops.DistUniform {
		t.Errorf("op vector_add seed %d: found %s, shrunk to %s; want dtype=bf16 n=1 dist uniform", seed, Describe(f.Found), Describe(f.Case))
	}
}

// crashing fails every gemm run whose k is odd: a crash is a finding.
type crashing struct{ backend.Backend }

func (c crashing) Name() string { return "crashing" }

func (c crashing) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if op == "gemm" {
		// K odd, whatever the layout of a (an NZ a's second dim is M1).
		if _, k, _, err := ops.GEMMShape(p, in); err == nil && k%2 == 1 {
			return nil, nil, fmt.Errorf("segmentation fault")
		}
	}
	return c.Backend.Run(ctx, op, p, in)
}

// TestBackendErrorIsFinding: a backend error on a legal case is a
// finding, shrunk to the smallest dims that still crash (k = 1, m = n = 0).
func TestBackendErrorIsFinding(t *testing.T) {
	const seed = 9
	rep := searchUntilFound(t, crashing{emu()}, "gemm", seed)
	f := rep.Findings[0]
	if f.Kind != "backend error" || f.Case.Dims["k"] != 1 || f.Case.Dims["m"] != 0 || f.Case.Dims["n"] != 0 {
		t.Errorf("op gemm seed %d: found %s, shrunk to %s (%s); want a backend error at m=0 k=1 n=0", seed, Describe(f.Found), Describe(f.Case), f.Kind)
	}
}

// TestWriteAndReplayFirst: a finding is written as a store entry with its
// marker that golden.Check replays as a failure; a second search with that
// store as its DB reports it before drawing any case (Replayed, no new
// cases needed), and on a correct backend the replayed case passes.
func TestWriteAndReplayFirst(t *testing.T) {
	const seed = 3
	bad := corrupting{emu(), func(op string, _ ops.Params, in map[string]*tensor.Tensor) bool {
		return op == "vector_add" && in["x"].Len() >= 300
	}}
	rep := searchUntilFound(t, bad, "vector_add", seed)
	dir := filepath.Join(t.TempDir(), "findings")
	var log bytes.Buffer
	if err := Write(context.Background(), dir, emulator.Recorder(), rep.Findings, &log); err != nil {
		t.Fatalf("Write: %v", err)
	}
	f := rep.Findings[0]
	if f.Path == "" || f.WriteError != "" {
		t.Fatalf("op vector_add seed %d: path %q write error %q, want a path", seed, f.Path, f.WriteError)
	}
	if _, err := os.Stat(filepath.Join(dir, golden.MarkerName)); err != nil {
		t.Errorf("no store marker: %v", err)
	}
	s, err := golden.OpenDir(dir)
	if err != nil {
		t.Fatalf("OpenDir: %v", err)
	}
	defer s.Close()
	for _, err := range golden.Verify(s) {
		t.Errorf("store entry: %v", err)
	}
	outs, err := golden.Check(context.Background(), s, bad, golden.CheckOptions{})
	if err != nil || len(outs) != 1 || outs[0].Verdict() != harness.VerdictFail {
		t.Fatalf("replaying %s on the buggy backend: %d outcomes, err %v; want one failure", f.Path, len(outs), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	again, err := Run(ctx, bad, Options{Ops: []string{"vector_add"}, Seed: seed + 1, Device: testDevice(), DB: s, Numerics: npu.Ascend910B().Numerics})
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Findings) != 1 || !again.Findings[0].Replayed || again.Cases != 0 || again.Replayed != 1 {
		t.Errorf("search with the DB: %d findings (replayed %v), %d new cases, %d replayed; want the replayed finding and no new case",
			len(again.Findings), len(again.Findings) > 0 && again.Findings[0].Replayed, again.Cases, again.Replayed)
	}
	ok, err := Run(ctx, emu(), Options{Ops: []string{"vector_add"}, Seed: seed, Device: testDevice(), DB: s, Budget: time.Nanosecond, Numerics: npu.Ascend910B().Numerics})
	if err != nil || len(ok.Findings) != 0 || ok.Replayed != 1 {
		t.Errorf("search with the DB on the emulator: %d findings, %d replayed, err %v; want 0 findings, 1 replayed", len(ok.Findings), ok.Replayed, err)
	}
}
