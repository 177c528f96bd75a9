package main

import (
	"fmt"
	"io"

	"github.com/npuverify/npuverify/harness"
)

// determinism is the report section check --repeat adds to its --json
// results (key "determinism"): how many runs each case had and, per case
// whose outputs differed between runs, what differed. It is a section of
// its own because nondeterminism is a finding apart from accuracy: a case
// may pass every bound on every run and still disagree with itself.
type determinism struct {
	Repeat int
	Cases  []harness.Outcome
}

type determinismCase struct {
	Case    string   `json:"case"`
	Verdict string   `json:"verdict"`
	Outputs []string `json:"outputs"`
}

// Key implements report.Section.
func (determinism) Key() string { return "determinism" }

func (d determinism) findings() []determinismCase {
	out := []determinismCase{}
	for i := range d.Cases {
		c := &d.Cases[i]
		if len(c.Nondeterministic) > 0 {
			out = append(out, determinismCase{Case: c.ID, Verdict: c.Verdict(), Outputs: c.Nondeterministic})
		}
	}
	return out
}

// JSON implements report.Section.
func (d determinism) JSON() any {
	return struct {
		Repeat           int               `json:"repeat"`
		Nondeterministic []determinismCase `json:"nondeterministic"`
	}{d.Repeat, d.findings()}
}

// Markdown implements report.Section.
func (d determinism) Markdown(w io.Writer) error {
	f := d.findings()
	if _, err := fmt.Fprintf(w, "## Determinism\n\nEach case ran %d times; %d had outputs that differed bitwise between runs.\n\n", d.Repeat, len(f)); err != nil {
		return err
	}
	for _, c := range f {
		for _, o := range c.Outputs {
			if _, err := fmt.Fprintf(w, "- %s (%s): %s\n", c.Case, c.Verdict, o); err != nil {
				return err
			}
		}
	}
	if len(f) > 0 {
		_, err := fmt.Fprintln(w)
		return err
	}
	return nil
}
