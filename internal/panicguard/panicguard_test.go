package panicguard

import (
	"strings"
	"sync"
	"testing"
)

func boom() { panic("worker exploded") }

// TestRethrowCarriesTheWorkersPanic: a panic in a worker goroutine reaches
// the waiting goroutine as a *Panic holding the value and the worker's
// own stack (the function that panicked), and only the first is kept.
func TestRethrowCarriesTheWorkersPanic(t *testing.T) {
	var c Catcher
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			defer c.Catch()
			boom()
		})
	}
	wg.Wait()
	if !c.Caught() {
		t.Fatal("Catcher after 4 panicking workers: got Caught() false, want true")
	}
	got := func() (r any) {
		defer func() { r = recover() }()
		c.Rethrow()
		return nil
	}()
	p, ok := got.(*Panic)
	if !ok || p.Value != "worker exploded" || !strings.Contains(string(p.Stack), "panicguard.boom") {
		t.Errorf("Rethrow: got %#v, want a *Panic with value %q and the worker's stack (through boom)", got, "worker exploded")
	}
	var none Catcher
	none.Rethrow() // no panic kept: returns
}
