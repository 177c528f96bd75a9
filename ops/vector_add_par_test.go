package ops

import (
	"fmt"
	"math"
	"testing"

	"github.com/npuverify/npuverify/bound"
	"github.com/npuverify/npuverify/reference"
)

// TestVectorAddExpectMatchesSerial holds the blocked, parallel Expect to
// the element loop it replaced (SetExact of the whole-vector reference)
// bit for bit, for every dtype and profile, on inputs of every dist long
// enough to be split over cores.
func TestVectorAddExpectMatchesSerial(t *testing.T) {
	const n, seed = 40001, 13
	for _, dt := range []string{"fp16", "bf16", "fp32", "int8"} {
		p, _ := VectorAdd.Validate(Params{"dtype": dt})
		d := vectorAddDType(p)
		for _, dist := range VectorAdd.Dists() {
			in, err := VectorAdd.Generate(p, Gen{Dims: map[string]int{"n": n}, Dist: dist, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for _, num := range exactProfiles {
				got, err := VectorAdd.Expect(p, in, num)
				if err != nil {
					t.Fatal(err)
				}
				want := bound.NewExpected(n)
				for i, r := range reference.VectorAdd(in["x"].Float64s(), in["y"].Float64s()) {
					want.SetExact(i, r, d, num)
				}
				if i := firstExpectedDiff(got["z"], want); i >= 0 {
					t.Fatalf("vector_add dtype=%s dist=%s %v n=%d seed=%d: element %d: got %s / want %s", dt, dist, num, n, seed, i, expectedAt(got["z"], i), expectedAt(want, i))
				}
			}
		}
	}
}

// firstExpectedDiff returns the first element where a and b differ in
// any bit of Ref, Bound, Alt, Exact or Rounded, or −1. A compact a or b
// is compared as Materialize fills it (bound holds the compact reads to
// that, TestCompactMatchesSetExact).
func firstExpectedDiff(a, b *bound.Expected) int {
	a, b = materialized(a), materialized(b)
	if a.Len() != b.Len() || (a.Exact == nil) != (b.Exact == nil) {
		return 0
	}
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) }
	for i := range a.Len() {
		if !same(a.Ref[i], b.Ref[i]) || !same(a.Bound[i], b.Bound[i]) || a.Alt[i] != b.Alt[i] ||
			a.IsExact(i) != b.IsExact(i) || (a.IsExact(i) && !same(a.Rounded[i], b.Rounded[i])) {
			return i
		}
	}
	return -1
}

// materialized returns e with its arrays filled: e itself, or a filled
// copy of a compact e.
func materialized(e *bound.Expected) *bound.Expected {
	if !e.Compact() {
		return e
	}
	c := *e
	c.Materialize()
	return &c
}

// expectedAt describes element i of e for a failure message.
func expectedAt(e *bound.Expected, i int) string {
	if i >= e.Len() {
		return fmt.Sprintf("%d elements", e.Len())
	}
	s := fmt.Sprintf("ref %g bound %g alt %v", e.RefAt(i), e.BoundAt(i), e.AltAt(i))
	if e.IsExact(i) {
		s += fmt.Sprintf(" exact %g", e.RoundedAt(i))
	}
	return s
}
