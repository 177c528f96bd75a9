package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestHelpForms is the new user's paragraph of issue 33: "npuverify help
// check" printed the top-level usage and "npuverify check help" was an
// unexpected argument. Both now print exactly what "check -h" prints, for
// every command (and golden's subcommands), on stdout with exit 0 and
// nothing on stderr.
func TestHelpForms(t *testing.T) {
	cmds := [][]string{{"ops"}, {"run"}, {"check"}, {"report"}, {"mutate"}, {"explore"}, {"golden"}, {"golden", "update"}, {"golden", "verify"}}
	for _, cmd := range cmds {
		_, want, _ := cli(t, append(append([]string{}, cmd...), "-h")...)
		for _, args := range [][]string{append([]string{"help"}, cmd...), append(append([]string{}, cmd...), "help")} {
			code, o, e := cli(t, args...)
			if code != exitPass || o != want || e != "" {
				t.Errorf("npuverify %s: exit %d, stderr %q, stdout:\n%s\nwant exit 0, no stderr and the usage of npuverify %s -h:\n%s",
					strings.Join(args, " "), code, e, o, strings.Join(cmd, " "), want)
			}
		}
	}
	wantCLI(t, 2, []string{`npuverify: help: unknown command "nope"`}, "help", "nope")
}

// TestVersion: "npuverify version" and "npuverify --version" print one
// line naming the build (module version, and the Go version it was built
// with), exit 0.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version", "-version"} {
		code, o, e := cli(t, arg)
		if code != exitPass || e != "" || !strings.HasPrefix(o, "npuverify ") || !strings.HasSuffix(o, " "+runtime.Version()+"\n") || strings.Count(o, "\n") != 1 {
			t.Errorf("npuverify %s: exit %d, stderr %q, stdout %q; want exit 0, no stderr and one line \"npuverify <version> ... %s\"", arg, code, e, o, runtime.Version())
		}
	}
	wantCLI(t, 2, []string{`npuverify: version: unexpected argument "now"`}, "version", "now")
}
