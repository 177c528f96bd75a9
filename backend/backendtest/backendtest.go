// Package backendtest puts any implementation of the operators under the
// default conformance suite, the way testing/fstest.TestFS puts any file
// system under test and gonum's blas/testblas any BLAS: one call from a
// plain go test, no test framework.
//
// The suite holds a backend to what the contracts say of every correct
// implementation, never to the emulator's summation order: the embedded
// golden cases judged by each case's accuracy policy, bit-exactly only for
// the emulator that recorded them; relations that hold exactly for any
// correct implementation (attention never reads past a sequence's
// length, padding entries give +0 rows, and the metamorphic relations of
// package metamorphic: vector_add is commutative bit for bit, pruning is
// idempotent and commutes with permuting rows and groups, batch
// permutation, paged = contiguous, GQA = repeated MHA, gemm24 = gemm of
// the decompressed matrix); the same bits from
// every run of a case, serial or concurrent; and a clean error for an
// unknown op or a cancelled context. Every failure message starts with op,
// params and seed and ends with got / want / bound, and a golden case's is
// the text `npuverify check` prints for it.
package backendtest

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sync"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/ops"
)

// TestBackend runs the default conformance suite against b and reports
// every failure on t, each in a subtest named by its concern and op
// (golden/gemm, deterministic/gemm, properties/vector_add,
// robustness/cancelled/gemm): the suite keeps going after a failure, so
// one run lists everything b gets wrong. Under go test -short (or with
// Short) the properties draw fewer inputs and the serial run of the golden
// cases that the concurrent one is compared with is not repeated.
//
// A team with a cgo binding to its kernel library implements
// backend.Backend over the binding (Run receives validated params and
// inputs held to the op's contract, empty tensors included, and returns
// every output the contract lists, by name) and calls TestBackend from a test of its own, scoped to
// the ops and modes the library implements:
//
//	// mylib implements backend.Backend over the cgo binding.
//	type mylib struct{}
//
//	func (mylib) Name() string { return "mylib" }
//
//	func (mylib) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
//		if err := ctx.Err(); err != nil {
//			return nil, nil, err
//		}
//		switch op {
//		case "gemm":
//			a, b := in["a"], in["b"]
//			out := tensor.MustNew(tensor.Float16, a.Shape[0], b.Shape[1])
//			if rc := C.mylib_gemm_f16(unsafe.Pointer(&a.F16()[0]), ...); rc != 0 {
//				return nil, nil, fmt.Errorf("mylib_gemm_f16: status %d", rc)
//			}
//			return map[string]*tensor.Tensor{"out": out}, nil, nil
//		}
//		return nil, nil, fmt.Errorf("mylib: no kernel for op %q", op)
//	}
//
//	func TestConformance(t *testing.T) {
//		backendtest.TestBackend(t, mylib{},
//			backendtest.Ops("gemm"),
//			backendtest.Cases(func(c ops.Case) bool {
//				m := c.Params["mode"] // left out: the default mode
//				return (m == "" || m == "fp16_fp32acc") && c.Numerics == nil
//			}))
//	}
//
// The backend computes under the default numerics profile (IEEE overflow,
// subnormals kept, int8 ties to even) unless it is a
// harness.NumericsBackend, which says its own and can be set to another.
// The golden cases that override the profile (saturating overflow) need
// one that can; a backend that cannot leaves them out, as above
// (c.Numerics == nil), or each fails as an input error.
//
// A failing golden case reads as `npuverify check` reports it, so a
// failure found here is reproduced by the CLI on the same case, and the
// other way round.
func TestBackend(t *testing.T, b backend.Backend, opts ...Option) {
	t.Helper()
	cfg := newConfig(opts)
	cfg.short = cfg.short || testing.Short()
	run(t.Context(), testT{t}, b, cfg)
}

// Check runs the suite TestBackend runs and returns its failures instead
// of reporting them on a *testing.T: for a test framework of another kind
// (the Ginkgo suites of package suites call it), or for a test of the
// suite itself. Each error is an *Error whose message is exactly what
// TestBackend reports. Check ignores go test's -short flag; pass Short to
// ask for the short suite.
func Check(ctx context.Context, b backend.Backend, opts ...Option) []error {
	rec := &recorder{mu: new(sync.Mutex), errs: new([]error)}
	run(ctx, rec, b, newConfig(opts))
	return *rec.errs
}

// Error is one failure of the suite.
type Error struct {
	// Test is the subtest TestBackend reports the failure in, e.g.
	// "golden/vector_add".
	Test string
	// Msg is the failure's message, op, params and seed first.
	Msg string
}

// Error returns the message, without the subtest: the text
// `npuverify check` prints for a golden case.
func (e *Error) Error() string { return e.Msg }

// Option scopes or shortens the suite.
type Option func(*config)

// Ops limits the suite to the named ops, for a library that implements
// only some of them. An unknown name is a failure of the suite.
func Ops(names ...string) Option {
	return func(c *config) { c.ops = append(c.ops, names...) }
}

// Cases limits the suite to the cases keep accepts: the golden cases and
// the cases the properties and robustness checks run. It scopes finer
// than Ops, to the modes or dtypes an implementation supports; a case's
// Params may leave a param at its default out. Several Cases options must
// all accept a case.
func Cases(keep func(ops.Case) bool) Option {
	return func(c *config) { c.keep = append(c.keep, keep) }
}

// Short runs the short suite, as go test -short does for TestBackend.
func Short() Option {
	return func(c *config) { c.short = true }
}

// config is the suite's scope, from the options.
type config struct {
	ops   []string // nil: every registered op
	keep  []func(ops.Case) bool
	short bool
}

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	return c
}

// scopeOps returns the ops in scope, sorted, or an error naming an op
// that no contract has.
func (c *config) scopeOps() ([]string, error) {
	if c.ops == nil {
		return ops.Names(), nil
	}
	var names []string
	for _, name := range c.ops {
		if _, err := ops.Lookup(name); err != nil {
			return nil, fmt.Errorf("backendtest: Ops: %w", err)
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// inScope reports whether the options keep c (its op is in scope: the
// caller checks that).
func (c *config) inScope(cs ops.Case) bool {
	for _, keep := range c.keep {
		if !keep(cs) {
			return false
		}
	}
	return true
}

// run is the suite body: each concern a subtest of t, each op a subtest
// of its concern. The golden outcomes feed the concerns after it, which
// compare against or read what the golden run produced.
func run(ctx context.Context, t reporter, b backend.Backend, cfg *config) {
	t.Helper()
	names, err := cfg.scopeOps()
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	var g goldenRun
	t.Run("golden", func(t reporter) { g = checkGolden(ctx, t, b, cfg, names) })
	t.Run("deterministic", func(t reporter) { checkDeterministic(ctx, t, b, cfg, names, g) })
	t.Run("properties", func(t reporter) { checkProperties(ctx, t, b, cfg, names, g) })
	t.Run("robustness", func(t reporter) { checkRobustness(ctx, t, b, names, g) })
}

// reporter is what the suite body needs of a test: *testing.T for
// TestBackend (testT), a recorder of errors for Check. The body reports
// from one goroutine at a time per subtest, but a recorder's subtests
// share one list, so it locks.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Logf(format string, args ...any)
	// Skipf says why a subtest has nothing to check; the body returns
	// right after it (on a *testing.T it does not return).
	Skipf(format string, args ...any)
	Run(name string, f func(reporter))
}

// testT is a *testing.T as a reporter.
type testT struct{ *testing.T }

func (t testT) Run(name string, f func(reporter)) {
	t.T.Run(name, func(t *testing.T) { f(testT{t}) })
}

// recorder collects failures as *Error, named by subtest path.
type recorder struct {
	name string
	mu   *sync.Mutex
	errs *[]error
}

func (r *recorder) Helper()              {}
func (r *recorder) Logf(string, ...any)  {}
func (r *recorder) Skipf(string, ...any) {}
func (r *recorder) Run(name string, f func(reporter)) {
	sub := *r
	sub.name = path.Join(r.name, name)
	f(&sub)
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*r.errs = append(*r.errs, &Error{Test: r.name, Msg: fmt.Sprintf(format, args...)})
}
