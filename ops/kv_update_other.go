//go:build !amd64 || purego

package ops

import "github.com/npuverify/npuverify/bound"

// kvUseNT is false: no non-temporal stores on this platform or build.
var kvUseNT = false

// kvStream64 copies src to dst (same length).
func kvStream64(dst, src []float64) { copy(dst, src[:len(dst)]) }

// kvStreamSpecial copies src to dst (same length).
func kvStreamSpecial(dst, src []bound.Special) { copy(dst, src[:len(dst)]) }
