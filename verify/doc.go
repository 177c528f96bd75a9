// Package verify judges an operator's outputs against what a correct
// implementation may return (bound.Expected) and, for bit-exact
// regression checks, against golden tensors (docs/accuracy.md).
//
// Compute returns the metrics reported for every output; ParsePolicy
// selects a named accuracy standard; Check applies policies to every
// output of a case and never stops at the first failure; Result.Failure
// renders the report, whose first line names the subject (op, params,
// seed) and whose element lines end with got / want / bound.
//
// # Reference, non-finite values, ambiguity
//
// Every value policy compares the output g with r = Expected.Ref, the
// float64 reference already rounded by the numerics profile, in float64.
// Non-finite values are judged as bound.Expected does: a non-finite g is
// accepted iff its class (+inf, -inf, nan) is in Expected.Alt[i] or equals
// the class of r (a non-finite reference always accepts its own class, so
// NaN matches NaN and an inf the same inf); a finite g is never accepted
// for a non-finite r. A class mismatch fails every value policy outright,
// whatever its tolerances or fractions. An overflow-ambiguous element
// (Expected.Ambiguous) that took an allowed non-finite outcome is accepted
// by every policy and counted in Metrics.Ambiguous and
// Metrics.AmbiguousTaken; if it stayed finite it is judged like any other
// element.
//
// # Policies
//
// With e = |g − r| for finite g and r, and d the output dtype:
//
//   - bound (default): every element accepted by Expected.Accepts
//     (e ≤ Expected.Bound[i]), under the non-finite rule above; an exact
//     element (Expected.IsExact: one rounding of an exactly known value)
//     must moreover be bit for bit Expected.Rounded[i], the profile's
//     rounding of the exact value, ties and the sign of zero included
//     (Metrics.NotRounded counts those that are not). Element bound:
//     Expected.Bound (half an ulp at exact elements, so tightness still
//     shows their error in half-ulps).
//
//   - exact: the output's dtype, shape and every bit pattern equal the
//     golden tensor's (−0 ≠ +0, NaN payloads compared). Without a golden
//     tensor it fails, saying so. The reference is not consulted.
//
//   - allclose[:rtol=R,atol=A]: e ≤ atol + rtol·|r| for every element,
//     NaN equal to NaN, infinities equal only to themselves (via the
//     non-finite rule). Defaults per d, those of
//     torch.testing.assert_close: fp16 1e-3/1e-5, bf16 1.6e-2/1e-5,
//     fp32 1.3e-6/1e-5, fp64 1e-7/1e-7, integers 0/0 (exact); an option
//     left out keeps its dtype default. Element bound: atol + rtol·|r|.
//
//   - ulp[:N]: e ≤ N·ulp_d(r) for every element, ulp_d(r) the spacing of
//     d at |r| (tensor.Format.Ulp; 1 for integer dtypes). N defaults to
//     DefaultULP = 1: a faithfully rounded result is within 1 ulp, and a
//     correctly rounded one (what Ref is) within 0. The ulp is taken at r,
//     so just below a power of two an adjacent value counts as 0.5 ulp.
//     Element bound: N·ulp_d(r).
//
//   - ascend-thousandth[:n=K]: the double-thousandth standard. Threshold
//     th = 1e-3 for fp16/bf16, 1e-4 for fp32 (and fp64). An element fails
//     "rel" if e/|r| > th (e when r = 0) and fails "abs" if e > th. The
//     output fails iff the number of rel failures AND the number of abs
//     failures each exceed K·th·N, N the number of elements (K defaults
//     to 1). With N = 2000 fp16 elements the limit is 2: up to 2
//     elements may fail both ways, and any number may fail rel (large
//     relative errors on tiny values) while at most 2 fail abs, or the
//     other way round. "Exceed" is strict: a count equal to K·th·N
//     passes. Element bound:
//     th·max(|r|, 1), the error above which the element fails both ways.
//
//   - ascend-mere: MERE < Th and MARE < 10·Th with
//     MERE = mean(e/(|r| + 1e-7)) and MARE = max(e/(|r| + 1e-7)) over
//     elements with finite g and r; Th = 2^-10 fp16, 2^-7 bf16, 2^-13
//     fp32 (and fp64). Element bound: Th·(|r| + 1e-7), or 10·Th·(|r| + 1e-7)
//     for elements that break the MARE limit.
//
//   - ascend-mixed: at least 99% of all elements (accepted non-finite
//     ones count as matched) satisfy e ≤ atol + rtol·|r|, and the max abs
//     error stays under the outlier cap max(floor, 32 ulp), read per
//     element as e ≤ max(atol, 32·ulp_d(r)): the floor is atol, the ulp
//     is taken at each element's reference. (rtol, atol) = fp16
//     (2^-9, 2^-9), bf16 (2^-6, 2^-6), fp32 and fp64 (2^-16, 2^-10):
//     the standard gives fp32 the pair 2^-10/2^-16 without saying which
//     is which, and reading 2^-10 as atol and 2^-16 as rtol keeps fp32's
//     relative tolerance well below fp16's (docs/accuracy.md). The cap only gives the 99%
//     rule room where 32·ulp_d(r) > atol + rtol·|r|: fp16 and bf16 for
//     |r| above about 1/8, never for fp32, where the cap alone decides.
//     Element bound: the tolerance, or the cap for elements over it.
//
//   - ascend-dual: the dual benchmark. The bound policy passes, and on
//     the same inputs the output's MERE and RMSE are at most 2× and its
//     MARE at most 10× those of the trusted outputs Input.Golden (the
//     emulator's, the golden expected bits), each limit taken as
//     factor × max(trusted metric, floor), floor u/2 for MERE and MARE and
//     u/2·rms(Ref) for RMSE, u the unit roundoff of d: against a perfect
//     trusted result a correctly rounded one still passes (see dual.go).
//     Without trusted outputs it fails, saying so. Element bound:
//     Expected.Bound when the bound fails, else limit·(|r| + 1e-7).
//
// The Ascend standards are defined for floating outputs; on integer
// outputs (indices, masks, counters, int8 caches) all four require every
// value to equal the reference (ascend-dual also the bound).
package verify
