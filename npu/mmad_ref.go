package npu

import "github.com/npuverify/npuverify/tensor"

// mmadReference is the accumulate model of MmadParams written as plainly
// as it reads, one output at a time: starting from the accumulator (which
// Mmad has cleared for Init), add the products a[i,k]·b[k,j] of the useful
// k in ascending order:
//   - Acc Int32: exactly;
//   - sequential: acc ← RN_Acc(acc + a·b) per k, one rounding of the
//     exact value (fmaRound);
//   - blocked16: acc ← RN_Acc(acc + Σ a·b) per 16-wide k block (blocks
//     from k = 0 of the call), one rounding of the exact value (sumRound).
//
// It is slow and has no special cases; mmadFast must compute the same
// bits, NaN payloads included (TestMmadFastMatchesReference).
func mmadReference(cf []float32, ci []int32, a, b *L0Tile, p MmadParams, g mmadGeom) {
	var terms, scratch []float64
	for i := 0; i < g.m; i++ {
		for j := 0; j < g.n; j++ {
			switch {
			case p.Acc == tensor.Int32:
				acc := ci[i*g.n+j]
				for k := 0; k < g.ku; k++ {
					acc += a.i[i*g.lda+k] * b.i[k*g.ldb+j]
				}
				ci[i*g.n+j] = acc
			case !p.Blocked:
				acc := cf[i*g.n+j]
				for k := 0; k < g.ku; k++ {
					acc = fmaRound(p.Acc, acc, a.f[i*g.lda+k], b.f[k*g.ldb+j])
				}
				cf[i*g.n+j] = acc
			default:
				acc := cf[i*g.n+j]
				for k0 := 0; k0 < g.ku; k0 += blockK {
					terms = append(terms[:0], float64(acc))
					for k := k0; k < min(k0+blockK, g.ku); k++ {
						terms = append(terms, blockTerm(a.f[i*g.lda+k], b.f[k*g.ldb+j]))
					}
					acc = sumRound(p.Acc, terms, &scratch)
				}
				cf[i*g.n+j] = acc
			}
		}
	}
}

// blockTerm is one product of a blocked16 block sum, exact in float64.
// It is one function, not inlined, so that the model and the fast path
// multiply the same way: with two NaN operands, which payload the product
// keeps depends on the operand order the compiler picks.
//
//go:noinline
func blockTerm(a, b float32) float64 { return float64(a) * float64(b) }
