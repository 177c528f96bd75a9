//go:build amd64 && !purego

package verify

import "github.com/npuverify/npuverify/bound"

// boundRunAVX2 is boundRun.runGo on elements [0, n) of gv, rv, bv and av
// (n a multiple of 4), four at a time, stopping at the first group of
// four that holds an element runGo would stop at, or one whose relative
// error passes runGo's test only by its division (an error of 0 passes
// without it, as in runGo): the same
// integer and IEEE operations on each lane (|g − r|, e ≤ b, relSkip·|r|,
// e/b, the ulp at r as a clamped power of two, each correctly rounded as
// the scalar ones are), the counts and maxima gathered per lane into v.
// It returns how many elements it gathered.
//
//go:noescape
func boundRunAVX2(v *boundRunVec, gv, rv, bv *float64, av *bound.Special, n int) int
