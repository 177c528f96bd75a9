package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/report"
)

const reportSynopsis = "report [--out DIR] [--format md,json,html] [--precision MxKxN|off] [--backend B] [--profile P] [--timeout D]"

// cmdReport runs the embedded default cases through the backend (as check
// does: the emulator is also held to the stored bits and budgets) and
// writes DIR/report.md, DIR/report.json and DIR/report.html (by default).
// Progress goes to stderr; the last line on stdout names the files
// written. The exit code is check's: the report is written either way.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	const where = "report"
	fs := newFlagSet(where, reportSynopsis, stdout)
	out := fs.String("out", "out/report", "directory to write report.<format> to")
	formats := fs.String("format", "md,json,html", "comma-separated formats: "+strings.Join(report.Formats, ", "))
	precision := fs.String("precision", "512x512x512", "size of the GEMM precision-mode table, or off")
	var dev deviceFlags
	dev.register(fs)
	pos, err := parse(fs, where, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr(where, "unexpected argument %q", pos[0])
	}
	fmts, err := report.ParseFormats(*formats)
	if err != nil {
		return usageErr(where, "--format: %v", err)
	}
	pcfg := report.DefaultPrecisionConfig()
	if *precision != "off" {
		if _, err := fmt.Sscanf(*precision, "%dx%dx%d", &pcfg.M, &pcfg.K, &pcfg.N); err != nil || pcfg.M <= 0 || pcfg.K <= 0 || pcfg.N <= 0 {
			return usageErr(where, "--precision %q: want MxKxN with positive sizes, or off", *precision)
		}
	}
	prof, b, err := dev.build(where)
	if err != nil {
		return err
	}
	opt := golden.CheckOptions{Numerics: prof.Numerics, Timeout: dev.caseTimeout(b), Progress: stderr}
	if !recordingProfile(prof) {
		opt.Exact, opt.NoBudgets = golden.ExactNever, true
	}
	store := golden.Embedded()
	fmt.Fprintf(stderr, "npuverify report: %d cases on %s (profile %s)\n", len(store.Cases()), b.Name(), prof.Name)
	results, err := golden.Check(context.Background(), store, b, opt)
	if err != nil {
		return harnessErr(where, err)
	}
	rep := report.New("npuverify report", results)
	rep.Meta = map[string]string{"backend": b.Name(), "profile": prof.Name, "cases": store.Where()}
	if *precision != "off" {
		fmt.Fprintf(stderr, "npuverify report: GEMM precision-mode table %dx%dx%d\n", pcfg.M, pcfg.K, pcfg.N)
		tab, err := report.PrecisionModes(context.Background(), b, prof.Numerics, pcfg)
		if err != nil {
			return harnessErr(where, err)
		}
		rep.Add(tab)
	}
	paths, err := rep.WriteFiles(*out, fmts)
	if err != nil {
		return inputErr(where, fmt.Errorf("--out %s: %w", *out, err))
	}
	fmt.Fprintf(stdout, "%s\n", summaryLine(results))
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join(paths, ", "))
	if code := exitFor(results); code != 0 {
		for i := range results {
			if r := &results[i]; !r.Pass() {
				fmt.Fprintf(stderr, "npuverify: report: %s\n", r.Failure())
			}
		}
		return failed{code}
	}
	return nil
}
