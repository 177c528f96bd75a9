package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoDriftingFigures is issue 33's newcomer paragraph: the docs showed
// "140 cases" and "199 cases" where the store held 233, and timings of one
// machine ("took 22 s") that no loaded machine reproduces. Case counts of
// the store and first-build timings are not written in README.md or
// docs/*.md: examples say N, and a measured figure belongs to the lead's
// marked line in README.md, said to come from an idle machine.
func TestNoDriftingFigures(t *testing.T) {
	drift := []*regexp.Regexp{
		regexp.MustCompile(`\b\d+ cases: \d+ pass`),                  // a check summary with the store's count
		regexp.MustCompile(`\b\d+ unchanged\b`),                      // a golden update summary with the store's count
		regexp.MustCompile(`(?i)first build[^.\n]*\d+(\.\d+)? ?s\b`), // a first-build timing
		regexp.MustCompile(`(?i)\btook \d+(\.\d+)? ?s\b`),            // a measured duration
		regexp.MustCompile(`\(about \d+(\.\d+)? ?(s|ms|min)\)`),      // a flag's cost in its help text (docs/cli.md pastes the usage)
	}
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(paths, filepath.Join(root, "README.md")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, re := range drift {
				if m := re.FindString(line); m != "" {
					t.Errorf("%s:%d: %q is a figure that drifts (pattern %s); write N, or leave measured figures to README's marked line:\n%s", p, i+1, m, re, line)
				}
			}
		}
	}
}
