package mutation

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteTable writes the mutation table, the score and the false alarms as
// plain text:
//
//	fault | caught by the bound checks (case: check) | caught with exact | models
//
// one row per fault (SURVIVED when no case caught it), then the score of
// each column and one line per false-alarm run.
func (r *Result) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "mutation score on profile %s: %d golden cases + %d generated UT cases", r.Profile, r.Golden, r.Generated)
	if !r.AllCases {
		b.WriteString(" (each fault's run stops at its first bound catch)")
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tBOUND CHECKS (ANY BACKEND)\tWITH EXACT (EMULATOR)\tMODELS")
	for _, f := range r.Faults {
		bound, exact := f.Bound.String(), f.Exact.String()
		if r.AllCases {
			if f.Bound != nil {
				bound += fmt.Sprintf(" [%d/%d cases]", f.BoundCases, f.Ran)
			}
			if f.Exact != nil {
				exact += fmt.Sprintf(" [%d/%d cases]", f.ExactCases, f.Ran)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Fault, bound, exact, f.Models)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	nb, ne, n := r.Score()
	fmt.Fprintf(&b, "\nscore: bound checks %d/%d (%s), with exact %d/%d (%s)\n", nb, n, pct(nb, n), ne, n, pct(ne, n))
	for _, f := range r.Faults {
		for _, e := range f.Errors {
			fmt.Fprintf(&b, "error: %s: %s\n", f.Fault, e)
		}
	}
	fmt.Fprintf(&b, "\nfalse alarms (bound checks; exact mismatches are false alarms for the correct emulator only):\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, a := range r.Alarms {
		desc := "correct emulator"
		for _, v := range r.Variants {
			if v.Op+"/"+v.Name == a.Backend {
				desc = fmt.Sprintf("variant: %s %s", v.Op, describe(v.Options))
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%d false alarms in %d cases\t(exact mismatches: %d)\n", a.Backend, desc, a.FalseAlarms(), a.Ran, a.ExactMismatches)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range r.Alarms {
		for _, c := range a.Alarms {
			fmt.Fprintf(&b, "  false alarm: %s: %s: %s\n", a.Backend, c.String(), c.Detail)
		}
		for _, e := range a.Errors {
			fmt.Fprintf(&b, "  error: %s: %s\n", a.Backend, e)
		}
	}
	fmt.Fprintf(&b, "total false alarms: %d\nelapsed: %s\n", r.FalseAlarms(), r.Elapsed.Round(time.Millisecond))
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(a, n int) string {
	if n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(a)/float64(n))
}

// describe renders the non-zero fields of an options struct, e.g.
// "BlockDim=7 TileElems=49".
func describe(v any) string {
	s := strings.Trim(fmt.Sprintf("%+v", v), "{}")
	var out []string
	for _, f := range strings.Fields(s) {
		if !strings.HasSuffix(f, ":0") && !strings.HasSuffix(f, ":false") && !strings.HasSuffix(f, ":") {
			out = append(out, strings.Replace(f, ":", "=", 1))
		}
	}
	if len(out) == 0 {
		return "default"
	}
	return strings.Join(out, " ")
}
