package harness_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// fakeBackend is a vector_add "kernel" whose behaviour a test sets: it
// computes z correctly (in float64, rounded once) and then applies mutate.
type fakeBackend struct {
	mutate func(in, out map[string]*tensor.Tensor)
	err    error
}

func (f *fakeBackend) Name() string { return "fake" }

func (f *fakeBackend) Run(_ context.Context, _ string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	if f.err != nil {
		return nil, nil, f.err
	}
	x, y := in["x"], in["y"]
	z := tensor.MustNew(x.DType, x.Shape...)
	for i := 0; i < x.Len(); i++ {
		z.SetFloat64(i, x.Float64(i)+y.Float64(i), tensor.Numerics{})
	}
	out := map[string]*tensor.Tensor{"z": z}
	if f.mutate != nil {
		f.mutate(in, out)
	}
	return out, nil, nil
}

var fp16Case = ops.Case{Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Dims: map[string]int{"n": 100}, Dist: ops.DistNormal, Seed: 9}

func TestRunPassesACorrectBackend(t *testing.T) {
	res, err := harness.Run(context.Background(), &fakeBackend{}, fp16Case, harness.Options{})
	if err != nil || !res.Pass() {
		t.Fatalf("%s: Run = %v, %v, want a passing result", harness.Subject(fp16Case), err, res.Verify.Failure())
	}
}

func TestRunFlagsModifiedInputs(t *testing.T) {
	b := &fakeBackend{mutate: func(in, _ map[string]*tensor.Tensor) { in["y"].SetBits(7, 0) }}
	res, err := harness.Run(context.Background(), b, fp16Case, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Pass() || !strings.Contains(res.Verify.Failure(), `input "y" was modified`) {
		t.Errorf("%s: a backend that writes its input passed or was misreported:\n%s", harness.Subject(fp16Case), res.Verify.Failure())
	}
}

// guardingBackend is a fakeBackend that claims to guard its inputs
// (backend.InputGuard) and records the input tensors it was handed.
type guardingBackend struct {
	fakeBackend
	got map[string]*tensor.Tensor
}

func (g *guardingBackend) GuardsInputs() bool { return true }

func (g *guardingBackend) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	g.got = in
	return g.fakeBackend.Run(ctx, op, p, in)
}

// A backend that guards its inputs is handed the case's own tensors; any
// other gets copies.
func TestRunCopiesInputsUnlessGuarded(t *testing.T) {
	pc, err := harness.Prepare(fp16Case)
	if err != nil {
		t.Fatal(err)
	}
	g := &guardingBackend{}
	if _, err := harness.RunPrepared(context.Background(), g, pc, harness.Options{}); err != nil {
		t.Fatal(err)
	}
	var plain map[string]*tensor.Tensor
	f := &fakeBackend{mutate: func(in, _ map[string]*tensor.Tensor) { plain = in }}
	if _, err := harness.RunPrepared(context.Background(), f, pc, harness.Options{}); err != nil {
		t.Fatal(err)
	}
	for name, x := range pc.Inputs {
		if g.got[name] != x {
			t.Errorf("%s: a guarding backend got a copy of input %q, want the tensor itself", harness.Subject(fp16Case), name)
		}
		if plain[name] == x || plain[name] == nil {
			t.Errorf("%s: a backend that does not guard its inputs got input %q itself (or nothing), want a copy", harness.Subject(fp16Case), name)
		}
	}
}

// A backend that claims to guard its inputs and writes one anyway fails
// the inputs-unchanged check, and the case, whose inputs are lost, cannot
// run again.
func TestRunCatchesABrokenInputGuard(t *testing.T) {
	pc, err := harness.Prepare(fp16Case)
	if err != nil {
		t.Fatal(err)
	}
	g := &guardingBackend{fakeBackend: fakeBackend{mutate: func(in, _ map[string]*tensor.Tensor) { in["y"].SetBits(7, 0) }}}
	res, err := harness.RunPrepared(context.Background(), g, pc, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Verify.Failure(); res.Pass() || !strings.Contains(f, harness.CheckInputsUnchanged) || !strings.Contains(f, `input "y" was modified by the backend, which claims to guard its inputs`) {
		t.Errorf("%s: a guarding backend that writes its input passed or was misreported:\n%s", harness.Subject(fp16Case), f)
	}
	if _, err := harness.RunPrepared(context.Background(), &fakeBackend{}, pc, harness.Options{}); err == nil || !harness.IsBackend(err) || !strings.Contains(err.Error(), "prepare it again") {
		t.Errorf("%s: a second run of the spoiled case: error %v, want a backend error", harness.Subject(fp16Case), err)
	}
}

func TestRunFailsAWrongResult(t *testing.T) {
	b := &fakeBackend{mutate: func(_, out map[string]*tensor.Tensor) { out["z"].SetFloat64(3, 1000, tensor.Numerics{}) }}
	res, err := harness.Run(context.Background(), b, fp16Case, harness.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Verify.Failure(); res.Pass() || !strings.HasPrefix(f, "vector_add dtype=fp16 seed=9") || !strings.Contains(f, "[3]") {
		t.Errorf("%s: wrong z[3] passed or the report lacks subject and index:\n%s", harness.Subject(fp16Case), f)
	}
}

func TestRunErrorClasses(t *testing.T) {
	for _, tt := range []struct {
		name      string
		b         *fakeBackend
		c         ops.Case
		isInput   bool
		isBackend bool
		want      string
	}{
		{"backend error", &fakeBackend{err: errors.New("device lost")}, fp16Case, false, true, "device lost"},
		{"missing output", &fakeBackend{mutate: func(_, out map[string]*tensor.Tensor) { delete(out, "z") }}, fp16Case, false, true, `output "z" is missing`},
		{"wrong dtype", &fakeBackend{mutate: func(_, out map[string]*tensor.Tensor) { out["z"] = tensor.MustNew(tensor.Float32, 100) }}, fp16Case, false, true, `output "z": dtype fp32, want fp16`},
		{"wrong shape", &fakeBackend{mutate: func(_, out map[string]*tensor.Tensor) { out["z"] = tensor.MustNew(tensor.Float16, 99) }}, fp16Case, false, true, `output "z": shape [99], want [100]`},
		{"extra output", &fakeBackend{mutate: func(_, out map[string]*tensor.Tensor) { out["w"] = out["z"] }}, fp16Case, false, true, `unknown output "w"`},
		{"unknown op", &fakeBackend{}, ops.Case{Op: "nope"}, true, false, `unknown op "nope"`},
		{"bad param", &fakeBackend{}, ops.Case{Op: "vector_add", Params: ops.Params{"dtype": "fp8"}}, true, false, `param "dtype"`},
		{"unknown policy", &fakeBackend{}, func() ops.Case { c := fp16Case; c.Policy = "strict"; return c }(), true, false, "strict"},
		{"numerics the backend cannot set", &fakeBackend{}, func() ops.Case {
			c := fp16Case
			c.Numerics = &tensor.Numerics{Overflow: tensor.OverflowSaturate}
			return c
		}(), true, false, "cannot set"},
	} {
		_, err := harness.Run(context.Background(), tt.b, tt.c, harness.Options{})
		if err == nil || harness.IsInput(err) != tt.isInput || harness.IsBackend(err) != tt.isBackend || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %s: Run error = %v (input %v, backend %v), want input %v, backend %v, containing %q",
				tt.name, harness.Subject(tt.c), err, harness.IsInput(err), harness.IsBackend(err), tt.isInput, tt.isBackend, tt.want)
		}
	}
}

// An ascend-dual case is judged by ascend-dual whenever trusted outputs
// come with the run, as bits (Golden) or from the outputs (GoldenFor, a
// golden recipe), and by the bound it includes only without them.
func TestDualPolicyNeedsTrustedOutputs(t *testing.T) {
	c := fp16Case
	c.Policy = "ascend-dual"
	trusted := func(out map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
		return map[string]*tensor.Tensor{"z": out["z"].Clone()}, nil
	}
	for _, tt := range []struct {
		name string
		opt  harness.Options
		want string
	}{
		{"no trusted outputs", harness.Options{}, "bound"},
		{"GoldenFor", harness.Options{GoldenFor: trusted}, "ascend-dual"},
	} {
		res, err := harness.Run(context.Background(), &fakeBackend{}, c, tt.opt)
		if err != nil {
			t.Fatalf("%s %s: %v", harness.Subject(c), tt.name, err)
		}
		var got []string
		for _, o := range res.Verify.Outputs {
			for _, v := range o.Verdicts {
				got = append(got, v.Policy)
			}
		}
		if len(got) != 1 || got[0] != tt.want {
			t.Errorf("%s %s: judged by %v / want [%s]", harness.Subject(c), tt.name, got, tt.want)
		}
	}
}

// waitingBackend is a kernel that runs until its context ends and then
// fails with the context's error, as the emulator's launch does.
type waitingBackend struct{}

func (waitingBackend) Name() string { return "waiting" }

func (waitingBackend) Run(ctx context.Context, _ string, _ ops.Params, _ map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	<-ctx.Done()
	return nil, nil, ctx.Err()
}

// TestRunTimeout: Options.Timeout stops the run, and the backend error it
// caused ends "(timed out after D)" after the case's subject; a run that
// the caller cancels says nothing about a timeout.
func TestRunTimeout(t *testing.T) {
	_, err := harness.Run(context.Background(), waitingBackend{}, fp16Case, harness.Options{Timeout: 20 * time.Millisecond})
	if err == nil || !harness.IsBackend(err) || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.HasPrefix(err.Error(), harness.Subject(fp16Case).String()) || !strings.HasSuffix(err.Error(), "(timed out after 20ms)") {
		t.Errorf("%s: Run with Timeout 20ms on a kernel that waits = %v, want a backend error of the deadline ending \"(timed out after 20ms)\"", harness.Subject(fp16Case), err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	_, err = harness.Run(ctx, waitingBackend{}, fp16Case, harness.Options{Timeout: time.Minute})
	if err == nil || !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "timed out") {
		t.Errorf("%s: Run canceled by its caller under Timeout 1m = %v, want the cancellation, no timeout named", harness.Subject(fp16Case), err)
	}
}

// TestRunVerdictOnly: a run with VerdictOnly passes what a full run
// passes, with no metrics, and fails what it fails with the same report,
// word for word (a wrong element, a wrong sign of zero, a modified
// input).
func TestRunVerdictOnly(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(in, out map[string]*tensor.Tensor)
	}{
		{"correct", nil},
		{"wrong element", func(_, out map[string]*tensor.Tensor) { out["z"].SetFloat64(3, 1000, tensor.Numerics{}) }},
		{"next value", func(_, out map[string]*tensor.Tensor) { out["z"].SetBits(99, out["z"].Bits(99)+1) }},
		{"modified input", func(in, _ map[string]*tensor.Tensor) { in["y"].SetBits(7, 0) }},
	} {
		full, err1 := harness.Run(context.Background(), &fakeBackend{mutate: tt.mutate}, fp16Case, harness.Options{})
		quick, err2 := harness.Run(context.Background(), &fakeBackend{mutate: tt.mutate}, fp16Case, harness.Options{VerdictOnly: true})
		if err1 != nil || err2 != nil {
			t.Fatalf("%s (%s): Run = %v (full), %v (verdict only)", harness.Subject(fp16Case), tt.name, err1, err2)
		}
		if full.Pass() != (tt.mutate == nil) || quick.Pass() != full.Pass() {
			t.Errorf("%s (%s): pass = %v (verdict only), %v (full), want %v", harness.Subject(fp16Case), tt.name, quick.Pass(), full.Pass(), tt.mutate == nil)
		}
		if got, want := quick.Verify.Failure(), full.Verify.Failure(); got != want {
			t.Errorf("%s (%s): failure (verdict only) = %q, want (full) %q", harness.Subject(fp16Case), tt.name, got, want)
		}
		if m := quick.Verify.Outputs[0].Metrics; quick.Pass() && (m.N != 100 || m.MaxAbs != 0 || m.Tightness != 0) {
			t.Errorf("%s (%s): passing verdict-only metrics = %+v, want N = 100 and nothing computed", harness.Subject(fp16Case), tt.name, m)
		}
	}
}
