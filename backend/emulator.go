package backend

import (
	"context"
	"fmt"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Emulator is the built-in backend: it runs each operator's kernel from
// package npu/kernels on an emulated device, so its outputs follow the
// device profile's numerics bit-exactly and it reports a modeled Cost.
// It is safe for concurrent use.
type Emulator struct {
	prof npu.Profile
	dev  *npu.Device
	err  error // profile validation error, reported by Run
}

// NewEmulator returns an emulator backend for prof. An invalid profile is
// reported by every Run (check it up front with prof.Validate).
func NewEmulator(prof npu.Profile) *Emulator {
	dev, err := npu.NewDevice(prof)
	return &Emulator{prof: prof, dev: dev, err: err}
}

// Name returns "emulator".
func (e *Emulator) Name() string { return "emulator" }

// Profile returns the emulated device profile, whose Numerics the
// harness needs to compute expectations.
func (e *Emulator) Profile() npu.Profile { return e.prof }

// Device returns the emulated device (nil if the profile is invalid).
func (e *Emulator) Device() *npu.Device { return e.dev }

// Run dispatches op to its registered kernel.
func (e *Emulator) Run(ctx context.Context, op string, p ops.Params, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *npu.Cost, error) {
	if e.err != nil {
		return nil, nil, fmt.Errorf("emulator: %w", e.err)
	}
	fn, err := kernels.Lookup(op)
	if err != nil {
		return nil, nil, fmt.Errorf("emulator: %w", err)
	}
	out, cost, err := fn(ctx, e.dev, p, in)
	if err != nil {
		return nil, nil, fmt.Errorf("emulator: %w", err)
	}
	return out, cost, nil
}

var _ Backend = (*Emulator)(nil)

// Numerics returns the numerics profile the emulator computes under.
func (e *Emulator) Numerics() tensor.Numerics { return e.prof.Numerics }

// WithNumerics returns an emulator of the same device under numerics num.
func (e *Emulator) WithNumerics(num tensor.Numerics) Backend {
	p := e.prof
	p.Numerics = num
	return NewEmulator(p)
}
