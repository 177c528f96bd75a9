// Package panicguard carries a panic from a worker goroutine to the
// goroutine that waits for the workers, where the command's guard (the
// CLI's recover, which turns a panic into "internal error", exit 3, and
// its stack into a file) can see it. A panic in a goroutine of its own
// otherwise kills the process with every goroutine's stack on the user's
// terminal: no deferred recover on another goroutine can catch it.
package panicguard

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
)

// Panic is a panic recovered on one goroutine, to be raised again on
// another: the value and the stack of the goroutine that panicked.
type Panic struct {
	Value any
	Stack []byte
}

// Error describes the panic: its value (a *Panic is raised as is, so the
// CLI reports the value it carries).
func (p *Panic) Error() string { return fmt.Sprintf("panic: %v", p.Value) }

// Catcher keeps the first panic of a group of goroutines. The zero value
// is ready to use.
type Catcher struct{ p atomic.Pointer[Panic] }

// Catch recovers a panic and keeps it (the first one only). It must be
// called directly by a deferred call: defer c.Catch().
func (c *Catcher) Catch() {
	if r := recover(); r != nil {
		c.keep(r)
	}
}

func (c *Catcher) keep(r any) {
	p, ok := r.(*Panic)
	if !ok {
		p = &Panic{Value: r, Stack: debug.Stack()}
	}
	c.p.CompareAndSwap(nil, p)
}

// Caught reports whether a panic has been kept: the other goroutines of
// the group should stop taking work.
func (c *Catcher) Caught() bool { return c.p.Load() != nil }

// Rethrow raises the kept panic, if any, on the calling goroutine (as a
// *Panic, which keeps the original stack).
func (c *Catcher) Rethrow() {
	if p := c.p.Load(); p != nil {
		panic(p)
	}
}
