package backendtest

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/metamorphic"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// The properties are relations between runs that every correct
// implementation satisfies exactly, whatever order it sums in, because
// the contract determines them bit for bit: a correctly rounded result, a
// selection and copy, a value the contract fixes, or the same computation
// on the same data read. Where an op's outputs are judged by a bound, a
// per-element verdict cannot state them: two runs may each be inside the
// bound and disagree, and a bound of zero accepts −0 for +0. Each run of
// a property is a case named after the property, whose seed draws its
// inputs, so a failure names what to rerun; the runs are also judged by
// the case's policy, as any case is.
//
// The metamorphic relations (package metamorphic: batch permutation,
// paged = contiguous, GQA = repeated MHA, prune idempotence, gemm24 =
// gemm of the decompressed matrix, x+y = y+x) run here too, on a few
// cases of each op: they hold bitwise where the contract fixes the bits
// and within the sum of the two runs' bounds where it leaves the
// summation order free.

// Streams of the properties' generators: one per property, so that two
// properties with the same seed draw different inputs.
const (
	streamVectorAdd = iota + 1
	_               // was the prune property's, now metamorphic's
	streamUnread
)

// seeds is how many seeds each property draws (per dtype or layout).
func (c *config) seeds() int {
	if c.short {
		return 2
	}
	return 8
}

// checkProperties runs the properties of the ops in scope that have any,
// each op in a subtest of its own.
func checkProperties(ctx context.Context, t reporter, b backend.Backend, cfg *config, names []string, g goldenRun) {
	props := map[string]func(reporter){
		"vector_add":       func(t reporter) { vectorAddProperties(ctx, t, b, cfg) },
		"sparse24_prune":   func(t reporter) { relationsOnly(ctx, t, b, cfg, "sparse24_prune") },
		"gemm":             func(t reporter) { relationsOnly(ctx, t, b, cfg, "gemm") },
		"gemm24":           func(t reporter) { relationsOnly(ctx, t, b, cfg, "gemm24") },
		"decode_attention": func(t reporter) { unreadProperties(ctx, t, b, cfg) },
		"kv_update":        func(t reporter) { paddingProperties(ctx, t, b, cfg, g) },
	}
	for _, op := range names {
		if p, ok := props[op]; ok {
			t.Run(op, p)
		}
	}
}

// runOn runs case c on b with the inputs in, which a property built
// instead of generating them from c's seed, through the harness as
// runPrepared does.
func runOn(ctx context.Context, t reporter, b backend.Backend, c ops.Case, in map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	t.Helper()
	pc, err := harness.PrepareInputs(c, in)
	if err != nil {
		t.Errorf("%s: %v", harness.Subject(c), err)
		return nil
	}
	if r := runPrepared(ctx, t, b, pc); r != nil {
		return r.Outputs
	}
	return nil
}

// runPrepared runs pc on b through the harness (inputs held to the
// contract and checked unchanged afterwards, outputs to the output
// contract, judged by the case's policy), reports a run that fails on t,
// and returns the result, nil when the case could not be judged.
func runPrepared(ctx context.Context, t reporter, b backend.Backend, pc *harness.Prepared) *harness.Result {
	t.Helper()
	res, err := harness.RunPrepared(ctx, b, pc, harness.Options{})
	if err != nil {
		t.Errorf("%v", err)
		return nil
	}
	if !res.Pass() {
		t.Errorf("%s", res.Verify.Failure())
	}
	return res
}

// prepare generates c's inputs, reporting an error on t.
func prepare(t reporter, c ops.Case) *harness.Prepared {
	t.Helper()
	pc, err := harness.Prepare(c)
	if err != nil {
		t.Errorf("%s: %v", harness.Subject(c), err)
	}
	return pc
}

// paramValues are the values the contract of op allows for param name.
func paramValues(op string, name string) []string {
	o, err := ops.Lookup(op)
	if err != nil {
		return nil
	}
	for _, s := range o.ParamSpecs() {
		if s.Name == name {
			return s.Values
		}
	}
	return nil
}

// dists are the distributions op's generator takes.
func dists(op string) []string {
	o, err := ops.Lookup(op)
	if err != nil {
		return nil
	}
	return o.Dists()
}

// randomBits sets elements [lo, hi) of t to uniformly random bit patterns
// of its dtype: every value the format holds, NaNs with any payload,
// infinities and subnormals included.
func randomBits(t *tensor.Tensor, lo, hi int, rng *rand.Rand) {
	mask := uint64(1)<<(8*t.DType.Size()) - 1
	for i := lo; i < hi; i++ {
		t.SetBits(i, rng.Uint64()&mask)
	}
}

// differences counts the elements of got that are not sameValue as the
// same element of want, and returns the first (−1 when none).
func differences(got, want *tensor.Tensor) (first, n int) {
	first = -1
	for i := range got.Len() {
		if !sameValue(got, want, i, i) {
			n++
			if first < 0 {
				first = i
			}
		}
	}
	return first, n
}

// sameValue is bit equality, except that any two NaNs are equal: NaN
// payloads are no part of any contract.
func sameValue(a, b *tensor.Tensor, i, j int) bool {
	if a.DType.IsFloat() && math.IsNaN(a.Float64(i)) {
		return math.IsNaN(b.Float64(j))
	}
	return a.Bits(i) == b.Bits(j)
}

// value renders element i of t with its bits.
func value(t *tensor.Tensor, i int) string {
	return fmt.Sprintf("%v (bits %#x)", t.Float64(i), t.Bits(i))
}

// vectorAddProperties: z = x + y is the correctly rounded sum, so for
// every pair of values, NaNs and infinities included, y + x gives the
// bits x + y gives (metamorphic's relation x+y = y+x), here on inputs of
// every bit pattern as well as on the generator's distributions. Each
// run is judged exactly as well.
func vectorAddProperties(ctx context.Context, t reporter, b backend.Backend, cfg *config) {
	sizes := []int{65537, 17, 4097, 1, 255} // the short suite takes the first few
	ran := 0
	for _, dt := range paramValues("vector_add", "dtype") {
		d, err := tensor.ParseDType(dt)
		if err != nil {
			t.Errorf("vector_add dtype=%s: %v", dt, err)
			continue
		}
		for i := range cfg.seeds() {
			n := sizes[i%len(sizes)]
			c := ops.Case{Op: "vector_add", Params: ops.Params{"dtype": dt}, Dims: map[string]int{"n": n}, Seed: uint64(i), Name: "x+y = y+x"}
			if !cfg.inScope(c) {
				continue
			}
			ran++
			rng := rand.New(rand.NewPCG(c.Seed, streamVectorAdd))
			x, y := tensor.MustNew(d, n), tensor.MustNew(d, n)
			randomBits(x, 0, n, rng)
			randomBits(y, 0, n, rng)
			pc, err := harness.PrepareInputs(c, map[string]*tensor.Tensor{"x": x, "y": y})
			if err != nil {
				t.Errorf("%s: %v", harness.Subject(c), err)
				continue
			}
			if base := runPrepared(ctx, t, b, pc); base != nil {
				for _, err := range metamorphic.CheckResult(ctx, b, base) {
					t.Errorf("%v", err)
				}
			}
		}
	}
	ran += relations(ctx, t, b, cfg, "vector_add")
	if ran == 0 {
		t.Skipf("no vector_add dtype in scope")
	}
}

// relations runs every metamorphic relation of op (package metamorphic:
// follow-up cases whose outputs the contract ties to a case's own, judged
// bitwise where the contract fixes the bits and within the two runs'
// bounds where it does not) on the cases metamorphic.Cases draws that are
// in scope, cfg.seeds() of them or one per combination of op's
// enumerated params, and returns how many ran.
func relations(ctx context.Context, t reporter, b backend.Backend, cfg *config, op string) int {
	t.Helper()
	ran := 0
	for _, c := range metamorphic.Cases(op, cfg.seeds()) {
		if !cfg.inScope(c) || ctx.Err() != nil {
			continue
		}
		ran++
		for _, err := range metamorphic.Check(ctx, b, c) {
			t.Errorf("%v", err)
		}
	}
	return ran
}

// relationsOnly runs op's metamorphic relations, for an op with no
// property of its own.
func relationsOnly(ctx context.Context, t reporter, b backend.Backend, cfg *config, op string) {
	t.Helper()
	if relations(ctx, t, b, cfg, op) == 0 {
		t.Skipf("no %s case in scope", op)
	}
}

// unreadProperties: decode_attention never reads a cache position at or
// past its sequence's length, so setting every cache row no sequence
// reads (values and int8 scales) to random bits leaves the output's bits
// as they were: a correct kernel computes the same thing from the same
// data read.
func unreadProperties(ctx context.Context, t reporter, b backend.Backend, cfg *config) {
	ds := dists("decode_attention")
	ran := 0
	for _, layout := range paramValues("decode_attention", "layout") {
		for _, cd := range paramValues("decode_attention", "cache_dtype") {
			for i := range cfg.seeds() {
				dims := map[string]int{"b": 6, "s": 5, "hq": 4, "h": 2, "d": 16, "l": 40, "bs": 8}
				if i%2 == 1 {
					dims = map[string]int{"b": 7, "s": 5, "hq": 3, "h": 3, "d": 5, "l": 12, "bs": 4}
				}
				c := ops.Case{Op: "decode_attention", Params: ops.Params{"layout": layout, "cache_dtype": cd}, Dims: dims,
					Dist: ds[i%len(ds)], Seed: uint64(i), Name: "unread positions changed"}
				if !cfg.inScope(c) {
					continue
				}
				ran++
				unreadUnused(ctx, t, b, c)
			}
		}
	}
	ran += relations(ctx, t, b, cfg, "decode_attention")
	if ran == 0 {
		t.Skipf("no decode_attention case in scope")
	}
}

// unreadUnused runs c, then c with its unread cache rows scrambled, and
// compares the outputs.
func unreadUnused(ctx context.Context, t reporter, b backend.Backend, c ops.Case) {
	t.Helper()
	pc := prepare(t, c)
	if pc == nil {
		return
	}
	base := runPrepared(ctx, t, b, pc)
	in, rows, err := scrambleUnread(pc, rand.New(rand.NewPCG(c.Seed, streamUnread)))
	if err != nil {
		t.Errorf("%s: %v", harness.Subject(c), err)
		return
	}
	got := runOn(ctx, t, b, c, in)
	if base == nil || got == nil {
		return
	}
	g, want := got["out"], base.Outputs["out"]
	first, n := differences(g, want)
	if n > 0 {
		hq, d := g.Shape[1], g.Shape[2]
		t.Errorf("%s: with the %d cache rows no sequence reads set to random bits, output \"out\" differs in %d of %d elements, first element %d (batch %d, head %d, element %d): got %s, want %s",
			harness.Subject(c), rows, n, g.Len(), first, first/(hq*d), first/d%hq, first%d, value(g, first), value(want, first))
	}
}

// scrambleUnread returns pc's inputs with every cache row that no
// sequence reads (no position below its seq_len maps to it) set to random
// bits in k_cache, v_cache and, for an int8 cache, k_scale and v_scale;
// and how many rows that is.
func scrambleUnread(pc *harness.Prepared, rng *rand.Rand) (map[string]*tensor.Tensor, int, error) {
	g, err := ops.KVGeomOf(pc.Op, pc.Params, pc.Inputs)
	if err != nil {
		return nil, 0, err
	}
	var bt []int32
	if t, ok := pc.Inputs["block_tables"]; ok {
		bt = t.I32()
	}
	read := make([]bool, g.Rows())
	for s, n := range pc.Inputs["seq_lens"].I32() {
		for pos := range int(n) {
			if r := g.Row(bt, s, pos); r >= 0 {
				read[r] = true
			}
		}
	}
	in := maps.Clone(pc.Inputs)
	unread := 0
	for _, cache := range []struct {
		name string
		per  int // elements per row
	}{{"k_cache", g.H * g.D}, {"v_cache", g.H * g.D}, {"k_scale", g.H}, {"v_scale", g.H}} {
		src, ok := in[cache.name]
		if !ok {
			continue
		}
		t := src.Clone()
		unread = 0
		for r, isRead := range read {
			if !isRead {
				unread++
				randomBits(t, r*cache.per, (r+1)*cache.per, rng)
			}
		}
		in[cache.name] = t
	}
	return in, unread, nil
}

// paddingProperties: a padding entry of kv_update (seq_id −1) gives new_k
// and new_v rows of +0 (the bound accepts −0 there), on generated cases
// and on the golden cases' outcomes.
func paddingProperties(ctx context.Context, t reporter, b backend.Backend, cfg *config, g goldenRun) {
	ds := dists("kv_update")
	ran := 0
	for _, layout := range paramValues("kv_update", "layout") {
		for _, cd := range paramValues("kv_update", "cache_dtype") {
			for i := range cfg.seeds() {
				dims := map[string]int{"b": 8, "s": 6, "h": 2, "d": 16, "l": 40, "bs": 8}
				if i%2 == 1 {
					dims = map[string]int{"b": 7, "s": 5, "h": 3, "d": 5, "l": 12, "bs": 4}
				}
				c := ops.Case{Op: "kv_update", Params: ops.Params{"layout": layout, "cache_dtype": cd}, Dims: dims,
					Dist: ds[i%len(ds)], Seed: uint64(i), Name: "padding rows are +0"}
				if !cfg.inScope(c) {
					continue
				}
				ran++
				pc := prepare(t, c)
				if pc == nil {
					continue
				}
				if r := runPrepared(ctx, t, b, pc); r != nil {
					paddingRows(t, harness.Subject(c).String(), r)
				}
			}
		}
	}
	for i := range g.outcomes {
		if o := &g.outcomes[i]; opOf(o.ID) == "kv_update" && o.Result != nil {
			ran++
			paddingRows(t, harness.Subject(o.Ran()).String()+": "+o.ID, o.Result)
		}
	}
	ran += relations(ctx, t, b, cfg, "kv_update")
	if ran == 0 {
		t.Skipf("no kv_update case in scope")
	}
}

// paddingRows checks that r's padding entries have new_k and new_v rows
// of +0; who names the case.
func paddingRows(t reporter, who string, r *harness.Result) {
	t.Helper()
	ids := r.Inputs["seq_ids"].I32()
	for _, name := range []string{"new_k", "new_v"} {
		z := r.Outputs[name]
		if z == nil || len(ids) == 0 {
			continue
		}
		per := z.Len() / len(ids)
		first, n, of := -1, 0, 0
		for bi, s := range ids {
			if s >= 0 {
				continue
			}
			of += per
			for e := bi * per; e < (bi+1)*per; e++ {
				if z.Bits(e) != 0 {
					n++
					if first < 0 {
						first = e
					}
				}
			}
		}
		if n > 0 {
			t.Errorf("%s: output %q: %d of the %d elements of padding entries (seq_id −1) are not +0, first element %d (batch %d): got %s, want +0 (bits 0x0)",
				who, name, n, of, first, first/per, value(z, first))
		}
	}
}
