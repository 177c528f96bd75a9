package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/spec"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
)

// Exit codes (docs/cli.md).
const (
	exitPass    = 0
	exitFail    = 1 // verification failed
	exitUsage   = 2 // usage or input error
	exitBackend = 3 // backend failure (and internal errors)
)

const usage = `usage: npuverify <command> [arguments]

commands:
  ops                      list operators: params, dims, distributions, inputs, outputs
  run OP ...               run one op on .npy inputs, write the outputs and cost.json
  check ...                verify the golden cases against a backend
  report ...               accuracy + performance report on the default cases
  golden update|verify     regenerate or check the golden case store
  mutate ...               mutation score: the default suite against injected kernel faults
  explore ...              search for failing cases generated from the op contracts, shrunk, written to a store
  version                  print the version (also --version)

Run "npuverify help <command>" or "npuverify <command> -h" for a command's flags.
Exit codes: 0 pass, 1 verification failed, 2 usage or input error, 3 backend failure.
`

// commands maps each command name to its implementation.
var commands = map[string]func(args []string, stdout, stderr io.Writer) error{
	"ops":     func(args []string, stdout, _ io.Writer) error { return cmdOps(args, stdout) },
	"run":     cmdRun,
	"check":   cmdCheck,
	"report":  cmdReport,
	"golden":  cmdGolden,
	"mutate":  cmdMutate,
	"explore": cmdExplore,
}

// cliError is an error with its exit code and where it happened.
type cliError struct {
	code  int
	where string
	err   error
}

func (e *cliError) Error() string {
	if e.where == "" {
		return e.err.Error()
	}
	return e.where + ": " + e.err.Error()
}

func (e *cliError) Unwrap() error { return e.err }

func usageErr(where, format string, args ...any) error {
	return &cliError{exitUsage, where, fmt.Errorf(format, args...)}
}

func inputErr(where string, err error) error { return &cliError{exitUsage, where, err} }

func backendErr(where string, err error) error { return &cliError{exitBackend, where, err} }

// harnessErr attributes an error of the harness or of a runner over it
// (golden, report) by its type: an *harness.InputError is a usage or input
// error (exit 2), anything else the backend's (exit 3). This is where the
// typed errors become exit codes; the packages below never pick one.
func harnessErr(where string, err error) error {
	if harness.IsInput(err) {
		return inputErr(where, err)
	}
	return backendErr(where, err)
}

// failed is returned by a command whose checks ran and failed; it has
// already printed its report, so run prints nothing more.
type failed struct{ code int }

func (f failed) Error() string { return "verification failed" }

// run is the whole CLI: it parses args, runs a command, prints errors as
// "npuverify: <where>: <what>" and returns the exit code. A panic is an
// internal error (exit 3, internalError): one line on stderr, the stack
// in a file it names.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			code = internalError(r, debug.Stack(), args, stderr)
		}
	}()
	if len(args) == 0 {
		fmt.Fprintf(stderr, "npuverify: missing command\n%s", usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "help", "-h", "-help", "--help":
		if cmd == "help" && len(rest) > 0 {
			// "help check" is "check -h"; "help golden update" is
			// "golden update -h".
			if _, ok := commands[rest[0]]; !ok {
				return exitCode(usageErr("help", "unknown command %q (want ops, run, check, report, golden, mutate or explore)", rest[0]), stderr)
			}
			return run(append(slices.Clone(rest), "-h"), stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
		return exitPass
	case "version", "-version", "--version":
		if len(rest) > 0 {
			return exitCode(usageErr("version", "unexpected argument %q", rest[0]), stderr)
		}
		fmt.Fprintln(stdout, versionLine())
		return exitPass
	}
	fn, ok := commands[cmd]
	if !ok {
		return exitCode(usageErr("", "unknown command %q (want ops, run, check, report, golden, mutate or explore)", cmd), stderr)
	}
	return exitCode(fn(rest, stdout, stderr), stderr)
}

// versionLine is what "npuverify version" prints: the module version the
// binary was built at (a tag, a pseudo-version, or "(devel)" for a build
// of a source tree the toolchain did not stamp), the VCS revision and
// whether the tree was modified when the toolchain recorded them, and the
// Go version. A bug report then names the exact build.
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "npuverify (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	line := "npuverify " + v
	if rev != "" {
		line += " (revision " + rev + modified + ")"
	}
	return line + " " + bi.GoVersion
}

// exitCode prints err (unless the command already reported it) and maps it
// to an exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitPass
	}
	var f failed
	if errors.As(err, &f) {
		return f.code
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitPass
	}
	fmt.Fprintf(stderr, "npuverify: %v\n", err)
	var ce *cliError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case harness.IsInput(err):
		return exitUsage
	}
	return exitBackend
}

// newFlagSet returns a flag set that reports errors through run's format
// instead of printing them itself; -h prints the usage to stdout.
func newFlagSet(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: npuverify %s\n", synopsis)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprint(stdout, "\nflags:\n")
		}
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse parses args with fs, allowing positional arguments between flags
// (npuverify run OP --param ... and npuverify run --param ... OP both
// work), and returns the positional arguments.
//
// The usage goes to stdout exactly once, on -h or -help, and never with a
// parse error: package flag calls fs.Usage itself on both (which printed
// it twice on -h, and on stdout after a bad flag), so it is silenced
// while parsing and called here.
func parse(fs *flag.FlagSet, where string, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {}
	defer func() { fs.Usage = usage }()
	if len(args) == 1 && args[0] == "help" {
		// "npuverify check help": a lone help asks for the usage, as -h
		// does, rather than being an unexpected argument.
		usage()
		return nil, flag.ErrHelp
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, err
			}
			return nil, usageErr(where, "%v (see npuverify %s -h)", err, where)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse stops at the first positional argument, or after "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// multiFlag collects a repeated flag's values.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// deviceFlags are the flags that choose a backend.
type deviceFlags struct {
	backend string
	profile string
	timeout time.Duration
}

func (d *deviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.backend, "backend", "emulator", "backend: emulator, exec:'CMD ARGS' (an external kernel, run once per case) or worker:'CMD ARGS' (one kept running per job, a case per request); see docs/exec-backend.md")
	fs.StringVar(&d.profile, "profile", "ascend910b", "device profile: a built-in name ("+strings.Join(npu.ProfileNames(), ", ")+") or a JSON file")
	fs.DurationVar(&d.timeout, "timeout", 60*time.Second, "time limit per case")
}

// build returns the profile and the backend the flags name.
func (d *deviceFlags) build(where string) (npu.Profile, backend.Backend, error) {
	prof, err := loadProfile(d.profile)
	if err != nil {
		return npu.Profile{}, nil, usageErr(where, "--profile %s: %v", d.profile, err)
	}
	if d.timeout <= 0 {
		return npu.Profile{}, nil, usageErr(where, "--timeout %s: must be positive", d.timeout)
	}
	b, err := spec.Open(d.backend, prof, d.timeout)
	if err != nil {
		return npu.Profile{}, nil, usageErr(where, "--backend %s: %v", d.backend, err)
	}
	return prof, b, nil
}

// caseTimeout is the deadline the CLI puts on each case's context: the
// --timeout for the emulator, none for an exec or worker backend. Those
// time their command themselves and report "timed out after <--timeout>";
// a context deadline of the same length would start earlier (before the
// case directory is written), fire first, and be reported as the caller's
// deadline of some odd number of milliseconds.
func (d *deviceFlags) caseTimeout(b backend.Backend) time.Duration {
	switch b.(type) {
	case *backend.Exec, *backend.Worker:
		return 0
	}
	return d.timeout
}

// closeBackend closes b when it holds processes (an exec or worker
// backend): a worker exits when its stdin closes, and is killed with what
// it started when it does not. A worker that did not exit 0 is worth a
// line on stderr, not a different exit code: every case was judged.
func closeBackend(b backend.Backend, stderr io.Writer, where string) {
	c, ok := b.(io.Closer)
	if !ok {
		return
	}
	if err := c.Close(); err != nil {
		fmt.Fprintf(stderr, "npuverify: %s: closing backend %s: %v\n", where, b.Name(), err)
	}
}

// loadProfile resolves a built-in profile name or a JSON file path.
func loadProfile(s string) (npu.Profile, error) {
	if p, err := npu.ProfileByName(s); err == nil {
		return p, nil
	} else if _, statErr := os.Stat(s); statErr != nil {
		return npu.Profile{}, fmt.Errorf("%v, and no such file", err)
	}
	return npu.LoadProfile(s)
}

// parseShard parses "I/N" (1 ≤ I ≤ N).
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || i < 1 || i > n {
		return 0, 0, fmt.Errorf("--shard %q: want I/N with 1 ≤ I ≤ N, e.g. 1/4", s)
	}
	return i, n, nil
}

// parseMKN parses "MxKxN" strictly: three positive decimal integers and
// nothing else ("512x512x512junk" and "512x512" are errors, where a scanf
// pattern stopped reading at the junk and accepted it).
func parseMKN(s string) (m, k, n int, err error) {
	parts := strings.Split(s, "x")
	if len(parts) != 3 {
		return 0, 0, 0, errors.New("want MxKxN with positive sizes, e.g. 512x512x512, or off")
	}
	var v [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x <= 0 || p != strconv.Itoa(x) {
			return 0, 0, 0, fmt.Errorf("size %q: want MxKxN with positive sizes, e.g. 512x512x512, or off", p)
		}
		v[i] = x
	}
	return v[0], v[1], v[2], nil
}
