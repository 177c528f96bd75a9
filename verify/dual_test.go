package verify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
)

// partialFP16GEMM is a gemm fp16_fp32acc kernel (alpha 1, beta 0) that
// loses precision systematically: it accumulates k ascending in fp32 like
// the contract, but rounds the running partial sum to fp16 after every
// `every` products. Where that loss would leave the any-order bound, the
// element takes the trusted value instead, so every element is inside the
// bound by construction and only the error statistics can see the loss.
func partialFP16GEMM(a, b, trusted *tensor.Tensor, want *verify.Input, m, k, n, every int) *tensor.Tensor {
	f16, _ := tensor.Float16.FloatFormat()
	out := tensor.MustNew(tensor.Float16, m, n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var acc float32
			for kk := 0; kk < k; kk++ {
				acc += float32(float32(a.Float64(i*k+kk)) * float32(b.Float64(kk*n+j))) // exact product (not fused: the same either way), one fp32 rounding
				if (kk+1)%every == 0 {
					acc = float32(f16.RoundNearestEven(float64(acc)))
				}
			}
			idx := i*n + j
			v := f16.RoundNearestEven(float64(acc))
			if !want.Want.Accepts(idx, v) {
				v = trusted.Float64(idx)
			}
			out.SetFloat64(idx, v, tensor.Numerics{})
		}
	}
	return out
}

// TestAscendDual runs gemm fp16_fp32acc (m=n=32, k=1024, uniform inputs,
// seed 17) on the emulator (the trusted outputs), on the emulator's
// reversed-K variant (a valid kernel with another summation order) and on
// a kernel that rounds partial sums to fp16 while staying inside the
// bound. ascend-dual passes the variant and fails the lossy kernel, which
// the bound policy passes.
func TestAscendDual(t *testing.T) {
	const m, k, n, seed, every = 32, 1024, 32, 17, 64
	ctx := context.Background()
	prof := npu.Ascend910B()
	p, err := ops.GEMM.Validate(ops.Params{"mode": "fp16_fp32acc"})
	if err != nil {
		t.Fatal(err)
	}
	in, err := ops.GEMM.Generate(p, ops.Gen{Dims: map[string]int{"m": m, "k": k, "n": n}, Dist: ops.DistUniform, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	exp, err := ops.GEMM.Expect(p, in, prof.Numerics)
	if err != nil {
		t.Fatal(err)
	}
	run := func(b backend.Backend) *tensor.Tensor {
		t.Helper()
		out, _, err := b.Run(ctx, "gemm", p, in)
		if err != nil {
			t.Fatalf("gemm %v m=%d k=%d n=%d seed=%d: backend %s: %v", p, m, k, n, seed, b.Name(), err)
		}
		return out["out"]
	}
	trusted := run(emulator.New(prof))
	variant := run(emulator.New(prof, emulator.WithVariant(kernels.Variant{
		Name: "reverse-k", Op: "gemm", Options: kernels.GEMMOptions{ReverseK: true, BaseK: 32}})))
	if ok, _ := tensor.BitsEqual(trusted, variant); ok {
		t.Fatalf("gemm %v seed=%d: the reversed-K variant gave the emulator's bits; the test needs another order", p, seed)
	}
	dual := verify.MustParsePolicy("ascend-dual")
	bnd := verify.DefaultPolicy()

	v := dual.Judge(verify.Input{Got: variant, Want: exp["out"], Golden: trusted})
	if !v.Pass {
		t.Errorf("gemm %v m=%d k=%d n=%d seed=%d: reversed-K variant: got %s, want pass", p, m, k, n, seed, v.Details(nil))
	}
	t.Logf("variant: %s", v.Reason)

	lossyIn := verify.Input{Want: exp["out"]}
	lossy := partialFP16GEMM(in["a"], in["b"], trusted, &lossyIn, m, k, n, every)
	lossyIn.Got, lossyIn.Golden = lossy, trusted
	if v := bnd.Judge(lossyIn); !v.Pass {
		t.Fatalf("gemm %v seed=%d: fp16-partial-sum kernel: got %s, want inside the bound", p, seed, v.Reason)
	}
	v = dual.Judge(lossyIn)
	if v.Pass || !strings.Contains(v.Reason, "above the dual limit") || len(v.Failures) == 0 {
		t.Errorf("gemm %v m=%d k=%d n=%d seed=%d: fp16 partial sums every %d: got pass=%v %q, want failure above the dual limit with elements",
			p, m, k, n, seed, every, v.Pass, v.Reason)
	}
	t.Logf("lossy: %s", v.Reason)

	// Without trusted outputs the policy cannot judge, and says why.
	v = dual.Judge(verify.Input{Got: variant, Want: exp["out"]})
	if v.Pass || !strings.Contains(v.Reason, "no trusted outputs") {
		t.Errorf("gemm %v seed=%d: no golden: got pass=%v %q, want a failure naming the missing trusted outputs", p, seed, v.Pass, v.Reason)
	}
}

// TestAscendDualFloor: against a trusted result with zero error (fp16
// references, all representable), the floor u/2 gives a MERE limit of u
// (u = 2^-11): a kernel one ulp (2^-10, a relative u to 2u on [1, 2)) off
// at every other element, MERE about 0.7u, passes; one ulp off at every
// element, MERE about 1.4u, fails on MERE.
func TestAscendDualFloor(t *testing.T) {
	d := tensor.Float16
	f, _ := d.FloatFormat()
	const n = 256
	ref := make([]float64, n)
	for i := range ref {
		ref[i] = 1 + float64(float64(i)/256) // fp16 values in [1, 2): ulp 2^-10 = 2u
	}
	e := newExpected(ref, 1) // a loose bound: only the dual limits judge
	trusted := tensor.MustNew(d, n)
	for i, r := range ref {
		trusted.SetFloat64(i, r, tensor.Numerics{})
	}
	off := func(every int) *tensor.Tensor {
		g := tensor.MustNew(d, n)
		for i, r := range ref {
			if i%every == 0 {
				r += f.Ulp(r)
			}
			g.SetFloat64(i, r, tensor.Numerics{})
		}
		return g
	}
	dual := verify.MustParsePolicy("ascend-dual")
	if v := dual.Judge(verify.Input{Got: off(2), Want: e, Golden: trusted}); !v.Pass {
		t.Errorf("fp16 n=%d: one ulp off at every other element against a perfect trusted result: got %s, want pass (floor u/2)", n, v.Reason)
	}
	if v := dual.Judge(verify.Input{Got: off(1), Want: e, Golden: trusted}); v.Pass || !strings.Contains(v.Reason, "MERE") {
		t.Errorf("fp16 n=%d: one ulp off everywhere against a perfect trusted result: got pass=%v %q, want MERE above the limit", n, v.Pass, v.Reason)
	}
	// Integer outputs must equal the reference, like the other Ascend policies.
	iref := []float64{1, 2, 3}
	ie := newExpected(iref, 0)
	it := tensor.MustNew(tensor.Int8, 3)
	for i, r := range iref {
		it.SetFloat64(i, r, tensor.Numerics{})
	}
	if v := dual.Judge(verify.Input{Got: it, Want: ie, Golden: it}); !v.Pass {
		t.Errorf("int8: equal values: got %s, want pass", v.Reason)
	}
}

// newExpected builds an Expected with the given references and a constant
// bound.
func newExpected(ref []float64, b float64) *bound.Expected {
	e := bound.NewExpected(len(ref))
	copy(e.Ref, ref)
	for i := range e.Bound {
		e.Bound[i] = b
	}
	return e
}
