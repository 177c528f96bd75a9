// Package emulator is the built-in backend: the emulated NPU (package npu)
// running each op's kernel from package npu/kernels, found through the
// op's record in package opdb. It converts what the device reports into
// the backend-neutral terms of package backend (a Measurement with a
// Model, guard-band writes as Findings), so the core that judges it knows
// nothing of the device.
package emulator

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/npuverify/npuverify/backend"
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

// New returns an emulator backend for prof. An invalid profile is
// reported by every Run (check it up front with prof.Validate).
func New(prof npu.Profile, opts ...Option) *Emulator {
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

var _ backend.Trimmer = (*Emulator)(nil)

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
// and variant on the context, and reports the launch's npu.Cost as the
// Measurement's Model. A kernel that wrote into a guard band around an
// output (npu.GuardError) still returns its outputs, and each violated
// guard is a Finding failing backend.CheckGuardBand on its output. The
// inputs themselves are never changed: they are copy-on-write in the
// emulated GM (npu.CopyOnWrite), so a kernel that writes an input writes,
// and later reads, a copy, and the write is reported as an
// *backend.InputsModifiedError returned with the outputs.
func (e *Emulator) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
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
	m := Measurement(cost)
	if guard != nil {
		if m == nil {
			m = &backend.Measurement{}
		}
		for _, v := range guard.Violations {
			m.Findings = append(m.Findings, backend.Finding{Output: v.Output, Check: backend.CheckGuardBand, Message: v.String()})
		}
	}
	if written := cow.Written(); written != nil {
		return out, m, fmt.Errorf("emulator: %w", &backend.InputsModifiedError{Inputs: written})
	}
	return out, m, nil
}

// Measurement converts a launch's cost into the backend-neutral
// measurement: its aggregate figures as the Model, the cost itself as the
// Model's Detail, and each sanitizer finding (npu.Cost.Findings) as a
// Finding failing backend.CheckSanitizer on output "kernel". A nil cost
// gives nil.
func Measurement(cost *npu.Cost) *backend.Measurement {
	if cost == nil {
		return nil
	}
	m := &backend.Measurement{Model: &backend.Model{
		Device: cost.Device, Cycles: cost.Cycles, Seconds: cost.Seconds,
		GMBytesIn: cost.GMBytesIn, GMBytesOut: cost.GMBytesOut,
		VectorUtil: cost.VectorUtil, LoadBalance: cost.LoadBalance,
		Detail: cost,
	}}
	for _, f := range cost.Findings {
		m.Findings = append(m.Findings, backend.Finding{Output: "kernel", Check: backend.CheckSanitizer, Message: f.Message})
	}
	return m
}

// Cost returns the emulator's npu.Cost a measurement carries (its Model's
// Detail), or nil when it carries none: the measurement of another
// backend, or none at all.
func Cost(m *backend.Measurement) *npu.Cost {
	if m == nil || m.Model == nil {
		return nil
	}
	c, _ := m.Model.Detail.(*npu.Cost)
	return c
}

// GuardsInputs reports true: a kernel's DMA writes into its inputs go to
// copies (npu.CopyOnWrite) and come back as an *InputsModifiedError.
func (e *Emulator) GuardsInputs() bool { return true }

var _ backend.InputGuard = (*Emulator)(nil)

// Numerics returns the numerics profile the emulator computes under.
func (e *Emulator) Numerics() tensor.Numerics { return e.prof.Numerics }

// WithNumerics returns an emulator of the same device, options included,
// under numerics num: e itself when it already computes under num (its
// device keeps its pooled memories, see npu.memPool).
func (e *Emulator) WithNumerics(num tensor.Numerics) backend.Backend {
	if num == e.prof.Numerics {
		return e
	}
	p := e.prof
	p.Numerics = num
	return New(p, e.opts...)
}

// RecordsStore returns nil when e is the emulator the golden store is
// recorded by: the default profile (npu.Ascend910B), no injected faults,
// default kernels. Only that emulator's outputs are the recorded ones bit
// for bit, so only it records a recipe or regenerates one
// (golden.Recorder).
func (e *Emulator) RecordsStore() error {
	if !reflect.DeepEqual(e.prof, npu.Ascend910B()) || !e.faults.Empty() || e.variant.Options != nil {
		return fmt.Errorf("the store is recorded by the emulator on %s with no faults and default kernels", npu.Ascend910B().Name)
	}
	return nil
}

// Recorder returns the emulator the golden store is recorded by (see
// RecordsStore), which golden.Store.WithRecorder takes to regenerate the
// expected outputs of recipes.
func Recorder() *Emulator { return New(npu.Ascend910B()) }
