// Package ckernel builds the independent C kernel of
// backend/testdata/ckernel for the tests that put it behind the exec
// backend, and says in one place which cases it implements, so that every
// test aiming it at a case set (the exec backend's own, the conformance
// suite's) scopes it the same way.
package ckernel

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/npuverify/npuverify/ops"
)

// unimplemented lists, per op, the values of its enumerated params the C
// kernel does not implement although it dispatches the op. It is empty:
// the kernel implements every dtype, mode, layout and cache dtype of every
// op it dispatches. A value the contract gains that the kernel lacks
// fails TestExecCKernel and TestCKernel (the kernel exits "unsupported")
// until the kernel implements it or it is listed here, so the scope never
// silently narrows.
var unimplemented = map[string]map[string][]string{}

// table is the C kernel's dispatch table, read once.
var table = sync.OnceValues(readTable)

// Ops returns the names of the ops the C kernel implements, sorted: those
// its dispatch table (the kernels array of main.c) names. It reads them
// from the source, so that an op added to the kernel is in scope at once
// and one left out of it is not. It panics when main.c cannot be read or
// no longer holds the table: the tests that scope by it cannot run.
func Ops() []string {
	names, err := table()
	if err != nil {
		panic("ckernel: " + err.Error())
	}
	return slices.Clone(names)
}

// Supports reports whether the C kernel implements c: its op is one Ops
// names, c's params validate (a case whose params do not is no kernel's
// case), and none of them, defaults filled in, takes a value the kernel
// does not implement.
func Supports(c ops.Case) bool {
	if !slices.Contains(Ops(), c.Op) {
		return false
	}
	op, err := ops.Lookup(c.Op)
	if err != nil {
		return false
	}
	p, err := op.Validate(c.Params)
	if err != nil {
		return false
	}
	for name, values := range unimplemented[c.Op] {
		if slices.Contains(values, p[name]) {
			return false
		}
	}
	return true
}

// tableRE matches the dispatch table of main.c and, within it, an entry.
var (
	tableRE = regexp.MustCompile(`(?s)\bkernels\[\] = \{(.*?)\n\};`)
	entryRE = regexp.MustCompile(`\{"([a-z0-9_]+)",`)
)

// readTable reads the op names of main.c's dispatch table.
func readTable() ([]string, error) {
	dir, err := sourceDir()
	if err != nil {
		return nil, fmt.Errorf("the C kernel sources: %w", err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "main.c"))
	if err != nil {
		return nil, err
	}
	m := tableRE.FindSubmatch(src)
	if m == nil {
		return nil, fmt.Errorf("%s holds no dispatch table (kernels[] = {...};)", filepath.Join(dir, "main.c"))
	}
	var names []string
	for _, e := range entryRE.FindAllSubmatch(m[1], -1) {
		names = append(names, string(e[1]))
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("the dispatch table of %s names no op", filepath.Join(dir, "main.c"))
	}
	slices.Sort(names)
	return names, nil
}

// FaultEnv is the environment variable that switches on the C kernel's
// injected faults it names, separated by commas
// (backend/testdata/ckernel/case.c lists them; SizeFaults the size-only
// ones).
const FaultEnv = "NPUVERIFY_CKERNEL_FAULT"

// Build compiles the C kernel with the system C compiler ($CC, else cc,
// gcc or clang) into a temporary directory of tb and returns the binary's
// path. It skips tb only when no C compiler is found: a kernel that does
// not compile fails it. The kernel includes clients/c/npuverify.h by a
// relative path, so its sources alone are the command line.
func Build(tb testing.TB) string {
	tb.Helper()
	src, err := sourceDir()
	if err != nil {
		tb.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(src, "*.c"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("C kernel sources in %s: none found (%v)", src, err)
	}
	return Compile(tb, "ckernel", append([]string{"-O2", "-std=c11", "-Wall"}, files...))
}

// BuildExample compiles clients/c/examples/<name>.c, a driver on the C
// client's header alone, with warnings as errors, and returns the
// binary's path; it skips tb as Build does.
func BuildExample(tb testing.TB, name string) string {
	tb.Helper()
	dir := ClientDir(tb)
	return Compile(tb, name, []string{"-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic",
		"-I", dir, filepath.Join(dir, "examples", name+".c")})
}

// ClientDir returns clients/c, the C client's directory (npuverify.h).
func ClientDir(tb testing.TB) string {
	tb.Helper()
	src, err := sourceDir()
	if err != nil {
		tb.Fatal(err)
	}
	dir := filepath.Join(src, "..", "..", "..", "clients", "c")
	if _, err := os.Stat(filepath.Join(dir, "npuverify.h")); err != nil {
		tb.Fatalf("the C client: %v", err)
	}
	return dir
}

// CC returns the system C compiler ($CC, else cc, gcc or clang), skipping
// tb when there is none.
func CC(tb testing.TB) string {
	tb.Helper()
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc", "clang"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	tb.Skip("no C compiler found ($CC, cc, gcc or clang in PATH): cannot build the C kernel (backend/testdata/ckernel) or the C client's programs (clients/c)")
	return ""
}

// Compile compiles and links args (flags and sources) with libm into a
// binary named name in a temporary directory of tb and returns its path;
// it skips tb when no C compiler is found and fails it when the build
// fails.
func Compile(tb testing.TB, name string, args []string) string {
	tb.Helper()
	cc := CC(tb)
	bin := filepath.Join(tb.TempDir(), name)
	cmd := exec.Command(cc, append(append([]string{"-o", bin}, args...), "-lm")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building %s with %s: %v\n%s", name, cc, err, out)
	}
	return bin
}

// sourceDir is backend/testdata/ckernel, found from this file's own path:
// the tests that build the kernel run in their packages' directories,
// which differ.
func sourceDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", os.ErrNotExist
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "backend", "testdata", "ckernel")
	if _, err := os.Stat(filepath.Join(dir, "main.c")); err != nil {
		return "", err
	}
	return dir, nil
}
