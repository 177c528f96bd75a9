package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpOnce holds every command's -h, -help and --help to one usage
// text on stdout, nothing on stderr and exit 0 (the usage printed on
// request is not an error); a bad flag gets the one-line error on stderr
// (exit 2) and no usage at all.
func TestHelpOnce(t *testing.T) {
	cmds := [][]string{{"ops"}, {"run"}, {"check"}, {"report"}, {"mutate"}, {"explore"}, {"golden", "update"}, {"golden", "verify"}, {"golden"}}
	for _, cmd := range cmds {
		for _, h := range []string{"-h", "-help", "--help"} {
			args := append(append([]string{}, cmd...), h)
			code, o, e := cli(t, args...)
			name := strings.Join(args, " ")
			if code != exitPass {
				t.Errorf("npuverify %s: exit %d, want %d\nstderr:\n%s", name, code, exitPass, e)
			}
			if n := strings.Count(o, "usage: npuverify "+cmd[0]); n != 1 {
				t.Errorf("npuverify %s: the usage appears %d times on stdout, want 1:\n%s", name, n, o)
			}
			if e != "" {
				t.Errorf("npuverify %s: stderr %q, want nothing", name, e)
			}
		}
	}
	for _, cmd := range cmds[:len(cmds)-1] {
		args := append(append([]string{}, cmd...), "--no-such-flag")
		code, o, e := cli(t, args...)
		name := strings.Join(args, " ")
		if code != exitUsage || o != "" || strings.Count(e, "\n") != 1 || !strings.Contains(e, "flag provided but not defined") {
			t.Errorf("npuverify %s: exit %d, stdout %q, stderr %q; want exit %d, no stdout and a one-line error", name, code, o, e, exitUsage)
		}
	}
}

// TestCLIDocMatchesUsage holds docs/cli.md to the real usage texts: every
// command's -h output must appear in it verbatim, so a flag added, removed
// or reworded without updating the reference fails here.
func TestCLIDocMatchesUsage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatalf("reading the CLI reference: %v", err)
	}
	doc := string(b)
	for _, args := range [][]string{{"help"}, {"ops", "-h"}, {"run", "-h"}, {"check", "-h"}, {"report", "-h"},
		{"golden", "-h"}, {"golden", "update", "-h"}, {"golden", "verify", "-h"}, {"mutate", "-h"}, {"explore", "-h"}} {
		_, o, _ := cli(t, args...)
		if !strings.Contains(doc, "```text\n"+o+"```") {
			t.Errorf("docs/cli.md lacks the usage of npuverify %s verbatim; paste this output into its block:\n%s", strings.Join(args, " "), o)
		}
	}
}
