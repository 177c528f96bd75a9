package backend

import (
	"context"
	"errors"
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/opdb"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Emulator is the built-in backend: it runs each operator's kernel from
// package npu/kernels on an emulated device, so its outputs follow the
// device profile's numerics bit-exactly and it reports a modeled Cost.
// Options can switch on injected faults (WithFaults) or a valid kernel
// variant (WithVariant) for the mutation score. It is safe for concurrent
// use.
type Emulator struct {
	prof    npu.Profile
	dev     *npu.Device
	err     error // profile validation error, reported by Run
	faults  npu.Faults
	variant kernels.Variant
	opts    []Option
}

// Option configures an Emulator.
type Option func(*Emulator)

// WithFaults switches on faults from the ops' fault catalogues
// (opdb.Info.Faults): every Run injects them.
func WithFaults(faults ...npu.Fault) Option {
	return func(e *Emulator) { e.faults = npu.NewFaults(append(e.faults.List(), faults...)...) }
}

// WithVariant runs v.Op's kernel as the valid variant v (another tiling,
// core count or summation order); other ops run their default kernels.
func WithVariant(v kernels.Variant) Option {
	return func(e *Emulator) { e.variant = v }
}

// NewEmulator returns an emulator backend for prof. An invalid profile is
// reported by every Run (check it up front with prof.Validate).
func NewEmulator(prof npu.Profile, opts ...Option) *Emulator {
	dev, err := npu.NewDevice(prof)
	e := &Emulator{prof: prof, dev: dev, err: err, opts: opts}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Faults returns the faults the emulator injects (empty for a correct one).
func (e *Emulator) Faults() npu.Faults { return e.faults }

// Variant returns the kernel variant the emulator runs.
func (e *Emulator) Variant() kernels.Variant { return e.variant }

var _ Trimmer = (*Emulator)(nil)

// Trim drops the device memories the emulator keeps for its next run.
func (e *Emulator) Trim() {
	if e.dev != nil {
		e.dev.Trim()
	}
}

// Name returns "emulator".
func (e *Emulator) Name() string { return "emulator" }

// Profile returns the emulated device profile, whose Numerics the
// harness needs to compute expectations.
func (e *Emulator) Profile() npu.Profile { return e.prof }

// Device returns the emulated device (nil if the profile is invalid).
func (e *Emulator) Device() *npu.Device { return e.dev }

// Run dispatches op to its registered kernel, with the emulator's faults
// and variant on the context. When a kernel wrote outside its outputs
// (a guard band, *npu.GuardError) or into its inputs, Run returns the
// outputs and the cost together with the wrapped error, so the caller can
// judge the outputs and report the guard or the input (harness.RunPrepared
// does). The inputs themselves are never changed: they are copy-on-write
// in the emulated GM (npu.CopyOnWrite), so a kernel that writes an input
// writes, and later reads, a copy, and the write is reported as an
// *InputsModifiedError.
func (e *Emulator) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	if e.err != nil {
		return nil, nil, fmt.Errorf("emulator: %w", e.err)
	}
	info, err := opdb.Lookup(op)
	if err != nil {
		return nil, nil, fmt.Errorf("emulator: %w", err)
	}
	ctx = npu.WithFaults(ctx, e.faults)
	if e.variant.Options != nil {
		ctx = kernels.WithVariant(ctx, e.variant)
	}
	cow := npu.NewCopyOnWrite(in)
	out, cost, err := info.Kernel(npu.WithCopyOnWrite(ctx, cow), e.dev, p, in)
	var guard *npu.GuardError
	if err != nil && !(errors.As(err, &guard) && out != nil) {
		return nil, nil, fmt.Errorf("emulator: %w", err)
	}
	if written := cow.Written(); written != nil {
		err = errors.Join(err, &InputsModifiedError{Inputs: written})
	}
	if err != nil {
		return out, cost, fmt.Errorf("emulator: %w", err)
	}
	return out, cost, nil
}

// GuardsInputs reports true: a kernel's DMA writes into its inputs go to
// copies (npu.CopyOnWrite) and come back as an *InputsModifiedError.
func (e *Emulator) GuardsInputs() bool { return true }

var _ InputGuard = (*Emulator)(nil)

// Numerics returns the numerics profile the emulator computes under.
func (e *Emulator) Numerics() tensor.Numerics { return e.prof.Numerics }

// WithNumerics returns an emulator of the same device, options included,
// under numerics num: e itself when it already computes under num (its
// device keeps its pooled memories, see npu.memPool).
func (e *Emulator) WithNumerics(num tensor.Numerics) Backend {
	if num == e.prof.Numerics {
		return e
	}
	p := e.prof
	p.Numerics = num
	return NewEmulator(p, e.opts...)
}
