package kernels

import (
	"context"
	"fmt"
)

// Variant selects a valid alternative implementation of the kernels:
// another tiling, core count or summation order. It is the other half of
// the mutation score: a suite that catches every fault but also rejects a
// valid variant raises false alarms. The zero Variant is the default
// kernels. Like faults, a variant travels with the launch's context
// (WithVariant; emulator.WithVariant for the emulator), so one device
// serves every variant at once.
//
// A variant belongs to one op: Options is that op's options type
// (VectorAddOptions, GEMMOptions), and a kernel given a variant of
// another op runs its default.
type Variant struct {
	// Name labels the variant in reports.
	Name string `json:"name"`
	// Op is the operator whose kernel the variant changes.
	Op string `json:"op"`
	// Options are the kernel options of Op's kernel the variant runs with.
	Options any `json:"options"`
}

// String describes the variant for reports: its name and options.
func (v Variant) String() string { return fmt.Sprintf("%s: %s %+v", v.Name, v.Op, v.Options) }

type variantKey struct{}

// WithVariant returns a context whose registry kernels (the KernelFunc run
// by the emulator backend) use variant v.
func WithVariant(ctx context.Context, v Variant) context.Context {
	return context.WithValue(ctx, variantKey{}, v)
}

// variantOptions returns the options of type T that the variant on ctx
// carries, or T's zero value (the default kernel) when ctx carries no
// variant or one of another op.
func variantOptions[T any](ctx context.Context) T {
	v, _ := ctx.Value(variantKey{}).(Variant)
	o, _ := v.Options.(T)
	return o
}
