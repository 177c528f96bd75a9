// Package metamorphic holds relations between runs of an operator that
// every legal implementation satisfies: a follow-up case derived from a
// case's inputs (its operands swapped, its batch permuted, its cache laid
// out another way, its kv heads repeated, its pruned weights pruned again
// or multiplied densely) whose outputs the contract ties to the case's own.
// They need no reference of their own: the contract fixes the relation,
// so they judge any backend, the emulator, a C kernel behind exec or a
// worker, or a cgo binding alike.
//
// A relation holds bitwise where the contract fixes the bits (a correctly
// rounded sum, a selection and copy, seq_lens, written flags, cache bytes
// no entry writes) and within the sum of the two runs' per-element bounds
// where it does not: the contract leaves the summation order of every dot
// product free, and an implementation may choose it per batch entry, per
// layout or per head count, so two legal runs of related cases may differ
// by up to the error each is allowed. Each relation's doc comment says
// which, and why it holds for every legal implementation.
//
// Check runs one case and every relation of its op; the suites
// (backendtest, so TestBackend, the Ginkgo DescribeGolden spec and any
// NPUVERIFY_BACKEND run) and the explore engine call it. Every error reads
// `<op> <params> seed=<seed>: <relation>: <what differs>`, ending with
// got, want and bound, so that the case to rerun is named first.
package metamorphic

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Relation is one metamorphic relation of one op.
type Relation struct {
	// Op is the op whose cases the relation derives follow-ups from.
	Op string
	// Name names the relation in failures, e.g. "x+y = y+x".
	Name string
	// check derives the follow-up cases from base (a run of a case of
	// Op), runs them on b and reports every violation.
	check func(x *checker) []error
}

// Check runs c on b, then the relation's follow-up cases, and returns
// every violation; a run of c that fails its own verdict is reported as
// well, since a relation compares against it.
func (r Relation) Check(ctx context.Context, b backend.Backend, c ops.Case) []error {
	base, errs := runBase(ctx, b, c)
	if base == nil {
		return errs
	}
	return append(errs, r.CheckResult(ctx, b, base)...)
}

// CheckResult runs the relation's follow-up cases of base, a run of a
// case of r.Op that the caller has already made and judged (its verdict is
// not reported again): the explore engine, which runs every case it
// generates, or a suite that draws base inputs of its own
// (harness.PrepareInputs). The follow-ups derive from base.Inputs and
// draw any randomness from base.Case.Seed.
func (r Relation) CheckResult(ctx context.Context, b backend.Backend, base *harness.Result) []error {
	if base == nil || base.Case.Op != r.Op || base.Outputs == nil {
		return nil
	}
	x := &checker{ctx: ctx, b: b, base: base, rel: r.Name, stream: streamOf(r.Name)}
	return r.check(x)
}

// Relations returns the relations of op, nil for an op that has none.
func Relations(op string) []Relation {
	var rs []Relation
	for _, r := range all {
		if r.Op == op {
			rs = append(rs, r)
		}
	}
	return rs
}

// Names returns the names of every relation, in the order Check runs
// them, each prefixed by its op ("kv_update: batch permutation").
func Names() []string {
	names := make([]string, len(all))
	for i, r := range all {
		names[i] = r.Op + ": " + r.Name
	}
	return names
}

// Check runs case c on b and every relation of its op, and returns every
// violation (nil when c's op has no relation or everything holds). A run
// that ctx cuts short is no violation: a caller with a budget (explore)
// checks ctx.Err() to tell a clean case from one not finished.
func Check(ctx context.Context, b backend.Backend, c ops.Case) []error {
	rs := Relations(c.Op)
	if len(rs) == 0 {
		return nil
	}
	base, errs := runBase(ctx, b, c)
	if base == nil {
		return errs
	}
	return append(errs, CheckResult(ctx, b, base)...)
}

// CheckResult runs every relation of base's op on base, a run the
// caller has made and judged. See Relation.CheckResult.
func CheckResult(ctx context.Context, b backend.Backend, base *harness.Result) []error {
	var errs []error
	for _, r := range Relations(base.Case.Op) {
		if ctx.Err() != nil {
			break
		}
		errs = append(errs, r.CheckResult(ctx, b, base)...)
	}
	return errs
}

// all are the relations, in the order Check runs them.
var all = []Relation{
	{Op: "vector_add", Name: relCommutes, check: vectorAddCommutes},
	{Op: "sparse24_prune", Name: relPruneIdempotent, check: pruneIdempotent},
	{Op: "sparse24_prune", Name: relPrunePermuted, check: prunePermuted},
	{Op: "gemm24", Name: relGEMM24Dense, check: gemm24Dense},
	{Op: "gemm", Name: relGEMMRows, check: gemmRowsPermuted},
	{Op: "kv_update", Name: relBatch, check: kvBatchPermuted},
	{Op: "kv_update", Name: relLayout, check: kvLayout},
	{Op: "decode_attention", Name: relBatch, check: kvBatchPermuted},
	{Op: "decode_attention", Name: relLayout, check: kvLayout},
	{Op: "decode_attention", Name: relGQA, check: gqaRepeated},
}

// The relations' names, as failures print them.
const (
	relCommutes        = "x+y = y+x"
	relPruneIdempotent = "prune(decompress(prune(w))) = prune(w)"
	relPrunePermuted   = "rows and groups of four permuted"
	relGEMM24Dense     = "gemm24(prune(w), b) = gemm(decompress(prune(w)), b)"
	relGEMMRows        = "rows of a permuted"
	relBatch           = "batch permutation"
	relLayout          = "paged = contiguous"
	relGQA             = "GQA = repeated MHA"
)

// Error is one violation of a relation.
type Error struct {
	// Case is the case the follow-up derives from: what to rerun.
	Case ops.Case
	// Relation is the relation's name; "" for a failure of the case's
	// own run.
	Relation string
	// Msg says what differs, ending with got / want / bound.
	Msg string
}

// Error renders the violation as `<op> <params> seed=<seed>: <relation>:
// <what differs>`.
func (e *Error) Error() string {
	if e.Relation == "" {
		return harness.Subject(e.Case).String() + ": " + e.Msg
	}
	return harness.Subject(e.Case).String() + ": " + e.Relation + ": " + e.Msg
}

// runBase runs c on b through the harness; it returns the result (nil
// when c could not be run or judged) and the failures of the run.
func runBase(ctx context.Context, b backend.Backend, c ops.Case) (*harness.Result, []error) {
	res, err := harness.Run(ctx, b, c, harness.Options{})
	if err != nil && ctx.Err() != nil {
		return nil, nil // cut short: no verdict, no violation
	}
	if err != nil {
		return nil, []error{&Error{Case: c, Msg: fmt.Sprintf("the case itself: %v", err)}}
	}
	if !res.Pass() {
		return res, []error{&Error{Case: c, Msg: "the case itself: " + res.Verify.Failure()}}
	}
	return res, nil
}

// checker is one relation checked on one base run.
type checker struct {
	ctx    context.Context
	b      backend.Backend
	base   *harness.Result
	rel    string
	stream uint64
	errs   []error
}

// streamOf is the stream of relation name's random draws: a hash of its
// name, so relations with the same seed draw differently and adding one
// changes no other's draws.
func streamOf(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := range len(name) {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return h
}

// rand is the relation's seeded source.
func (x *checker) rand() *rand.Rand {
	return rand.New(rand.NewPCG(x.base.Case.Seed, x.stream))
}

// errorf records a violation.
func (x *checker) errorf(format string, args ...any) {
	x.errs = append(x.errs, &Error{Case: x.base.Case, Relation: x.rel, Msg: fmt.Sprintf(format, args...)})
}

// follow runs the follow-up case of op with params p (nil: the base's)
// on inputs in through the harness (inputs held to the contract and
// checked unchanged, outputs judged by the follow-up's own bound); it
// records a follow-up that fails to run or fails its verdict and returns
// its result, nil when it has no outputs to compare.
func (x *checker) follow(what string, op string, p ops.Params, in map[string]*tensor.Tensor) *harness.Result {
	c := x.base.Case
	c.Op, c.Name, c.Policy = op, x.rel, ""
	if p != nil {
		c.Params = p
	}
	pc, err := harness.PrepareInputs(c, in)
	if err != nil {
		x.errorf("follow-up %s: %v", what, err)
		return nil
	}
	res, err := harness.RunPrepared(x.ctx, x.b, pc, harness.Options{})
	if err != nil && x.ctx.Err() != nil {
		return nil // cut short: no verdict, no violation
	}
	if err != nil {
		x.errorf("follow-up %s: %v", what, err)
		return nil
	}
	if !res.Pass() {
		x.errorf("follow-up %s fails its own verdict: %s", what, res.Verify.Failure())
	}
	return res
}

// withParam returns the base's validated params with name set to v.
func (x *checker) withParam(name, v string) ops.Params {
	p := x.base.Params.Clone()
	p[name] = v
	return p
}
