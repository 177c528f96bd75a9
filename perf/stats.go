package perf

import (
	"fmt"
	"math"
	"slices"
)

// Alpha is the significance level of the slowdown test, benchstat's: a
// slowdown is reported only when a shift at least as large as the one
// observed would arise by chance less than one time in twenty.
const Alpha = 0.05

// MinSamples is the least number of kernel times each side (baseline and
// current) must have before the slowdown test may judge. With n = m
// samples the smallest two-sided p-value the rank test can reach is
// 2/C(2n,n), when every current time exceeds every baseline time: 0.1 at
// n = 3, which can never be significant at Alpha; 2/70 ≈ 0.029 at n = 4,
// but there one sample out of order (U = 1, p = 4/70 ≈ 0.057) already
// hides the slowdown, so a single noisy run would decide; at n = 5 up to
// two pairs may be out of order (U = 2: p = 8/252 ≈ 0.032) and it still
// holds. Five is the smallest count at which a slowdown survives a stray
// sample.
const MinSamples = 5

// exactLimit is the largest pooled sample size n+m for which MannWhitney
// counts the exact permutation distribution of the rank sum (ties
// included, conditional on the observed ties); above it the normal
// approximation with tie and continuity correction is accurate to far
// better than Alpha needs (benchstat switches at 50 a side without ties,
// 25 with; a pooled 50 keeps the exact count cheap: n+m × n × 2·Σranks
// steps, about 3·10^6 here).
const exactLimit = 50

// MannWhitney is the two-sided Mann-Whitney U test (Wilcoxon rank-sum) of
// samples x and y, the test benchstat uses: u is the U statistic of y
// (pairs with y above x, ties counting ½), p the probability, were x and
// y drawn from one distribution, of a U at least as far from its mean
// n·m/2 as the observed one. For n+m ≤ 50 p is exact, counted from the
// permutation distribution of the midrank sum; above, it is the normal
// approximation with tie correction (σ² = n·m/12·(N+1 − Σ(t³−t)/(N(N−1))),
// N = n+m, t the size of each group of ties) and continuity correction ½.
// Both samples must be non-empty and hold no NaN.
func MannWhitney(x, y []float64) (u, p float64, err error) {
	n, m := len(x), len(y)
	if n == 0 || m == 0 {
		return 0, 0, fmt.Errorf("Mann-Whitney test: a sample is empty (%d and %d values)", n, m)
	}
	type obs struct {
		v    float64
		from int // 0: x, 1: y
	}
	all := make([]obs, 0, n+m)
	for _, v := range x {
		all = append(all, obs{v, 0})
	}
	for _, v := range y {
		all = append(all, obs{v, 1})
	}
	for _, o := range all {
		if math.IsNaN(o.v) {
			return 0, 0, fmt.Errorf("Mann-Whitney test: a sample holds NaN")
		}
	}
	slices.SortFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	// Doubled midranks (integers): a group of t ties at ranks r+1..r+t
	// gets midrank r + (t+1)/2, doubled 2r + t + 1.
	N := n + m
	rank2 := make([]int, N)
	tieTerm := 0.0 // Σ (t³ − t)
	for i := 0; i < N; {
		j := i
		for j < N && all[j].v == all[i].v {
			j++
		}
		t := j - i
		for k := i; k < j; k++ {
			rank2[k] = 2*i + t + 1
		}
		tieTerm += float64(t*t*t - t)
		i = j
	}
	w2 := 0 // doubled rank sum of x
	for k, o := range all {
		if o.from == 0 {
			w2 += rank2[k]
		}
	}
	// U of x = R_x − n(n+1)/2; U of y = n·m − U of x.
	ux := float64(float64(w2)/2) - float64(float64(n*(n+1))/2)
	u = float64(n*m) - ux
	if N <= exactLimit {
		return u, exactP(rank2, n, w2), nil
	}
	mu := float64(float64(n*m) / 2)
	nf, mf, Nf := float64(n), float64(m), float64(N)
	sigma2 := nf * mf / 12 * ((Nf + 1) - tieTerm/(Nf*(Nf-1)))
	if sigma2 <= 0 { // every value tied: no evidence either way
		return u, 1, nil
	}
	z := (math.Abs(u-mu) - 0.5) / math.Sqrt(sigma2)
	if z <= 0 {
		return u, 1, nil
	}
	return u, math.Min(1, math.Erfc(z/math.Sqrt2)), nil
}

// exactP is the two-sided p-value of the doubled rank sum w2 of a sample
// of n among the pooled doubled midranks rank2: the share of the C(N,n)
// equally likely ways to pick n of them whose sum lies at least as far
// from its mean n·(N+1) as w2 does. It counts subsets by sum with the
// knapsack recurrence, one rank at a time.
func exactP(rank2 []int, n, w2 int) float64 {
	N := len(rank2)
	total := 0
	for _, r := range rank2 {
		total += r
	}
	// cnt[k][s]: ways to pick k of the ranks seen so far with sum s.
	cnt := make([][]float64, n+1)
	for k := range cnt {
		cnt[k] = make([]float64, total+1)
	}
	cnt[0][0] = 1
	for i, r := range rank2 {
		for k := min(i+1, n); k >= 1; k-- {
			prev, cur := cnt[k-1], cnt[k]
			for s := total; s >= r; s-- {
				cur[s] += prev[s-r]
			}
		}
	}
	mean2 := n * (N + 1) // the mean of the doubled rank sum
	dev := abs(w2 - mean2)
	var tail, all float64
	for s, c := range cnt[n] {
		all += c
		if abs(s-mean2) >= dev {
			tail += c
		}
	}
	return math.Min(1, tail/all)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// median of a non-empty sample (mean of the middle two for an even count),
// as backend.Measurement.Seconds takes it.
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	h := len(s) / 2
	if len(s)%2 == 1 {
		return s[h]
	}
	return (s[h-1] + s[h]) / 2
}

// Median is the median of a non-empty sample of kernel times (the mean of
// the middle two for an even count): the figure every rate and slowdown
// here is computed from, robust to a stray slow run.
func Median(v []float64) float64 { return median(v) }

// The states of a slowdown comparison.
const (
	// StateSlower: the current times are significantly slower (p <
	// Alpha) and the medians moved by more than the allowed slowdown.
	StateSlower = "slower"
	// StateUnchanged: no slowdown beyond the allowance holds
	// statistically (it may be faster, or slower within the noise floor).
	StateUnchanged = "unchanged"
	// StateInsufficient: a side has fewer than MinSamples times; the
	// test cannot judge, which is neither a pass nor a failure.
	StateInsufficient = "insufficient samples"
)

// Comparison is the slowdown test's finding on one case.
type Comparison struct {
	// State is StateSlower, StateUnchanged or StateInsufficient.
	State string
	// BaseN and CurN count the baseline's and the current run's times.
	BaseN, CurN int
	// BaseMedian and CurMedian are the two medians, in seconds.
	BaseMedian, CurMedian float64
	// Change is CurMedian/BaseMedian − 1: +0.3 is 30 % slower.
	Change float64
	// P is the rank test's two-sided p-value (NaN when not tested).
	P float64
	// MaxSlowdown is the allowance the change was held to.
	MaxSlowdown float64
}

// Compare decides whether the current kernel times cur are slower than
// the baseline times base beyond maxSlowdown (a fraction: 0.1 is 10 %):
// StateSlower when each side has at least MinSamples times, the
// Mann-Whitney test rejects equal distributions at Alpha, and the median
// moved up by more than maxSlowdown (the noise floor: a significant but
// small shift is not a regression). Times must be finite and not
// negative (the exec protocol allows 0, a timer coarser than the kernel):
// from a zero baseline median any rise is an infinite change.
func Compare(base, cur []float64, maxSlowdown float64) (Comparison, error) {
	c := Comparison{BaseN: len(base), CurN: len(cur), P: math.NaN(), MaxSlowdown: maxSlowdown}
	for _, side := range [][]float64{base, cur} {
		for i, v := range side {
			if !(v >= 0) || math.IsInf(v, 0) {
				return c, fmt.Errorf("kernel time %d is %v: not a finite duration ≥ 0", i, v)
			}
		}
	}
	if len(base) > 0 {
		c.BaseMedian = median(base)
	}
	if len(cur) > 0 {
		c.CurMedian = median(cur)
	}
	switch {
	case len(base) == 0 || len(cur) == 0 || c.CurMedian == c.BaseMedian:
	case c.BaseMedian == 0:
		c.Change = math.Inf(1)
	default:
		c.Change = c.CurMedian/c.BaseMedian - 1
	}
	if len(base) < MinSamples || len(cur) < MinSamples {
		c.State = StateInsufficient
		return c, nil
	}
	_, p, err := MannWhitney(base, cur)
	if err != nil {
		return c, err
	}
	c.P = p
	c.State = StateUnchanged
	if p < Alpha && c.Change > maxSlowdown {
		c.State = StateSlower
	}
	return c, nil
}

// String is the comparison in one line, as a check's detail shows it.
func (c Comparison) String() string {
	switch {
	case c.State == StateInsufficient:
		return fmt.Sprintf("insufficient samples: %d baseline and %d current kernel times, the rank test needs at least %d each (median change %s)",
			c.BaseN, c.CurN, MinSamples, pct(c.Change, c.BaseN > 0 && c.CurN > 0))
	case c.State == StateSlower:
		return fmt.Sprintf("slower: median %s → %s (%s, more than the allowed +%s), p = %.3g < %g (Mann-Whitney, n = %d+%d)",
			Duration(c.BaseMedian), Duration(c.CurMedian), pct(c.Change, true), pctAbs(c.MaxSlowdown), c.P, Alpha, c.BaseN, c.CurN)
	}
	why := "not significant"
	switch {
	case c.P < Alpha && c.Change < 0:
		why = "significantly faster"
	case c.P < Alpha:
		why = fmt.Sprintf("within the allowed +%s", pctAbs(c.MaxSlowdown))
	}
	return fmt.Sprintf("no slowdown: median %s → %s (%s, %s), p = %.3g (Mann-Whitney, n = %d+%d)",
		Duration(c.BaseMedian), Duration(c.CurMedian), pct(c.Change, true), why, c.P, c.BaseN, c.CurN)
}

// pct renders a signed relative change, "—" when there is none.
func pct(x float64, ok bool) string {
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%+.1f %%", 100*x)
}

func pctAbs(x float64) string { return fmt.Sprintf("%.3g %%", 100*x) }

// Duration renders seconds with an SI prefix and 4 significant digits
// ("12.35 µs").
func Duration(s float64) string {
	switch a := math.Abs(s); {
	case a == 0:
		return "0 s"
	case a < 1e-6:
		return fmt.Sprintf("%.4g ns", s*1e9)
	case a < 1e-3:
		return fmt.Sprintf("%.4g µs", s*1e6)
	case a < 1:
		return fmt.Sprintf("%.4g ms", s*1e3)
	}
	return fmt.Sprintf("%.4g s", s)
}
