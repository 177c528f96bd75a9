package quality

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestAttentionQuality prints the table and holds it to the invariants
// any correct measurement has: keeping everything changes nothing and
// saves nothing; the oracle (true top weights per query) is no worse than
// the importance selection where attention is peaked; and the oracle's
// error does not grow as more tokens are kept.
func TestAttentionQuality(t *testing.T) {
	cfg := DefaultConfig()
	tab, err := AttentionQuality(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + tab.String())
	if len(tab.Rows) != len(cfg.Dists)*len(cfg.KeepRatios) {
		t.Fatalf("seed %d: %d rows, want %d", cfg.Seed, len(tab.Rows), len(cfg.Dists)*len(cfg.KeepRatios))
	}
	prevOracle := map[string]Row{}
	for _, r := range tab.Rows {
		where := func() string {
			return fmt.Sprintf("attention quality seed %d dist %s keep_ratio %g", cfg.Seed, r.Dist, r.KeepRatio)
		}
		if math.IsNaN(r.ImportanceErr) || math.IsNaN(r.OracleErr) || r.ImportanceErr < 0 || r.OracleErr < 0 {
			t.Errorf("%s: errors importance %g, oracle %g; want finite and ≥ 0", where(), r.ImportanceErr, r.OracleErr)
		}
		if r.KeepRatio == 1 && (r.ImportanceErr != 0 || r.OracleErr != 0 || r.BytesSaved != 0 || r.Keep != cfg.Tokens) {
			t.Errorf("%s: keep %d, errors %g / %g, saved %d B; want keep %d, 0, 0, 0 B", where(), r.Keep, r.ImportanceErr, r.OracleErr, r.BytesSaved, cfg.Tokens)
		}
		if want := 2 * cfg.Heads * (cfg.Tokens - r.Keep) * cfg.HeadDim * 2; r.BytesSaved != want {
			t.Errorf("%s: bytes saved %d, want %d", where(), r.BytesSaved, want)
		}
		if r.Dist == DistPeaked && r.OracleErr > r.ImportanceErr {
			t.Errorf("%s: oracle error %g / want ≤ the importance selection's %g", where(), r.OracleErr, r.ImportanceErr)
		}
		// KeepRatios run from 1 down: a smaller ratio must not do better.
		if p, ok := prevOracle[r.Dist]; ok && r.KeepRatio < p.KeepRatio && r.OracleErr < p.OracleErr {
			t.Errorf("%s: oracle error %g at keep %d / want ≥ %g at the larger keep %d", where(), r.OracleErr, r.Keep, p.OracleErr, p.Keep)
		}
		prevOracle[r.Dist] = r
	}
	// The measurement must see compression at all: at 1/8 kept on peaked
	// inputs the importance selection is off, but by far less than on random.
	last := func(dist string) Row {
		var out Row
		for _, r := range tab.Rows {
			if r.Dist == dist {
				out = r
			}
		}
		return out
	}
	if p, q := last(DistPeaked), last(DistRandom); !(p.ImportanceErr > 0 && p.ImportanceErr < q.ImportanceErr) {
		t.Errorf("attention quality seed %d: at keep_ratio %g importance error peaked %g, random %g; want 0 < peaked < random",
			cfg.Seed, p.KeepRatio, p.ImportanceErr, q.ImportanceErr)
	}
}

func TestAttentionQualityDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Tokens, cfg.Queries = 64, 4
	a, err := AttentionQuality(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := AttentionQuality(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("attention quality seed %d: two runs differ:\n%s\n%s", cfg.Seed, a, b)
	}
}

func TestAttentionQualityBadConfig(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"keep_ratio 0":   func(c *Config) { c.KeepRatios = []float64{0} },
		"keep_ratio 1.5": func(c *Config) { c.KeepRatios = []float64{1.5} },
		"sinks -1":       func(c *Config) { c.Sinks = -1 },
		"tokens 0":       func(c *Config) { c.Tokens = 0 },
		"dist zipf":      func(c *Config) { c.Dists = []string{"zipf"} },
	} {
		cfg := DefaultConfig()
		mut(&cfg)
		if _, err := AttentionQuality(cfg); err == nil || !strings.HasPrefix(err.Error(), "attention quality: ") {
			t.Errorf("%s: err %v, want an attention quality error", name, err)
		}
	}
}
