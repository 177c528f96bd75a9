package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/opdb"
)

const modulePath = "github.com/npuverify/npuverify"

// cmdGolden is "golden update [--dir DIR] [--dry-run] [--prune]" and
// "golden verify [--dir DIR]".
//
// update regenerates the default case set with the emulator on the
// ascend910b profile into DIR, atomically per case, and prints what
// changed. Cases of DIR that are not in the default set are a user's own
// (explore's findings, hand-made ones): they are kept unless --prune, and
// --dry-run prints what would change without writing anything. DIR defaults to golden/cases of the source tree: the directory
// of the go.mod of module github.com/npuverify/npuverify found in the
// working directory or above it. The binary embeds the set it was built
// with; rebuild to embed an updated one.
//
// verify checks DIR, or the embedded set without --dir: hashes, dtypes,
// shapes, inputs reproducible from their seeds, nothing stray. It exits 1
// when a problem is found.
func cmdGolden(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "help" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(stdout, "usage: npuverify golden update|verify [--dir DIR] (update also takes --dry-run and --prune)")
			return nil
		}
		return usageErr("golden", "missing subcommand (want update or verify)")
	}
	sub, rest := args[0], args[1:]
	where := "golden " + sub
	switch sub {
	case "update", "verify":
	default:
		return usageErr("golden", "unknown subcommand %q (want update or verify)", sub)
	}
	synopsis := where + " [--dir DIR]"
	if sub == "update" {
		synopsis += " [--dry-run] [--prune]"
	}
	fs := newFlagSet(where, synopsis, stdout)
	dirDoc := "golden store directory (default: the embedded set)"
	if sub == "update" {
		dirDoc = "golden store directory (default: golden/cases of the source tree above the working directory)"
	}
	dir := fs.String("dir", "", dirDoc)
	var opts golden.UpdateOptions
	if sub == "update" {
		fs.BoolVar(&opts.DryRun, "dry-run", false, "print what would be added, changed and removed; write nothing")
		fs.BoolVar(&opts.Prune, "prune", false, "remove the cases of the store that are not in the default set (kept otherwise)")
	}
	pos, err := parse(fs, where, rest)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr(where, "unexpected argument %q", pos[0])
	}
	if sub == "update" {
		intr := catchSignals(nil, stderr) // one shutdown path (signal.go)
		defer intr.stop()
		err := goldenUpdate(intr.ctx, *dir, opts, stdout)
		if ierr := intr.err(where, "update stopped"); ierr != nil {
			return ierr
		}
		return err
	}
	return goldenVerify(*dir, stdout, stderr)
}

func goldenUpdate(ctx context.Context, dir string, opts golden.UpdateOptions, stdout io.Writer) error {
	const where = "golden update"
	if dir == "" {
		d, err := sourceCasesDir()
		if err != nil {
			return usageErr(where, "%v; pass --dir DIR", err)
		}
		dir = d
	}
	b := emulator.New(npu.Ascend910B())
	ch, err := golden.UpdateWith(ctx, dir, b, opdb.GoldenCases(), stdout, opts)
	if err != nil {
		// golden.Update's errors start with "golden update: " already.
		return harnessErr("", err)
	}
	if !ch.Empty() && !opts.DryRun {
		fmt.Fprintln(stdout, "rebuild npuverify to embed the updated set")
	}
	return nil
}

func goldenVerify(dir string, stdout, stderr io.Writer) error {
	const where = "golden verify"
	var s *golden.Store
	if dir == "" {
		s = golden.Embedded()
	} else {
		var err error
		if s, err = golden.OpenDir(dir); err != nil {
			return inputErr(where, fmt.Errorf("--dir %s: %w", dir, err))
		}
		defer s.Close()
	}
	errs := golden.Verify(s.WithRecorder(emulator.Recorder()))
	for _, err := range errs {
		fmt.Fprintf(stderr, "npuverify: %s: %v\n", where, err)
	}
	if len(errs) > 0 {
		fmt.Fprintf(stdout, "%s: %d problems in %d cases\n", s.Where(), len(errs), len(s.Cases()))
		return failed{exitFail}
	}
	fmt.Fprintf(stdout, "%s: %d cases OK\n", s.Where(), len(s.Cases()))
	return nil
}

// sourceCasesDir finds golden/cases of the source tree: the nearest
// directory at or above the working directory whose go.mod declares this
// module.
func sourceCasesDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && declaresModule(b) {
			cases := filepath.Join(d, "golden", "cases")
			if st, err := os.Stat(cases); err != nil || !st.IsDir() {
				return "", fmt.Errorf("source tree %s has no golden/cases directory", d)
			}
			return cases, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("no source tree found: no go.mod of module " + modulePath + " in the working directory or above")
		}
	}
}

func declaresModule(gomod []byte) bool {
	for _, line := range bytes.Split(gomod, []byte("\n")) {
		f := strings.Fields(string(line))
		if len(f) >= 2 && f[0] == "module" && strings.Trim(f[1], `"`) == modulePath {
			return true
		}
	}
	return false
}
