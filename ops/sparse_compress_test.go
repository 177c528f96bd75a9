package ops

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/tensor"
)

// TestSparseCompressJudgeBand: tokens 2 and 3 have importances within
// each other's score bounds (their rows differ in the order of equal
// squares' partner values, so two valid fp32 summation orders may rank
// them either way): keeping either passes; keeping token 1, which lies
// far below the cut, fails, as do a dropped sink, unsorted indices and a
// later bit-identical row kept before an earlier one.
func TestSparseCompressJudgeBand(t *testing.T) {
	const l, d = 5, 4
	k := tensor.MustNew(tensor.Float16, 1, l, d)
	rows := [l][d]float64{
		{1, 1, 1, 1},         // sink
		{0.1, 0.1, 0.1, 0.1}, // far below
		{1, 0.5, 0.25, 2},    // inside the band of row 3
		{2, 0.25, 0.5, 1},    // the same multiset: equal reference score
		{0.5, 0.5, 0.5, 0.5}, // below
	}
	for i, r := range rows {
		for j, x := range r {
			k.SetFloat64(i*d+j, x, tensor.Numerics{})
		}
	}
	ref, bnd := CompressScores(k, 0)
	if ref[2] != ref[3] || bnd[2] == 0 {
		t.Fatalf("setup: scores %v bounds %v, want tokens 2 and 3 tied with a non-zero band", ref, bnd)
	}
	for _, tc := range []struct {
		idx  []int
		want string // "" = accepted
	}{
		{[]int{0, 2}, ""},
		{[]int{0, 3}, ""},
		{[]int{0, 1}, "clears it"},
		{[]int{1, 2}, "sink 0 dropped"},
		{[]int{2, 0}, "not ascending"},
	} {
		err := CheckSelection(k, 0, ref, bnd, 1, tc.idx)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("sparse_compress keep %v: err = %v, want %q", tc.idx, err, tc.want)
		}
	}
	// Bit-identical rows: only the lower one may be kept alone.
	for j := 0; j < d; j++ {
		k.SetBits(3*d+j, k.Bits(2*d+j))
	}
	ref, bnd = CompressScores(k, 0)
	if err := CheckSelection(k, 0, ref, bnd, 1, []int{0, 3}); err == nil || !strings.Contains(err.Error(), "identical earlier row") {
		t.Errorf("sparse_compress identical rows keep [0 3]: err = %v, want the lower-index rule", err)
	}
	if err := CheckSelection(k, 0, ref, bnd, 1, []int{0, 2}); err != nil {
		t.Errorf("sparse_compress identical rows keep [0 2]: %v, want accepted", err)
	}
}

// TestSparseCompressBadParams: keep_ratio ≤ 0 or > 1 and negative sinks
// are errors naming the parameter.
func TestSparseCompressBadParams(t *testing.T) {
	for _, p := range []Params{{"keep_ratio": "0"}, {"keep_ratio": "-0.5"}, {"keep_ratio": "1.5"}, {"keep_ratio": "x"}, {"sinks": "-1"}} {
		_, err := SparseCompress.Validate(p)
		var name string
		for k := range p {
			name = k
		}
		if err == nil || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("sparse_compress %v: err = %v, want one naming %q", p, err, name)
		}
	}
}

// TestIdenticalRowsMatchesAllPairs holds identicalRows (rows compared
// only within tied scores) to grouping every row by its bit patterns, on
// heads with duplicated rows, ±0 rows (the same score, different bits),
// NaN rows and distinct rows of equal score, seeded.
func TestIdenticalRowsMatchesAllPairs(t *testing.T) {
	const seed, h, l, d = 12, 3, 64, 8
	r := rand.New(rand.NewPCG(seed, 0))
	k := tensor.MustNew(tensor.Float16, h, l, d)
	for i := range h * l {
		switch src := r.IntN(8); {
		case src < 3 && i%l > 0: // a copy of an earlier row of the head
			j := i - 1 - r.IntN(i%l)
			for c := range d {
				k.SetBits(i*d+c, k.Bits(j*d+c))
			}
			continue
		case src == 3: // ±0 entries: equal scores, maybe different bits
			for c := range d {
				k.SetFloat64(i*d+c, math.Copysign(0, float64(r.IntN(2))-0.5), tensor.Numerics{})
			}
			continue
		case src == 4: // a permutation of {1, 2, 0, …}: equal scores, different rows
			for c := range d {
				k.SetFloat64(i*d+c, 0, tensor.Numerics{})
			}
			k.SetFloat64(i*d+r.IntN(d), 1, tensor.Numerics{})
			continue
		}
		for c := range d {
			v := r.NormFloat64()
			if r.IntN(40) == 0 {
				v = math.NaN()
			}
			k.SetFloat64(i*d+c, v, tensor.Numerics{})
		}
	}
	for hh := range h {
		ref, _ := CompressScores(k, hh)
		from := r.IntN(3)
		groups := map[string][]int{}
		for i := from; i < l; i++ {
			groups[rowKey(k, (hh*l+i)*d, d)] = append(groups[rowKey(k, (hh*l+i)*d, d)], i)
		}
		var want [][]int
		for _, g := range groups {
			if len(g) >= 2 {
				want = append(want, g)
			}
		}
		slices.SortFunc(want, func(a, b []int) int { return a[0] - b[0] })
		if got := identicalRows(k, hh, ref, from); !reflect.DeepEqual(got, want) {
			t.Fatalf("sparse_compress head %d from %d seed=%d: identicalRows = %v, want %v (all rows grouped by bits)", hh, from, seed, got, want)
		}
	}
}
