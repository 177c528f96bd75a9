// Package quality measures what an operator's approximation does to the
// computation it feeds, beyond the operator's own contract: sparse_compress
// is judged on which tokens it keeps, but what matters downstream is how far
// attention over the compressed KV cache lands from attention over the full
// one. None of the public KV-compression projects (kvpress, H2O,
// StreamingLLM, SnapKV) measures that; AttentionQuality does, in float64, so
// the numbers are the selection's effect alone, not rounding.
package quality

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/npuverify/npuverify/reference"
	"github.com/x448/float16"
)

// Distributions of the query/key inputs.
const (
	// DistRandom: q, k, v independent N(0,1). Attention is spread over
	// many tokens and a key's norm says nothing about its weight: the hard
	// case for any cache compression.
	DistRandom = "random"
	// DistPeaked: a few heavy-hitter tokens per head (the sinks, and one in
	// sixteen of the rest) carry a large component along a direction the
	// queries share, three in four of them aligned with it (large weight),
	// one in four opposed (large key norm, near-zero weight); the other
	// keys are noise with log-normal norms. Attention is concentrated, as
	// in trained models, and key norm is a good but imperfect proxy.
	DistPeaked = "peaked"
)

// Config sets up the measurement. All of it is seeded: the same Config
// gives the same Table.
type Config struct {
	Heads, Tokens, HeadDim int // H, L, D of the cache
	Queries                int // decode queries per head the errors average over
	Sinks                  int // sparse_compress's sinks
	KeepRatios             []float64
	Dists                  []string // DistRandom, DistPeaked
	Seed                   uint64
}

// DefaultConfig is the table of the report: 4 heads of 512 tokens of
// head size 64, 16 queries each, 2 sinks, keep ratios 1 … 1/8.
func DefaultConfig() Config {
	return Config{Heads: 4, Tokens: 512, HeadDim: 64, Queries: 16, Sinks: 2,
		KeepRatios: []float64{1, 0.75, 0.5, 0.25, 0.125},
		Dists:      []string{DistRandom, DistPeaked}, Seed: 11}
}

// Row is one (distribution, keep_ratio) cell of the table.
type Row struct {
	Dist      string  `json:"dist"`
	KeepRatio float64 `json:"keep_ratio"`
	Keep      int     `json:"keep"` // tokens kept per head (sparse_compress's KeepCount)
	// ImportanceErr is the mean over heads and queries of ‖o_c − o‖/‖o‖
	// with o_c attention over sparse_compress's reference selection (sinks
	// plus the top tokens by mean k²), o over the full cache.
	ImportanceErr float64 `json:"importance_err"`
	// OracleErr is the same with the keep tokens of largest true attention
	// weight for each query: a bound no query-independent selection can
	// beat reliably, for comparison.
	OracleErr float64 `json:"oracle_err"`
	// BytesFull and BytesSaved count the fp16 K and V rows of the cache
	// (2·H·L·D·2 bytes) and those the compression drops. The int32
	// indices (4 B per kept token per head) are not subtracted.
	BytesFull  int `json:"bytes_full"`
	BytesSaved int `json:"bytes_saved"`
}

// Table is the result: one Row per distribution and keep ratio, in
// Config order.
type Table struct {
	Config Config `json:"config"`
	Rows   []Row  `json:"rows"`
}

// AttentionQuality computes the table for cfg.
func AttentionQuality(cfg Config) (*Table, error) {
	if cfg.Heads <= 0 || cfg.Tokens <= 0 || cfg.HeadDim <= 0 || cfg.Queries <= 0 || cfg.Sinks < 0 {
		return nil, fmt.Errorf("attention quality: heads %d, tokens %d, head size %d, queries %d must be positive and sinks %d non-negative",
			cfg.Heads, cfg.Tokens, cfg.HeadDim, cfg.Queries, cfg.Sinks)
	}
	if len(cfg.KeepRatios) == 0 || len(cfg.Dists) == 0 {
		return nil, errors.New("attention quality: no keep ratios or no distributions")
	}
	for _, r := range cfg.KeepRatios {
		if !(r > 0 && r <= 1) {
			return nil, fmt.Errorf("attention quality: keep ratio %g outside (0, 1]", r)
		}
	}
	t := &Table{Config: cfg}
	h, l, d := cfg.Heads, cfg.Tokens, cfg.HeadDim
	full := 2 * h * l * d * 2
	for di, dist := range cfg.Dists {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(di)))
		heads := make([]head, h)
		for hh := range heads {
			var err error
			if heads[hh], err = newHead(rng, dist, cfg); err != nil {
				return nil, err
			}
		}
		for _, r := range cfg.KeepRatios {
			keep := reference.KeepCount(l, r, cfg.Sinks)
			row := Row{Dist: dist, KeepRatio: r, Keep: keep, BytesFull: full, BytesSaved: 2 * h * (l - keep) * d * 2}
			n := 0
			for _, hd := range heads {
				sel := reference.SelectTopK(hd.importance, cfg.Sinks, keep)
				for _, q := range hd.q {
					o, w := attend(q, hd.k, hd.v, all(l))
					row.ImportanceErr += relErr(attendOut(q, hd.k, hd.v, sel), o)
					row.OracleErr += relErr(attendOut(q, hd.k, hd.v, topByWeight(w, keep)), o)
					n++
				}
			}
			row.ImportanceErr /= float64(n)
			row.OracleErr /= float64(n)
			t.Rows = append(t.Rows, row)
		}
	}
	return t, nil
}

// head is one head's inputs: queries, keys, values (fp16 values held in
// float64, so the selection is sparse_compress's on a valid input) and
// the reference importance of each token.
type head struct {
	q, k, v    [][]float64
	importance []float64
}

func newHead(rng *rand.Rand, dist string, cfg Config) (head, error) {
	l, d := cfg.Tokens, cfg.HeadDim
	normal := func(n int, scale float64) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = scale * rng.NormFloat64()
		}
		return x
	}
	var hd head
	switch dist {
	case DistRandom:
		for range cfg.Queries {
			hd.q = append(hd.q, normal(d, 1))
		}
		for range l {
			hd.k = append(hd.k, normal(d, 1))
		}
	case DistPeaked:
		// u: the direction the queries share; a query has 8 units along
		// it, so a key with a units gives a logit of about 8a/√D.
		u := normal(d, 1)
		nu := math.Sqrt(dot(u, u))
		for i := range u {
			u[i] /= nu
		}
		for range cfg.Queries {
			q := normal(d, 1)
			for i := range q {
				q[i] += float64(8 * u[i])
			}
			hd.q = append(hd.q, q)
		}
		for t := range l {
			k := normal(d, math.Exp(0.3*rng.NormFloat64()))
			a := 0.0
			if t < cfg.Sinks || rng.IntN(16) == 0 {
				a = 0.75 * math.Sqrt(float64(d)) * (1 + float64(rng.Float64()))
				if t >= cfg.Sinks && rng.IntN(4) == 0 {
					a = -a
				}
			}
			for i := range k {
				k[i] += float64(a * u[i])
			}
			hd.k = append(hd.k, k)
		}
	default:
		return head{}, fmt.Errorf("attention quality: unknown distribution %q (want %s or %s)", dist, DistRandom, DistPeaked)
	}
	for range l {
		hd.v = append(hd.v, normal(d, 1))
	}
	for _, m := range [][][]float64{hd.q, hd.k, hd.v} {
		for _, row := range m {
			for i, x := range row {
				row[i] = float64(float16.Fromfloat32(float32(x)).Float32())
			}
		}
	}
	for _, k := range hd.k {
		hd.importance = append(hd.importance, reference.Importance(k))
	}
	return hd, nil
}

func all(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += float64(a[i] * b[i])
	}
	return s
}

// attend is softmax(q·k_i/√D) over the tokens idx, applied to their v
// rows: the output and the weights (indexed like idx).
func attend(q []float64, k, v [][]float64, idx []int) (o, w []float64) {
	scale := 1 / math.Sqrt(float64(len(q)))
	w = make([]float64, len(idx))
	mx := math.Inf(-1)
	for t, i := range idx {
		w[t] = dot(q, k[i]) * scale
		mx = max(mx, w[t])
	}
	sum := 0.0
	for t := range w {
		w[t] = math.Exp(w[t] - mx)
		sum += w[t]
	}
	o = make([]float64, len(v[0]))
	for t, i := range idx {
		w[t] /= sum
		for j, x := range v[i] {
			o[j] += float64(w[t] * x)
		}
	}
	return o, w
}

func attendOut(q []float64, k, v [][]float64, idx []int) []float64 {
	o, _ := attend(q, k, v, idx)
	return o
}

// topByWeight is the oracle's selection: the keep tokens of largest
// weight (ties to the lower index), ascending.
func topByWeight(w []float64, keep int) []int {
	idx := all(len(w))
	sort.SliceStable(idx, func(a, b int) bool { return w[idx[a]] > w[idx[b]] })
	sel := idx[:keep]
	slices.Sort(sel)
	return sel
}

// relErr is ‖got − want‖ / ‖want‖ (0 when both are 0).
func relErr(got, want []float64) float64 {
	var num, den float64
	for i := range want {
		num += float64((got[i] - want[i]) * (got[i] - want[i]))
		den += float64(want[i] * want[i])
	}
	if num == 0 {
		return 0
	}
	return math.Sqrt(num / den)
}

// String renders the table as fixed-width text, one line per row.
func (t *Table) String() string {
	var b strings.Builder
	c := t.Config
	fmt.Fprintf(&b, "attention quality: H=%d L=%d D=%d, %d queries/head, sinks=%d, seed %d (float64; rel. err = mean ‖o_c−o‖/‖o‖)\n",
		c.Heads, c.Tokens, c.HeadDim, c.Queries, c.Sinks, c.Seed)
	fmt.Fprintf(&b, "%-8s %10s %6s %14s %12s %12s %8s\n", "dist", "keep_ratio", "keep", "importance_err", "oracle_err", "bytes_saved", "saved")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "%-8s %10g %6d %14.4g %12.4g %12d %7.1f%%\n", r.Dist, r.KeepRatio, r.Keep, r.ImportanceErr, r.OracleErr,
			r.BytesSaved, 100*float64(r.BytesSaved)/float64(r.BytesFull))
	}
	return b.String()
}
