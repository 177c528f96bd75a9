package parallel

import (
	"sync/atomic"
	"testing"
)

// TestForCoversOnce checks that every index is visited exactly once for
// sizes around the grain and core count.
func TestForCoversOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100, 1000, 4097} {
		for _, grain := range []int{0, 1, 3, 64, 10000} {
			seen := make([]atomic.Int32, n)
			For(n, grain, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					seen[i].Add(1)
				}
			})
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Fatalf("parallel.For n=%d grain=%d: index %d: got %d visits / want 1", n, grain, i, c)
				}
			}
		}
	}
}
