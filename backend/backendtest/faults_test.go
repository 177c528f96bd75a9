package backendtest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/backendtest"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// A backend with an injected fault fails the suite, and each failing
// golden case reads exactly as `npuverify check` reports it: the messages
// are the outcomes' Failure, in case order, nothing added or left out.
func TestFailuresReadAsCheck(t *testing.T) {
	b := emulator.New(npu.Ascend910B(), emulator.WithFaults(kernels.FaultVectorAddTailDropped))
	errs := backendtest.Check(t.Context(), b, backendtest.Ops("vector_add"), backendtest.Short())
	got := messages(errs, "golden/vector_add")
	outcomes, err := golden.Check(t.Context(), golden.Embedded().WithRecorder(emulator.Recorder()), b, golden.CheckOptions{Op: "vector_add", Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range outcomes {
		if o := &outcomes[i]; !o.Pass() {
			want = append(want, o.Failure())
		}
	}
	if len(want) == 0 {
		t.Fatalf("%s: no golden case of vector_add fails; the test needs a fault the golden cases catch", kernels.FaultVectorAddTailDropped)
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d failures reported under golden/vector_add, want %d (the failing cases of npuverify check)", kernels.FaultVectorAddTailDropped, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Errorf("%s: failure %d:\ngot  %s\nwant %s", kernels.FaultVectorAddTailDropped, i, got[i], want[i])
		}
	}
	startWithOp(t, errs, "vector_add")
}

// Each concern of the suite catches a backend at fault in what it alone
// checks: bits a bound accepts (−0 for +0), relations between runs,
// nondeterminism and concurrency within the bound, reading past a
// sequence, inputs written, and calls a backend cannot serve.
func TestFaultsFail(t *testing.T) {
	emu := emulator.New(npu.Ascend910B())
	short := backendtest.Short()
	for _, tc := range []struct {
		name string
		b    backend.Backend
		op   string
		full bool   // the full suite, for what only it checks
		test string // the subtest that must fail
		want string // a phrase of its failure
	}{
		{"kv_update-padding-negative-zero", negZero{emu, "kv_update", "new_k"}, "kv_update", false, "properties/kv_update", "padding entries (seq_id −1) are not +0"},
		{"vector_add-y-read-as-x", renamed{emulator.New(npu.Ascend910B(), emulator.WithFaults(kernels.FaultVectorAddYReadAsX)), "y-as-x"}, "vector_add", false, "properties/vector_add", "x+y = y+x: with x and y swapped"},
		{"decode_attention-reads-past-seq-len", emulator.New(npu.Ascend910B(), emulator.WithFaults(kernels.FaultDecodeAttentionReadsPastSeqLen)), "decode_attention", false, "properties/decode_attention", "cache rows no sequence reads set to random bits"},
		{"sparse24_prune-index-16-bit", renamed{emulator.New(npu.Ascend910B(), emulator.WithFaults(kernels.FaultSparse24PruneIndex16Bit)), "index16"}, "sparse24_prune", false, "properties/sparse24_prune", "rows and groups of four permuted"},
		{"vector_add-clobbers-input", clobber{emu}, "vector_add", false, "golden/vector_add", "inputs-unchanged"},
		{"gemm-nondeterministic", &alternating{a: emu, b: variant(t, "gemm", "summation-order")}, "gemm", true, "deterministic/gemm", "nondeterministic: output \"out\""},
		{"gemm-unsafe-concurrently", &overlapping{a: emu, b: variant(t, "gemm", "summation-order")}, "gemm", false, "deterministic/gemm", "of a run concurrent with other cases differs bitwise from a serial run"},
		{"vector_add-ignores-cancel", ignoresCancel{emu}, "vector_add", false, "robustness/cancelled/vector_add", "want an error and no outputs"},
		{"unknown-op-served", servesUnknown{emu}, "vector_add", false, "robustness/unknown-op", "got 0 outputs and no error"},
		{"unknown-op-panics", panicsUnknown{emu}, "vector_add", false, "robustness/unknown-op", "got a panic: no kernel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []backendtest.Option{backendtest.Ops(tc.op)}
			if !tc.full {
				opts = append(opts, short)
			}
			errs := backendtest.Check(t.Context(), tc.b, opts...)
			found := false
			for _, m := range messages(errs, tc.test) {
				found = found || strings.Contains(m, tc.want)
			}
			if !found {
				t.Errorf("%s: no failure under %s contains %q; the suite reported:\n%s", tc.name, tc.test, tc.want, summary(errs))
			}
			startWithOp(t, errs, tc.op)
		})
	}
}

// A correct backend under another name is judged by each case's accuracy
// policy instead of the stored bits, and still passes everything.
func TestRenamedEmulatorPasses(t *testing.T) {
	errs := backendtest.Check(t.Context(), renamed{emulator.New(npu.Ascend910B()), "renamed"}, backendtest.Short())
	if len(errs) > 0 {
		t.Errorf("the emulator under another name: %d failures, want none:\n%s", len(errs), summary(errs))
	}
}

// messages are the messages of the errors reported under test.
func messages(errs []error, test string) []string {
	var ms []string
	for _, err := range errs {
		if e, ok := err.(*backendtest.Error); ok && e.Test == test {
			ms = append(ms, e.Msg)
		}
	}
	return ms
}

// summary lists errs, each with its subtest, for a test's failure.
func summary(errs []error) string {
	var b strings.Builder
	for _, err := range errs {
		e := err.(*backendtest.Error)
		b.WriteString(e.Test + ": " + e.Msg + "\n")
	}
	return b.String()
}

// startWithOp fails t for every message that does not start with op: the
// suite names op, params and seed first.
func startWithOp(t *testing.T, errs []error, op string) {
	t.Helper()
	for _, err := range errs {
		if !strings.HasPrefix(err.Error(), op+" ") && !strings.HasPrefix(err.Error(), op+"/") && !strings.HasPrefix(err.Error(), "backendtest_no_such_op ") {
			t.Errorf("failure does not start with the op %s: %s", op, err)
		}
	}
}

// variant is an emulator running op's valid variant name: other bits,
// inside the bound.
func variant(t *testing.T, op, name string) backend.Backend {
	t.Helper()
	info, err := opdb.Lookup(op)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range info.Variants {
		if v.Name == name {
			return emulator.New(npu.Ascend910B(), emulator.WithVariant(v))
		}
	}
	t.Fatalf("%s has no variant %q", op, name)
	return nil
}

// renamed is a backend under another name: not the emulator that recorded
// the golden store, so judged by each case's accuracy policy. It sets
// numerics as the backend does, for the cases that override them.
type renamed struct {
	harness.NumericsBackend
	name string
}

func (r renamed) Name() string { return r.name }

func (r renamed) WithNumerics(num tensor.Numerics) backend.Backend {
	return renamed{r.NumericsBackend.WithNumerics(num).(harness.NumericsBackend), r.name}
}

// negZero returns −0 wherever op's output holds +0: a sign no bound sees.
type negZero struct {
	backend.Backend
	op, output string
}

func (negZero) Name() string { return "negative-zero" }

func (b negZero) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	out, m, err := b.Backend.Run(ctx, op, p, in)
	if z := out[b.output]; op == b.op && err == nil && z != nil && z.DType.IsFloat() {
		sign := uint64(1) << (8*z.DType.Size() - 1)
		for i := range z.Len() {
			if z.Bits(i) == 0 {
				z.SetBits(i, sign)
			}
		}
	}
	return out, m, err
}

// clobber writes into its input x after the kernel ran.
type clobber struct{ backend.Backend }

func (clobber) Name() string { return "clobber" }

func (b clobber) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	out, m, err := b.Backend.Run(ctx, op, p, in)
	if x := in["x"]; x != nil && x.Len() > 0 {
		x.SetBits(0, x.Bits(0)^1)
	}
	return out, m, err
}

// alternating runs a and b by turns: every run is right, two runs of a
// case may differ.
type alternating struct {
	a, b backend.Backend
	n    atomic.Int64
}

func (*alternating) Name() string { return "alternating" }

func (f *alternating) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if f.n.Add(1)%2 == 0 {
		return f.b.Run(ctx, op, p, in)
	}
	return f.a.Run(ctx, op, p, in)
}

// overlapping runs a, and b instead when another run started while it
// ran: right every time, different when not alone.
type overlapping struct {
	a, b    backend.Backend
	started atomic.Int64
}

func (*overlapping) Name() string { return "overlapping" }

func (f *overlapping) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	n := f.started.Add(1)
	out, m, err := f.a.Run(ctx, op, p, in)
	if f.started.Load() != n {
		return f.b.Run(ctx, op, p, in)
	}
	return out, m, err
}

// ignoresCancel runs whatever its context says.
type ignoresCancel struct{ backend.Backend }

func (ignoresCancel) Name() string { return "ignores-cancel" }

func (b ignoresCancel) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	return b.Backend.Run(context.WithoutCancel(ctx), op, p, in)
}

// servesUnknown answers an op no contract names with no outputs and no
// error.
type servesUnknown struct{ backend.Backend }

func (servesUnknown) Name() string { return "serves-unknown" }

func (b servesUnknown) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if _, err := ops.Lookup(op); err != nil {
		return map[string]*tensor.Tensor{}, nil, nil
	}
	return b.Backend.Run(ctx, op, p, in)
}

// panicsUnknown panics on an op no contract names.
type panicsUnknown struct{ backend.Backend }

func (panicsUnknown) Name() string { return "panics-unknown" }

func (b panicsUnknown) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if _, err := ops.Lookup(op); err != nil {
		panic("no kernel for " + op)
	}
	return b.Backend.Run(ctx, op, p, in)
}
