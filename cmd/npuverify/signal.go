package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/npuverify/npuverify/backend"
)

// Interruption (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE): one shutdown
// path for every command that runs cases or kernels (docs/cli.md, "Signals
// and exit codes").
//
// Go's default on these signals is to die at once (SIGQUIT with a dump of
// every goroutine), which leaves an exec kernel running in its own process
// group and its case directory behind. The commands catch them instead:
// the first signal cancels the run's context and closes the exec or
// worker backend (every running kernel and its descendants are killed and
// their case directories removed); the command then reports what it has
// (check and explore write their --json and --junit files, marked
// "interrupted"; report and golden update replace nothing) and exits with
// 128 + the signal's number: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP),
// 131 (SIGQUIT), 141 (SIGPIPE), as a shell reports a process killed by
// it. A second signal exits at once, with the same code.
//
// SIGPIPE means that the reader of standard output or standard error has
// gone (npuverify check | head -1). Writes to a closed output fail quietly
// instead of killing the process (main catches SIGPIPE for the whole run,
// ignoreBrokenPipes), so result files are always written. While cases
// are still running, a SIGPIPE with standard output or standard error
// closed ends the run as any other signal does; once they have all run,
// it changes nothing: the exit code is the verdict's (a successful run
// whose output nobody read is still 0). A SIGPIPE while both outputs are
// open is not about them (a worker's closed stdin is the backend's
// failure, reported as such) and is ignored.

// interruptSignals are the signals the commands catch.
var interruptSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE}

// interrupt watches for the interrupt signals while a command runs.
type interrupt struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	ch     chan os.Signal
	done   chan struct{}
	once   sync.Once

	mu       sync.Mutex
	sig      syscall.Signal // 0 until a signal arrives
	finished bool           // every case has run: a SIGPIPE changes nothing
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
				// A SIGPIPE comes with every write to the closed output: after
				// the first (or once the cases are done) it is no news.
				if sig == syscall.SIGPIPE && (it.finished || it.sig != 0 || !outputClosed()) {
					it.mu.Unlock()
					continue
				}
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

// finish marks the cases done: from now on a SIGPIPE (the output's reader
// gone while the results are printed) no longer interrupts the command.
func (it *interrupt) finish() {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.finished = true
}

// outputClosed reports whether standard output or standard error is a
// pipe or socket whose reader has gone (poll reports an error or hangup
// on it): the SIGPIPE is about them.
func outputClosed() bool {
	fds := []unix.PollFd{{Fd: 1}, {Fd: 2}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return false
	}
	for _, f := range fds {
		if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}

// ignoreBrokenPipes makes a write to a closed standard output or error
// fail with EPIPE instead of killing the process (Go's default), for the
// whole run: the result files are written after the table, and a run's
// exit code is its verdict, whoever reads its output. Only the signal's
// handler changes: commands started from here get the default back.
func ignoreBrokenPipes() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGPIPE)
	go func() {
		for range ch {
		}
	}()
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
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return s.String()
}
