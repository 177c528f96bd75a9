package explore

import (
	"testing"

	"github.com/npuverify/npuverify/ops"
)

// TestFitKeepsDrawsLegal: an op with a CaseFitter (transdata, gemm,
// gemm24) has every draw's params legal after Fit, so the only draws Next
// discards are the ones over the size caps. A draw can exceed them only
// through its one large dim, drawn large in at most half the draws (size:
// two of its four branches), so at most about 2 draws per legal case;
// drawn one by one, fewer than 1 transdata draw in 100 was legal (a
// 5-minute search: 1260 cases of 169300 draws).
func TestFitKeepsDrawsLegal(t *testing.T) {
	const seed, cases = 5, 100
	for _, name := range ops.Names() {
		op, _ := ops.Lookup(name)
		if _, ok := op.(ops.CaseFitter); !ok {
			continue
		}
		g := NewGenerator(op, testDevice(), Limits{MaxElements: 1 << 17, MaxWork: 1 << 20}, seed)
		for i := range cases {
			c := g.draw()
			if _, err := op.Validate(c.Params); err != nil {
				t.Errorf("op %s params %s dims %v seed %d draw %d: after Fit: got %v, want legal params", name, c.Params, c.Dims, seed, i, err)
			}
		}
		g = NewGenerator(op, testDevice(), Limits{MaxElements: 1 << 17, MaxWork: 1 << 20}, seed)
		for range cases {
			if _, err := g.Next(); err != nil {
				t.Fatalf("op %s seed %d: %v", name, seed, err)
			}
		}
		t.Logf("op %s seed %d: %d draws for %d legal cases", name, seed, g.Drawn, cases)
		if g.Drawn > 2*cases {
			t.Errorf("op %s seed %d: %d draws for %d legal cases; want at most %d: a draw is discarded only over the size caps", name, seed, g.Drawn, cases, 2*cases)
		}
	}
}
