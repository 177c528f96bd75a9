package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/npuverify/npuverify/safefile"
)

// Result files (--json, --junit; docs/cli.md, "Result files"): a command
// checks every target before its first case, so that a mistyped directory
// is found at once rather than after an hour of kernels, and writes them
// together at the end (safefile.WriteAll: every one or none replaced),
// before anything is printed, so that a closed standard output (check |
// head -1) never costs them. An existing file keeps its mode; one with
// other hard links is refused (a replacement would cut it off from them).

// resultFile is one result file of a command: the flag that names it, its
// path and how to render it.
type resultFile struct {
	flag   string // "--json"
	path   string
	render func(io.Writer) error
}

// checkResultFiles checks, before any work, the result files given (path
// non-empty) among files: two flags naming one file is a usage error (one
// would silently replace the other), as is a file inside store, the golden
// store the command reads (check promises never to write it; "" for
// none); a target whose directory is missing or unwritable, or that may
// not be replaced, is an input error naming the flag and the path.
func checkResultFiles(where, store string, files ...resultFile) error {
	var given []resultFile
	for _, f := range files {
		if f.path != "" {
			given = append(given, f)
		}
	}
	for i, a := range given {
		for _, b := range given[i+1:] {
			if sameTarget(a.path, b.path) {
				return usageErr(where, "%s %s and %s %s name the same file: give each its own", a.flag, a.path, b.flag, b.path)
			}
		}
	}
	if store != "" {
		for _, f := range given {
			if inside(f.path, store) {
				return usageErr(where, "%s %s: inside the golden store %s that is being checked; check never writes the store (write the results elsewhere)", f.flag, f.path, store)
			}
		}
	}
	for _, f := range given {
		if err := safefile.CheckTarget(f.path); err != nil {
			return inputErr(where, fmt.Errorf("%s: %w", f.flag, err))
		}
	}
	return nil
}

// writeResultFiles writes the given result files together (every one or
// none replaced). The error names the flag and the path.
func writeResultFiles(files ...resultFile) error {
	var targets []safefile.Target
	var flags []string
	for _, f := range files {
		if f.path != "" {
			targets = append(targets, safefile.Target{Path: f.path, Perm: 0o644, Render: f.render})
			flags = append(flags, f.flag)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	if err := safefile.WriteAll(targets); err != nil {
		what := strings.Join(flags, " and ")
		if len(targets) > 1 {
			what += " (neither replaced)"
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// sameTarget reports whether a and b name one file: the same cleaned
// absolute path, or (both existing) the same file under two names.
func sameTarget(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == bb {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// inside reports whether path lies in directory dir (after resolving the
// symbolic links of path's directory and of dir).
func inside(path, dir string) bool {
	resolve := func(p string) string {
		abs, err := filepath.Abs(p)
		if err != nil {
			return p
		}
		if r, err := filepath.EvalSymlinks(abs); err == nil {
			return r
		}
		return abs
	}
	d := resolve(dir)
	p := filepath.Join(resolve(filepath.Dir(path)), filepath.Base(path))
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resultWriteErr is the error of a command whose result files could not
// be written after its cases ran with exit code code: an input error (2)
// unless the verdict was more severe (a backend failure, 3, is never
// masked by a full disk).
func resultWriteErr(where string, code int, err error) error {
	return &cliError{max(code, exitUsage), where, err}
}
