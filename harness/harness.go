// Package harness runs one verification case end to end: it generates
// the inputs from the case's seed, holds them to the op's contract, runs a
// backend, checks that the inputs came back untouched, that nothing was
// written past either end of an output (guard bands) and that the outputs
// match the contract, computes the reference and its per-element bounds,
// and hands everything to the verifier. Nothing flows back: the harness
// never adjusts a bound or a result.
package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/internal/panicguard"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// InputError is a case or input that does not satisfy the op's contract
// (CLI exit code 2).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// BackendError is a failure of the implementation under test to produce
// outputs at all: it crashed, timed out, or returned outputs that break
// the contract (CLI exit code 3).
type BackendError struct{ Err error }

func (e *BackendError) Error() string { return e.Err.Error() }
func (e *BackendError) Unwrap() error { return e.Err }

// IsInput reports whether err is (or wraps) an InputError.
func IsInput(err error) bool { var e *InputError; return errors.As(err, &e) }

// IsBackend reports whether err is (or wraps) a BackendError.
func IsBackend(err error) bool { var e *BackendError; return errors.As(err, &e) }

// The checks RunPrepared adds to the accuracy policies' verdicts, by the
// name their failures carry (verify.Verdict.Policy).
const (
	// CheckInputsUnchanged fails when the backend modified an input.
	CheckInputsUnchanged = "inputs-unchanged"
	// CheckGuardBand fails when the backend wrote outside an output (a
	// guard band around it; the emulator's outputs have them), reported
	// as a backend.Finding.
	CheckGuardBand = backend.CheckGuardBand
)

// NumericsBackend is a backend that can run under another numerics
// profile. The harness uses it for cases that override the profile.
type NumericsBackend interface {
	backend.Backend
	Numerics() tensor.Numerics
	WithNumerics(tensor.Numerics) backend.Backend
}

// Subject is how failure messages name case c: op, params, seed and name.
func Subject(c ops.Case) verify.Subject {
	return verify.Subject{Op: c.Op, Params: c.Params.String(), Seed: c.Seed, Case: c.Name}
}

// Prepared is a case whose params are validated (every default filled
// in, ops.CompleteParams) and inputs generated.
// Runs of it may be concurrent: a backend is handed its Inputs only when
// it guards them (backend.InputGuard), any other gets copies.
type Prepared struct {
	Case   ops.Case
	Op     ops.Op
	Params ops.Params
	Inputs map[string]*tensor.Tensor

	// spoiled is set when a backend that claims to guard its inputs
	// changed them: Inputs no longer hold the case's inputs, and every
	// later run fails instead of judging against them.
	spoiled atomic.Bool
}

// Prepare validates c and generates its inputs.
func Prepare(c ops.Case) (*Prepared, error) {
	op, p, err := validate(c)
	if err != nil {
		return nil, err
	}
	in, err := op.Generate(p, c.Gen())
	if err != nil {
		return nil, &InputError{err}
	}
	if err := ops.CheckInputs(op, p, in); err != nil {
		return nil, &InputError{fmt.Errorf("generated inputs: %w", err)}
	}
	if p, err = ops.CompleteParams(op, p, in); err != nil {
		return nil, &InputError{err}
	}
	return &Prepared{Case: c, Op: op, Params: p, Inputs: in}, nil
}

// validate looks up c's op and validates its params (defaults filled).
func validate(c ops.Case) (ops.Op, ops.Params, error) {
	op, err := ops.Lookup(c.Op)
	if err != nil {
		return nil, nil, &InputError{err}
	}
	p, err := op.Validate(c.Params)
	if err != nil {
		return nil, nil, &InputError{err}
	}
	return op, p, nil
}

// PrepareInputs validates c and takes in as its inputs instead of
// generating them (inputs read from a golden store, or cast by a caller
// from a source of its own). The inputs are held to the op's contract
// (ops.CheckInputs, reported as "inputs: ..."); every error is an
// *InputError.
func PrepareInputs(c ops.Case, in map[string]*tensor.Tensor) (*Prepared, error) {
	op, p, err := validate(c)
	if err != nil {
		return nil, err
	}
	if err := ops.CheckInputs(op, p, in); err != nil {
		return nil, &InputError{fmt.Errorf("inputs: %w", err)}
	}
	if p, err = ops.CompleteParams(op, p, in); err != nil {
		return nil, &InputError{err}
	}
	return &Prepared{Case: c, Op: op, Params: p, Inputs: in}, nil
}

// Result is everything one run produced.
type Result struct {
	Case     ops.Case
	Params   ops.Params // validated, defaults filled
	Numerics tensor.Numerics
	Inputs   map[string]*tensor.Tensor
	Outputs  map[string]*tensor.Tensor
	Expected map[string]*bound.Expected
	// Measurement is what the backend measured of the run (kernel times,
	// a modelled cost, memory-safety findings); nil when nothing.
	Measurement *backend.Measurement
	Verify      *verify.Result
}

// Pass reports whether every check passed.
func (r *Result) Pass() bool { return r.Verify != nil && r.Verify.Pass }

// Options configure Run.
type Options struct {
	// Numerics is the profile the backend computes under when the case does
	// not override it; backends that know their own (NumericsBackend) win.
	Numerics tensor.Numerics
	// Policies judge every output; empty means the case's policy (or bound).
	Policies []verify.Policy
	// Golden holds expected output bits for the exact policy; may be nil.
	Golden map[string]*tensor.Tensor
	// GoldenFor, when set, supplies Golden instead, after the backend has
	// run and its outputs hold to the contract, before any verdict: a
	// golden recipe records only the sha256 of its expected outputs, so
	// their bits are known once the outputs can be compared with those
	// hashes (golden/recipe.go). An error is an input error.
	GoldenFor func(out map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error)
	// Stream lets the run judge an output a block at a time
	// (ops.BlockExpecter, verify.Stream) when its op can produce its
	// Expected so and every policy judges by the metrics alone
	// (verify.MetricsOnly) with no golden outputs: the whole Expected, 17
	// bytes an element for a GEMM, is then never held. The verdicts are
	// the same; Result.Expected is nil for such a run.
	Stream bool
	// VerdictOnly judges with verify.CheckVerdicts, for a caller that
	// reads the verdicts and not the metrics of what passes (a fuzzer):
	// an output the bound policy accepts carries no metrics, what fails
	// is reported as without it. It has no effect on a streamed run.
	VerdictOnly bool
	// Timeout, when positive, bounds the run: its context gets that
	// deadline, and an error the deadline caused ends "(timed out after
	// Timeout)", so that an emulator stopped mid-launch says why.
	Timeout time.Duration
	// Ran, when set, is called with the backend's outputs, held to the
	// contract, and its measurement once the backend has run, before the
	// outputs are judged: the tensors Result.Outputs returns, which the
	// judgement only reads and Ran must not change. run writes its output
	// files from it while the outputs are judged.
	Ran func(out map[string]*tensor.Tensor, meas *backend.Measurement)
	// StepTimeout, when positive, bounds the harness's own long step on
	// its own deadline: computing the reference and judging the outputs
	// (pure float64 loops that take no context, so the run stops waiting
	// for them and they finish in the background). It is for callers
	// whose backend times itself (exec, worker: Timeout 0), so that the
	// reference of a huge case still ends within --timeout.
	StepTimeout time.Duration
}

// Run prepares c and runs it on b. See RunPrepared.
func Run(ctx context.Context, b backend.Backend, c ops.Case, opt Options) (*Result, error) {
	pc, err := Prepare(c)
	if err != nil {
		return nil, err
	}
	return RunPrepared(ctx, b, pc, opt)
}

// RunPrepared runs a prepared case on b and verifies the outputs. An error
// is returned only when the case could not be judged (bad case, backend
// failure); an inaccurate result is a Result whose Verify does not pass.
// Besides the accuracy policies, every run checks that the inputs came
// back bit-identical (CheckInputsUnchanged: a backend that guards its
// inputs, the emulator or exec, reports a kernel's writes into them as a
// backend.InputsModifiedError, and any other is handed copies to compare),
// the op's output invariants when it has any (ops.OutputInvariants: e.g.
// every cache element a KV update must not write is bit-identical) and
// fails each memory-safety finding the backend reports (backend.Finding:
// CheckGuardBand on each output whose guard band was written).
// opt.Timeout bounds it.
func RunPrepared(ctx context.Context, b backend.Backend, pc *Prepared, opt Options) (*Result, error) {
	if opt.Timeout <= 0 {
		return runPrepared(ctx, b, pc, opt)
	}
	tctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	res, err := runPrepared(tctx, b, pc, opt)
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("%w (timed out after %s)", err, opt.Timeout)
	}
	return res, err
}

// runPrepared is RunPrepared within whatever deadline ctx has. Each step
// is a function of its own: choose the backend's numerics and the
// policies, run the backend and hold what it returned to the contract,
// judge the outputs, then add the checks every run makes besides the
// policies.
func runPrepared(ctx context.Context, b backend.Backend, pc *Prepared, opt Options) (*Result, error) {
	c := pc.Case
	b, num, err := withCaseNumerics(b, c, opt.Numerics)
	if err != nil {
		return nil, err
	}
	policies, err := policiesFor(c, opt)
	if err != nil {
		return nil, err
	}
	ran, err := runBackend(ctx, b, pc)
	if err != nil {
		return nil, err
	}
	if opt.Ran != nil {
		opt.Ran(ran.out, ran.meas)
	}
	exp, vr, err := judgeWithin(ctx, pc, ran.out, num, policies, opt)
	if err != nil {
		return nil, err
	}
	for _, ch := range ran.changed {
		vr.AddFailure(ch.Input, CheckInputsUnchanged, ch.Reason)
	}
	if iv, ok := pc.Op.(ops.OutputInvariants); ok {
		for _, v := range iv.CheckOutputs(pc.Params, pc.Inputs, ran.out, num) {
			vr.AddFailure(v.Output, v.Check, v.Reason)
		}
	}
	if ran.meas != nil {
		for _, f := range ran.meas.Findings {
			vr.AddFailure(f.Output, f.Check, f.Message)
		}
	}
	return &Result{Case: c, Params: pc.Params, Numerics: num, Inputs: pc.Inputs, Outputs: ran.out, Expected: exp, Measurement: ran.meas, Verify: vr}, nil
}

// withCaseNumerics returns the backend to run c on and the numerics it
// computes under: the backend's own when it knows them
// (NumericsBackend), else num; a case that overrides the numerics gets a
// backend under its numerics, or an input error when b cannot set them.
func withCaseNumerics(b backend.Backend, c ops.Case, num tensor.Numerics) (backend.Backend, tensor.Numerics, error) {
	nb, settable := b.(NumericsBackend)
	if settable {
		num = nb.Numerics()
	}
	if c.Numerics == nil {
		return b, num, nil
	}
	if !settable {
		return nil, num, &InputError{fmt.Errorf("%s: case needs numerics %s, which backend %s cannot set", Subject(c), *c.Numerics, b.Name())}
	}
	return nb.WithNumerics(*c.Numerics), *c.Numerics, nil
}

// policiesFor returns the policies a run judges c by: opt.Policies, else
// the case's own (the bound when it names none).
func policiesFor(c ops.Case, opt Options) ([]verify.Policy, error) {
	if len(opt.Policies) > 0 {
		return opt.Policies, nil
	}
	name := orDefault(c.Policy, "bound")
	if name == dualPolicy && opt.Golden == nil && opt.GoldenFor == nil {
		// ascend-dual is the bound plus a comparison with trusted outputs
		// (a golden store's expected bits); a case run without them, a
		// fresh case or the recording run itself, is judged by the bound
		// it includes.
		name = "bound"
	}
	pol, err := verify.ParsePolicy(name)
	if err != nil {
		return nil, &InputError{fmt.Errorf("%s: %w", Subject(c), err)}
	}
	return []verify.Policy{pol}, nil
}

// judge computes the expected outputs of pc and the policies' verdicts on
// out: a block at a time, without the whole Expected, when the run
// streams (Options.Stream), else whole, against the golden outputs when
// opt supplies them.
func judge(pc *Prepared, out map[string]*tensor.Tensor, num tensor.Numerics, policies []verify.Policy, opt Options) (map[string]*bound.Expected, *verify.Result, error) {
	s := Subject(pc.Case)
	if be, ok := streams(pc.Op, policies, opt); ok {
		metrics, err := streamMetrics(be, pc.Params, pc.Inputs, out, num)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s, err)
		}
		vr, err := verify.CheckMetrics(s, out, metrics, policies)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s, err)
		}
		return nil, vr, nil
	}
	exp, err := ops.ExpectFor(pc.Op, pc.Params, pc.Inputs, out, num)
	if err != nil {
		return nil, nil, &InputError{fmt.Errorf("%s: %w", s, err)}
	}
	gold := opt.Golden
	if opt.GoldenFor != nil {
		if gold, err = opt.GoldenFor(out); err != nil {
			return nil, nil, &InputError{fmt.Errorf("%s: %w", s, err)}
		}
	}
	check := verify.Check
	if opt.VerdictOnly {
		check = verify.CheckVerdicts
	}
	vr, err := check(s, out, exp, gold, policies)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", s, err)
	}
	return exp, vr, nil
}

// judgeWithin is judge under ctx and opt.StepTimeout: when either ends
// first, the run returns the deadline's error, naming the step, and the
// reference goes on in the background until it finishes (it takes no
// context), its result dropped. Without a deadline judge runs inline.
func judgeWithin(ctx context.Context, pc *Prepared, out map[string]*tensor.Tensor, num tensor.Numerics, policies []verify.Policy, opt Options) (map[string]*bound.Expected, *verify.Result, error) {
	sctx := ctx
	if opt.StepTimeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeout(ctx, opt.StepTimeout)
		defer cancel()
	}
	if sctx.Done() == nil {
		return judge(pc, out, num, policies, opt)
	}
	type judged struct {
		exp map[string]*bound.Expected
		vr  *verify.Result
		err error
	}
	done := make(chan judged, 1)
	var crash panicguard.Catcher // a panic in judge, raised again here
	go func() {
		var j judged
		defer func() { done <- j }()
		defer crash.Catch()
		j.exp, j.vr, j.err = judge(pc, out, num, policies, opt)
	}()
	select {
	case j := <-done:
		crash.Rethrow()
		return j.exp, j.vr, j.err
	case <-sctx.Done():
		err := fmt.Errorf("%s: computing the reference and judging the outputs: %w", Subject(pc.Case), sctx.Err())
		if ctx.Err() == nil {
			err = fmt.Errorf("%w (timed out after %s)", err, opt.StepTimeout)
		}
		return nil, nil, err
	}
}

// streams returns op as a BlockExpecter when a run with opt and policies
// judges its outputs a block at a time (Options.Stream).
func streams(op ops.Op, policies []verify.Policy, opt Options) (ops.BlockExpecter, bool) {
	be, ok := op.(ops.BlockExpecter)
	if !opt.Stream || !ok || opt.Golden != nil || opt.GoldenFor != nil {
		return nil, false
	}
	if _, judge := op.(ops.OutputJudge); judge {
		return nil, false
	}
	for _, p := range policies {
		if !verify.MetricsOnly(p) {
			return nil, false
		}
	}
	return be, true
}

// streamMetrics computes the metrics of every output of out from the
// blocks of its Expected. An error from the op's Expect is an
// *InputError, as Expect's is.
func streamMetrics(be ops.BlockExpecter, p ops.Params, in, out map[string]*tensor.Tensor, num tensor.Numerics) (map[string]verify.Metrics, error) {
	st := map[string]*verify.Stream{}
	var internal error
	err := be.ExpectBlocks(p, in, num, func(name string, e *bound.Expected) error {
		s, ok := st[name]
		if !ok {
			t := out[name]
			if t == nil {
				internal = fmt.Errorf("expected blocks of output %q, which the backend did not return", name)
				return internal
			}
			s = verify.NewStream(t)
			st[name] = s
		}
		if err := s.Add(e); err != nil {
			internal = fmt.Errorf("output %q: %w", name, err)
			return internal
		}
		return nil
	})
	switch {
	case internal != nil:
		return nil, internal
	case err != nil:
		return nil, &InputError{err}
	}
	metrics := make(map[string]verify.Metrics, len(st))
	for name, s := range st {
		m, err := s.Metrics()
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", name, err)
		}
		metrics[name] = m
	}
	return metrics, nil
}

// CheckOutputs holds out to op's output contract for params p and inputs
// in: every output the contract lists is present with exactly its dtype
// and shape, and there is no other. It is the one output-contract check:
// RunPrepared holds a backend's outputs to it (a breach is the backend's
// failure), golden holds a store's expected outputs to it (a breach is
// the store's). Errors name the op and the output; unknown outputs are
// reported in name order.
func CheckOutputs(op ops.Op, p ops.Params, in, out map[string]*tensor.Tensor) error {
	specs, err := op.Outputs(p, in)
	if err != nil {
		return err
	}
	for _, s := range specs {
		t, ok := out[s.Name]
		switch {
		case !ok || t == nil:
			return fmt.Errorf("%s: output %q is missing", op.Name(), s.Name)
		case t.DType != s.DType:
			return fmt.Errorf("%s: output %q: dtype %s, want %s", op.Name(), s.Name, t.DType, s.DType)
		case !t.SameShape(s.Shape):
			return fmt.Errorf("%s: output %q: shape %v, want %v", op.Name(), s.Name, t.Shape, s.Shape)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if !slices.ContainsFunc(specs, func(s ops.TensorSpec) bool { return s.Name == name }) {
			return fmt.Errorf("%s: unknown output %q", op.Name(), name)
		}
	}
	return nil
}

// dualPolicy is the policy that needs trusted outputs (Options.Golden).
const dualPolicy = "ascend-dual"

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
