// Package verify judges an operator's outputs against what a correct
// implementation may return (bound.Expected) and, for bit-exact
// regression checks, against golden tensors.
//
// It computes the accuracy metrics reported for every output (Compute),
// applies the named accuracy policies of DESIGN §6 (ParsePolicy: bound,
// exact, allclose, ulp, ascend-thousandth, ascend-mere, ascend-mixed), and
// renders failure reports whose first line names the subject (op, params,
// seed) and whose element lines end with got / want / bound (Check,
// Result.Failure).
//
// # Non-finite values
//
// Every policy that compares values treats non-finite values the same way
// as bound.Expected does: a non-finite got is accepted iff its class
// (+inf, -inf, nan) is in Expected.Alt[i] or equals the class of
// Expected.Ref[i] (a non-finite reference always accepts its own class);
// a finite got is never accepted for a non-finite reference. A class
// mismatch fails every value policy outright, whatever its tolerances or
// fractions. An overflow-ambiguous element (Expected.Ambiguous) that took
// an allowed non-finite outcome is accepted by every policy and counted
// in Metrics.Ambiguous / Metrics.AmbiguousTaken; if it stayed finite it is
// judged like any other element.
package verify

import (
	"fmt"
	"strings"
)

// Subject names what was checked; every failure message starts with it.
type Subject struct {
	Op     string
	Params string // rendered params, e.g. "dtype=fp16" (ops.Params.String)
	Seed   uint64
	Case   string // optional case name
}

// String renders the subject as "vector_add dtype=fp16 seed=42 [case]",
// leaving out empty params and an empty case.
func (s Subject) String() string {
	var b strings.Builder
	op := s.Op
	if op == "" {
		op = "?"
	}
	b.WriteString(op)
	if p := strings.TrimSpace(s.Params); p != "" {
		b.WriteString(" ")
		b.WriteString(p)
	}
	fmt.Fprintf(&b, " seed=%d", s.Seed)
	if s.Case != "" {
		fmt.Fprintf(&b, " [%s]", s.Case)
	}
	return b.String()
}
