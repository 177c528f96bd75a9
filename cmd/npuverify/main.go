// Command npuverify tests and verifies NPU operators (docs/cli.md):
//
//	npuverify ops                                  list ops, params, modes, inputs, outputs
//	npuverify run OP [--param k=v]... --in NAME=FILE.npy... --out DIR [--backend B] [--profile P]
//	                                               write DIR/<output>.npy and DIR/cost.json
//	npuverify check [--golden DIR] [--backend B] [--op OP] [--policy P] [--shard I/N]
//	                [--json FILE] [--junit FILE]   verify golden cases; table on stdout
//	npuverify report [--out DIR] [--format md,json,html]   accuracy + performance report
//	npuverify golden update|verify [--dir DIR]
//	npuverify explore [--op OP]... [--backend B] [--budget D] [--seed N] [--out DIR] [--db DIR] [--json FILE]
//	                                               search for failing cases, shrink them, add them to a store
//
// Exit codes: 0 pass, 1 verification failed, 2 usage or input error,
// 3 backend failure. Errors go to stderr as "npuverify: <where>: <what>".
//
// A panic in a command's own goroutine, or in a worker goroutine that
// raises it again there (internal/panicguard: golden.Check's case workers,
// the harness's judge), is an internal error:
// exit 3, one line "npuverify: internal error: ..." on stderr naming the
// file the stack was written to (npuverify-panic-*.txt in the temporary
// directory, $TMPDIR or /tmp), never the stack itself on the terminal
// (NPUVERIFY_DEBUG=1 adds it to stderr too).
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/npuverify/npuverify/internal/panicguard"
)

func main() {
	ignoreBrokenPipes()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// internalError reports the panic r (with its stack) and returns the
// exit code: 3. The stack goes to a new file, which the one line on
// stderr names, so that the user has something to attach to a bug report
// and their terminal is not flooded with goroutine dumps.
func internalError(r any, stack []byte, args []string, stderr io.Writer) int {
	if p, ok := r.(*panicguard.Panic); ok {
		// Raised again from a worker goroutine: its own value and stack.
		r, stack = p.Value, p.Stack
	}
	msg := strings.ReplaceAll(fmt.Sprint(r), "\n", " ")
	where := "not saved: "
	f, err := os.CreateTemp("", "npuverify-panic-*.txt")
	if err == nil {
		_, err = fmt.Fprintf(f, "npuverify %s\n%s %s/%s\npanic: %s\n\n%s", strings.Join(args, " "), runtime.Version(), runtime.GOOS, runtime.GOARCH, fmt.Sprint(r), stack)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			where = "in "
		}
	}
	if err == nil {
		where += f.Name()
	} else {
		where += err.Error()
	}
	fmt.Fprintf(stderr, "npuverify: internal error: %s (a bug in npuverify; its stack is %s; NPUVERIFY_DEBUG=1 prints it here too)\n", msg, where)
	if os.Getenv("NPUVERIFY_DEBUG") != "" {
		stderr.Write(stack)
	}
	return exitBackend
}
