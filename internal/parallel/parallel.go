// Package parallel splits element loops of the verification path (format
// conversions, references, bounds) and the emulator's launches over the
// host's cores, on helper goroutines that stay awake between loops (Do). The work is
// cut into contiguous ranges, so a loop whose iterations are independent
// computes exactly what it computes serially.
package parallel

import "runtime"

// For calls fn(lo, hi) on contiguous ranges covering [0, n), at most one
// per core (GOMAXPROCS) and none shorter than grain (except the last),
// and returns when all have returned. With one range it runs fn on the
// calling goroutine: small loops pay nothing.
func For(n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	parts := min(runtime.GOMAXPROCS(0), max(1, n/max(grain, 1)))
	if parts <= 1 {
		fn(0, n)
		return
	}
	step := (n + parts - 1) / parts
	Do((n+step-1)/step, func(i int) { fn(i*step, min(i*step+step, n)) })
}
