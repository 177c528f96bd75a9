// Package panictest holds what the panic-guard tests of every package
// share: a backend whose Run panics (a bug below the CLI, on whichever
// goroutine runs the case) and the check that the panic came back to the
// caller's goroutine as a *panicguard.Panic carrying the worker's stack.
package panictest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/internal/panicguard"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Value is what Backend's Run panics with.
const Value = "backend exploded"

// Backend is a backend whose Run panics with Value.
type Backend struct{}

// Name names the backend.
func (Backend) Name() string { return "panicky" }

// Run panics: it stands for any bug in a backend or below it.
func (Backend) Run(context.Context, string, ops.Params, map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *backend.Measurement, error) {
	panic(Value)
}

// Raised calls f, which must panic with a *panicguard.Panic whose value
// prints with value in it and whose stack passes through a function named by frame (the
// goroutine that panicked, not the caller's); subject names the call in
// the failure message. A plain panic value means a goroutine of f's
// recovered nothing and the process would have died; no panic at all,
// that the panic was swallowed.
func Raised(t *testing.T, subject, value, frame string, f func()) {
	t.Helper()
	got := func() (r any) {
		defer func() { r = recover() }()
		f()
		return nil
	}()
	p, ok := got.(*panicguard.Panic)
	if !ok || !strings.Contains(fmt.Sprint(p.Value), value) || !strings.Contains(string(p.Stack), frame) {
		t.Errorf("%s: got %#v, want a *panicguard.Panic of %q with the worker's stack (through %s)", subject, got, value, frame)
	}
}
