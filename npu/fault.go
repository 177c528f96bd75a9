package npu

import (
	"context"
	"slices"
)

// Fault names a deliberately injected kernel bug. Faults exist to measure
// the verification suite (the mutation score): a kernel resolves the
// faults of its launch (FaultsFrom) once into its op's fault plan and
// consults that at the one spot where each real bug would be, misbehaving
// only when its fault is switched on. The catalogue of named
// faults, with the real bug each one models, lives with the kernels
// (package npu/kernels); this package only carries them.
type Fault string

// Faults is an immutable set of faults. The zero value is the empty set: a
// correct kernel.
type Faults struct{ set []Fault } // sorted, no duplicates

// NewFaults returns the set of fs (empty names are ignored).
func NewFaults(fs ...Fault) Faults {
	var s []Fault
	for _, f := range fs {
		if f != "" {
			s = append(s, f)
		}
	}
	slices.Sort(s)
	return Faults{set: slices.Compact(s)}
}

// Has reports whether f is switched on.
func (s Faults) Has(f Fault) bool {
	_, ok := slices.BinarySearch(s.set, f)
	return ok
}

// Empty reports whether no fault is switched on.
func (s Faults) Empty() bool { return len(s.set) == 0 }

// List returns the faults, sorted.
func (s Faults) List() []Fault { return slices.Clone(s.set) }

type faultsKey struct{}

// WithFaults returns a context whose launches run with the faults of s (in
// addition to any ctx already carries). Faults travel with the context,
// not the Device, so one device serves correct and faulty runs at once
// and nothing global changes.
func WithFaults(ctx context.Context, s Faults) context.Context {
	if s.Empty() {
		return ctx
	}
	if old := FaultsFrom(ctx); !old.Empty() {
		s = NewFaults(append(old.List(), s.set...)...)
	}
	return context.WithValue(ctx, faultsKey{}, s)
}

// FaultsFrom returns the faults ctx carries (the empty set by default).
func FaultsFrom(ctx context.Context) Faults {
	if ctx == nil {
		return Faults{}
	}
	s, _ := ctx.Value(faultsKey{}).(Faults)
	return s
}

// Faults returns the faults switched on for this launch.
func (c *Core) Faults() Faults { return FaultsFrom(c.ctx) }
