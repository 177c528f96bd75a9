package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/npuverify/npuverify/backend"
)

// Interruption (SIGINT, SIGTERM, SIGHUP) of check and run.
//
// Go's default on these signals is to die at once, which leaves an exec
// kernel running in its own process group and its case directory behind.
// check and run catch them instead: the first signal cancels the run's
// context and closes the exec backend (every running kernel and its
// descendants are killed and their case directories removed); the command
// then reports what it has (check writes its table and its --json and
// --junit files, marked "interrupted") and exits with 128 + the signal's
// number: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP), as a shell reports a
// process killed by it. A second signal exits at once, with the same code.

// interruptSignals are the signals check and run catch.
var interruptSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// interrupt watches for the interrupt signals while a command runs.
type interrupt struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	ch     chan os.Signal
	done   chan struct{}
	once   sync.Once

	mu  sync.Mutex
	sig syscall.Signal // 0 until a signal arrives
}

// errInterrupted is the cause of the context's cancellation.
type errInterrupted struct{ sig syscall.Signal }

func (e errInterrupted) Error() string { return "interrupted by " + signalName(e.sig) }

// catchSignals starts watching; b is closed on the first signal when it
// holds processes (an exec or worker backend). The caller must call stop.
func catchSignals(b backend.Backend, stderr io.Writer) *interrupt {
	ctx, cancel := context.WithCancelCause(context.Background())
	it := &interrupt{ctx: ctx, cancel: cancel, ch: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(it.ch, interruptSignals...)
	go func() {
		for {
			select {
			case <-it.done:
				return
			case s := <-it.ch:
				sig, _ := s.(syscall.Signal)
				it.mu.Lock()
				first := it.sig == 0
				if first {
					it.sig = sig
				}
				it.mu.Unlock()
				if !first {
					fmt.Fprintf(stderr, "npuverify: %s again: exiting at once\n", signalName(sig))
					os.Exit(128 + int(sig))
				}
				it.cancel(errInterrupted{sig})
				if c, ok := b.(io.Closer); ok {
					go c.Close() // kills the kernels; Runs return and remove their directories
				}
			}
		}
	}()
	return it
}

// signal returns the signal that interrupted the command, or 0.
func (it *interrupt) signal() syscall.Signal {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.sig
}

// err returns nil when no signal arrived, otherwise the error that makes
// the command exit with 128 + the signal's number.
func (it *interrupt) err(where string, what string) error {
	sig := it.signal()
	if sig == 0 {
		return nil
	}
	return &cliError{128 + int(sig), where, fmt.Errorf("interrupted by %s: %s", signalName(sig), what)}
}

// stop stops watching and restores the default handling.
func (it *interrupt) stop() {
	it.once.Do(func() {
		signal.Stop(it.ch)
		close(it.done)
		it.cancel(nil)
	})
}

// signalName is the signal's conventional name ("SIGINT").
func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}
