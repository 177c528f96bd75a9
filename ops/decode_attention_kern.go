package ops

import (
	"math"

	"github.com/x448/float16"
)

// The inner loops of decode_attention's Expect, in portable Go. Each one
// performs, per output element, the same float64 operations in the same
// order as the reference functions it replaces (reference.AttentionScores
// and reference.AttentionAccum, and the bound's sums Σ p_j|v_j| and
// Σ p_j·R_j·|v_j − o|: every sum over i or j in index order, starting
// from zero or the running value), so the bits do not depend on which
// implementation runs; decode_attention_amd64.s holds
// AVX2 versions that vectorise across independent sums only (query heads
// or columns, never along a sum), and TestDecodeKernelsAsmMatchGo holds
// them to these bit for bit. The assembly rounds each product
// (VMULPD, then VADDPD), so every product here is converted,
// float64(x*y), to keep the compiler from fusing it into the sum where
// it may (arm64, GOAMD64=v3).

// daLanes is how many query heads the score kernel evaluates at once (one
// AVX2 vector of float64): the group's heads are taken four at a time,
// the last four padded with zero queries whose scores are discarded.
const daLanes = 4

// daCvtF16Go converts fp16 values to float64 exactly (f16ToF64).
func daCvtF16Go(dst []float64, src []float16.Float16) {
	dst = dst[:len(src)]
	for i, x := range src {
		dst[i] = f16ToF64(x)
	}
}

// daCvtF16RowsGo converts the first n of the rows of d fp16 values at
// src[rows[r]·stride:] to float64 (f16ToF64), back to back in dst. rows
// may list more rows than n: the assembly prefetches them.
func daCvtF16RowsGo(dst []float64, src []float16.Float16, rows []int, n, d, stride int) {
	for r, row := range rows[:n] {
		daCvtF16Go(dst[r*d:(r+1)*d], src[row*stride:row*stride+d])
	}
}

// daScoresGo stores, for the len(s4)/4 rows of k (flat, d each) and the
// four queries qT (transposed: qT[i·4+g] is element i of query g), the
// unscaled score Σ_i q_gi·k_ji in s4[j·4+g] and its magnitude Σ_i
// |q_gi·k_ji| in m4[j·4+g], each summed in i order from zero.
func daScoresGo(qT, k []float64, d int, s4, m4 []float64) {
	n := len(s4) / daLanes
	for j := range n {
		kj := k[j*d : j*d+d]
		for g := range daLanes {
			var s, m float64
			for i, x := range kj {
				p := float64(qT[i*daLanes+g] * x)
				s += p
				m += math.Abs(p)
			}
			s4[j*daLanes+g], m4[j*daLanes+g] = s, m
		}
	}
}

// daAccumOAGo adds, for columns [c0, len(o)) and the len(p) rows of v
// (flat, len(o) each) with weights p, Σ_j p_j·v_ji to o and Σ_j
// p_j·|v_ji| to a, each summed over j in order.
func daAccumOAGo(p, v []float64, c0 int, o, a []float64) {
	d := len(o)
	for i := c0; i < d; i++ {
		oi, ai := o[i], a[i]
		for j, pj := range p {
			x := v[j*d+i]
			oi += float64(pj * x)
			ai += float64(pj * math.Abs(x))
		}
		o[i], a[i] = oi, ai
	}
}

// daAccumT3Go adds, for columns [c0, len(o)) and the len(w) rows of v
// (flat, len(o) each), Σ_j w_j·|v_ji − o_i| to t3, summed over j in order.
func daAccumT3Go(w, v []float64, c0 int, o, t3 []float64) {
	d := len(o)
	for i := c0; i < d; i++ {
		oi, t := o[i], t3[i]
		for j, wj := range w {
			t += float64(wj * math.Abs(v[j*d+i]-oi))
		}
		t3[i] = t
	}
}
