package reference

import (
	"math"
	"sort"
)

// Importance returns the mean over the row of x², in float64 (every
// square of an fp16 value is exact, the sum of D of them within
// γ_D(2^-53) of exact). A NaN anywhere gives NaN; an Inf gives +Inf.
func Importance(row []float64) float64 {
	if len(row) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range row {
		s += float64(x * x) // converted: never fused, the same bits everywhere
	}
	return s / float64(len(row))
}

// KeepCount is sparse_compress's keep = clamp(floor(L·ratio), min(sinks,
// L), L).
func KeepCount(l int, ratio float64, sinks int) int {
	keep := int(math.Floor(float64(l) * ratio))
	return max(min(sinks, l), min(keep, l))
}

// Rank reports whether token i (score si) ranks above token j (score sj):
// larger score first, a NaN below every number, ties (NaNs among
// themselves included) to the lower index.
func Rank(si float64, i int, sj float64, j int) bool {
	ni, nj := math.IsNaN(si), math.IsNaN(sj)
	switch {
	case ni != nj:
		return nj
	case ni || si == sj:
		return i < j
	}
	return si > sj
}

// SelectTopK returns the kept token indices ascending: the first
// min(sinks, L) tokens, then the best keep − that of the rest by Rank.
func SelectTopK(scores []float64, sinks, keep int) []int {
	l := len(scores)
	s := min(sinks, l)
	rest := make([]int, 0, l-s)
	for i := s; i < l; i++ {
		rest = append(rest, i)
	}
	sort.Slice(rest, func(a, b int) bool { return Rank(scores[rest[a]], rest[a], scores[rest[b]], rest[b]) })
	out := make([]int, 0, keep)
	for i := 0; i < s; i++ {
		out = append(out, i)
	}
	out = append(out, rest[:keep-s]...)
	sort.Ints(out)
	return out
}
