package kernels

import "context"

// Variant selects a valid alternative implementation of the kernels:
// another tiling, core count or summation order. It is the other half of
// the mutation score: a suite that catches every fault but also rejects a
// valid variant raises false alarms. The zero Variant is the default
// kernels. Like faults, a variant travels with the launch's context
// (WithVariant; backend.WithVariant for the emulator), so one device
// serves every variant at once.
type Variant struct {
	// Name labels the variant in reports.
	Name string `json:"name"`
	// VectorAdd overrides the vector_add tiling (core count, tile size).
	VectorAdd VectorAddOptions `json:"vector_add"`
	// GEMM overrides the gemm tiling (base blocks, core count) and its
	// summation order (ReverseK).
	GEMM GEMMOptions `json:"gemm"`
}

type variantKey struct{}

// WithVariant returns a context whose registry kernels (the KernelFunc run
// by the emulator backend) use variant v.
func WithVariant(ctx context.Context, v Variant) context.Context {
	return context.WithValue(ctx, variantKey{}, v)
}

// variantFrom returns the variant ctx carries (the zero Variant by default).
func variantFrom(ctx context.Context) Variant {
	v, _ := ctx.Value(variantKey{}).(Variant)
	return v
}
