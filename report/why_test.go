package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestFailingLineNamesTheCheck: the list of failing cases shows, for a
// case that failed verification, the failing check and its reason (the
// output, the policy, how many elements), in markdown and HTML alike,
// not the failure report's summary line, which reads "1 of 1 verdicts
// failed" for nearly every case.
func TestFailingLineNamesTheCheck(t *testing.T) {
	r := New("npuverify report", cases(t))
	var md, html bytes.Buffer
	if err := r.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := r.HTML(&html); err != nil {
		t.Fatal(err)
	}
	const id = "vector_add/fp32_zero"
	var line string
	for _, l := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(l, "- ["+id+"]") {
			line = l
		}
	}
	for _, want := range []string{`output "z"`, "policy ", "out of bound"} {
		if !strings.Contains(line, want) {
			t.Errorf("vector_add dtype=fp32 seed=7 (%s): failing-case line %q: want it to contain %q", id, line, want)
		}
	}
	if strings.Contains(line, "verdicts failed") {
		t.Errorf("vector_add dtype=fp32 seed=7 (%s): failing-case line %q: got the summary line, want the failing check", id, line)
	}
	if h := html.String(); !strings.Contains(h, "out of bound") || strings.Contains(h, "verdicts failed …") {
		t.Errorf("vector_add dtype=fp32 seed=7 (%s): HTML failing list: want the failing check (\"out of bound\"), not the summary line", id)
	}
}
