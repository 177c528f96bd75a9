package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/experiments"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/safefile"
)

const reportSynopsis = "report [--out DIR] [--format md,json,html] [--precision MxKxN|off] [--attention on|off] [--decoding on|off] [--layout on|off] [--merge [--allow-partial] FILE.json...] [--backend B] [--op OP]... [--profile P] [--timeout D]"

// cmdReport writes DIR/report.md, DIR/report.json and DIR/report.html (by
// default) on the embedded default cases. Without --merge it runs them
// through the backend (as check does: the emulator is also held to the
// stored bits and budgets); with --merge it renders the `check --json`
// results named as arguments instead (e.g. the shards of one check run),
// which gives the report the unsharded run would. The experiments (package
// experiments) run here either way: the GEMM precision-mode table on the
// backend, the attention-quality table (float64) and the
// incremental-decoding comparison and the cost of layout (the emulator's
// cost model on the device profile). None of them comes from case results, so a merged report has
// them as the unsharded one does; package report only renders what they
// return. Progress goes to stderr when it is a terminal; the last line on
// stdout names the files written. The exit code is check's: the report is
// written either way.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	const where = "report"
	fs := newFlagSet(where, reportSynopsis, stdout)
	out := fs.String("out", "out/report", "directory to write report.<format> to")
	formats := fs.String("format", "md,json,html", "comma-separated formats: "+strings.Join(report.Formats, ", "))
	precision := fs.String("precision", "512x512x512", "size of the GEMM precision-mode table, or off")
	attention := fs.String("attention", "on", "attention error and cache bytes saved against keep_ratio under KV compression: on or off")
	decoding := fs.String("decoding", "on", "modeled cycles of incremental decoding against full recompute, 512 to 8K context: on or off")
	layout := fs.String("layout", "on", "modeled cycles and GM bytes of a GEMM fed ND against FRACTAL_NZ and a bias add over NCHW against NC1HWC0: on or off")
	merge := fs.Bool("merge", false, "render the result files of check --json (e.g. its shards) given as arguments instead of running the cases")
	allowPartial := fs.Bool("allow-partial", false, "with --merge, render a run some of whose shards or cases are missing (marked partial) instead of refusing it")
	var opNames multiFlag
	fs.Var(&opNames, "op", "report only this op's cases, for a kernel of some ops (repeatable, or comma-separated); the studies are then not run unless asked for")
	var dev deviceFlags
	dev.register(fs)
	pos, err := parse(fs, where, args)
	if err != nil {
		return err
	}
	switch {
	case *merge && len(pos) == 0:
		return usageErr(where, "--merge: no result files given (want FILE.json...)")
	case !*merge && len(pos) > 0:
		return usageErr(where, "unexpected argument %q (result files need --merge)", pos[0])
	case !*merge && *allowPartial:
		return usageErr(where, "--allow-partial: only with --merge")
	}
	only, err := reportOps(opNames)
	if err != nil {
		return usageErr(where, "--op: %v", err)
	}
	fmts, err := report.ParseFormats(*formats)
	if err != nil {
		return usageErr(where, "--format: %v", err)
	}
	pcfg := experiments.DefaultPrecisionConfig()
	if *precision != "off" {
		if pcfg.M, pcfg.K, pcfg.N, err = parseMKN(*precision); err != nil {
			return usageErr(where, "--precision %q: %v", *precision, err)
		}
	}
	pcfg.Timeout = dev.timeout
	for _, f := range []struct{ name, v string }{{"attention", *attention}, {"decoding", *decoding}, {"layout", *layout}} {
		if f.v != "on" && f.v != "off" {
			return usageErr(where, "--%s %q: want on or off", f.name, f.v)
		}
	}
	prof, b, err := dev.build(where)
	if err != nil {
		return err
	}
	defer closeBackend(b, stderr, where)
	// Signals end the run as check's do (signal.go): kernels killed, case
	// directories removed, and no report file replaced.
	intr := catchSignals(b, stderr)
	defer intr.stop()
	const killed = "running kernels killed, no report file replaced"
	var res *report.Results
	var traced *timelineTracer // the timelines drawn during the run
	if *merge {
		var merged *report.Merged
		if res, merged, err = readShards(pos, *allowPartial); err != nil {
			return inputErr(where, fmt.Errorf("--merge: %w", err))
		}
		fmt.Fprintf(stdout, "merged %s\n", merged)
		res.Cases = slices.DeleteFunc(res.Cases, func(c report.Case) bool { return !only.has(c.ID) })
		if len(res.Cases) == 0 && res.Meta[report.MetaCommand] != report.CommandExplore {
			return inputErr(where, fmt.Errorf("--merge: none of the %d merged cases is of --op %s: %w", merged.Cases, strings.Join(only, ", "), report.ErrEmpty))
		}
	} else {
		opt := golden.CheckOptions{Numerics: prof.Numerics, Timeout: dev.caseTimeout(b), StepTimeout: dev.timeout, Run: only.run()}
		if !recordingProfile(prof) {
			opt.Exact, opt.NoBudgets = golden.ExactNever, true
		}
		store := golden.Embedded().WithRecorder(emulator.Recorder())
		if b.Name() == golden.ReferenceBackend {
			traced = expectTimelines(store, opt)
			opt.Observe = traced.observe
		}
		if p := newProgress(stderr, "npuverify report", only.count(store.Cases())); p != nil {
			opt.Progress = p
			defer p.Done()
		}
		outcomes, err := golden.Check(intr.ctx, store, b, opt)
		if err := intr.err(where, killed); err != nil {
			return err
		}
		if err != nil {
			return harnessErr(where, err)
		}
		res = &report.Results{Meta: map[string]string{"backend": b.Name(), "profile": prof.Name, "store": store.Where()}}
		for i := range outcomes {
			res.Cases = append(res.Cases, report.FromOutcome(&outcomes[i]))
		}
	}
	rep := report.FromCases("npuverify report", res.Cases)
	rep.Meta = res.Meta
	if only != nil {
		rep.Meta = maps.Clone(rep.Meta)
		if rep.Meta == nil {
			rep.Meta = map[string]string{}
		}
		rep.Meta["ops"] = strings.Join(only, ", ")
	}
	// The studies are experiments on the emulator and its cost model: a
	// report about another backend, or about some ops, leaves them out
	// (and says so) unless a flag asks for one.
	if why := skipStudies(b.Name(), only); why != "" {
		asked := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { asked[f.Name] = true })
		var skipped []string
		for _, s := range []struct {
			flag string
			v    *string
			off  string
		}{{"precision", precision, "off"}, {"attention", attention, "off"}, {"decoding", decoding, "off"}, {"layout", layout, "off"}} {
			if !asked[s.flag] && *s.v != s.off {
				*s.v = s.off
				skipped = append(skipped, s.flag)
			}
		}
		if len(skipped) > 0 {
			rep.Meta = maps.Clone(rep.Meta)
			if rep.Meta == nil {
				rep.Meta = map[string]string{}
			}
			rep.Meta["studies"] = fmt.Sprintf("%s not run (%s): experiments on the emulator, not about the kernel; set --%s to run one",
				strings.Join(skipped, ", "), why, strings.Join(skipped, ", --"))
		}
	}
	if *precision != "off" {
		tab, err := experiments.PrecisionModes(intr.ctx, b, prof.Numerics, pcfg)
		if err := intr.err(where, killed); err != nil {
			return err
		}
		if err != nil {
			return harnessErr(where, err)
		}
		if err := rep.InsertAfter("summary", tab); err != nil {
			return err
		}
	}
	if err := addModelSections(rep, prof, *attention == "on", *decoding == "on", *layout == "on"); err != nil {
		return harnessErr(where, err)
	}
	base := golden.CheckOptions{Numerics: prof.Numerics, Timeout: dev.caseTimeout(b), StepTimeout: dev.timeout}
	if !recordingProfile(prof) {
		base.Exact, base.NoBudgets = golden.ExactNever, true
	}
	if err := addTimelines(intr.ctx, rep, b, base, res.Cases, res.Meta["store"], traced); err != nil {
		if err := intr.err(where, killed); err != nil {
			return err
		}
		return harnessErr(where, err)
	}
	intr.finish()
	if err := intr.err(where, killed); err != nil {
		return err
	}
	paths, err := rep.WriteFiles(*out, fmts)
	if err != nil {
		return writeFilesErr(where, *out, err)
	}
	fmt.Fprintf(stdout, "%s\n", casesLine(res.Cases))
	fmt.Fprintf(stdout, "wrote %s\n", strings.Join(paths, ", "))
	code := exitPass
	for i := range res.Cases {
		c := &res.Cases[i]
		switch c.Verdict {
		case harness.VerdictPass:
			continue
		case harness.VerdictBackendError:
			code = max(code, exitBackend)
		case harness.VerdictInputError:
			code = max(code, exitUsage)
		default:
			code = max(code, exitFail)
		}
		fmt.Fprintf(stderr, "npuverify: report: %s: %s\n", c.ID, firstLine(c.Why()))
	}
	if code != exitPass {
		return failed{code}
	}
	return nil
}

// addModelSections inserts the attention-quality table, the
// incremental-decoding comparison and the cost of layout after the
// performance checklist.
func addModelSections(rep *report.Report, prof npu.Profile, attention, decoding, layout bool) error {
	after := "performance"
	if attention {
		s, err := experiments.AttentionQuality(experiments.DefaultAttentionConfig())
		if err != nil {
			return err
		}
		if err := rep.InsertAfter(after, s); err != nil {
			return err
		}
		after = s.Key()
	}
	if decoding {
		tab, err := experiments.IncrementalVsRecompute(context.Background(), prof, experiments.DefaultDecodingConfig())
		if err != nil {
			return err
		}
		if err := rep.InsertAfter(after, tab); err != nil {
			return err
		}
		after = tab.Key()
	}
	if layout {
		tab, err := experiments.LayoutCost(context.Background(), prof, experiments.DefaultLayoutConfig())
		if err != nil {
			return err
		}
		if err := rep.InsertAfter(after, tab); err != nil {
			return err
		}
	}
	return nil
}

// opScope are the ops report --op names (nil: every op).
type opScope []string

// reportOps parses report's --op values: op names, repeated or
// comma-separated; an unknown one is an error listing the valid names.
func reportOps(vals []string) (opScope, error) {
	var out opScope
	for _, v := range vals {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			if _, err := ops.Lookup(name); err != nil {
				return nil, fmt.Errorf("%w (valid: %s)", err, strings.Join(ops.Names(), ", "))
			}
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	if len(vals) > 0 && len(out) == 0 {
		return nil, fmt.Errorf("no op named (valid: %s)", strings.Join(ops.Names(), ", "))
	}
	return out, nil
}

// has reports whether the case with ID "<op>/<name>" is in scope.
func (o opScope) has(id string) bool {
	op, _, _ := strings.Cut(id, "/")
	return o == nil || slices.Contains(o, op)
}

// run is the golden.CheckOptions.Run expression that selects the ops'
// cases ("" for every op).
func (o opScope) run() string {
	if o == nil {
		return ""
	}
	q := make([]string, len(o))
	for i, name := range o {
		q[i] = regexp.QuoteMeta(name)
	}
	return "^(" + strings.Join(q, "|") + ")/"
}

// count is how many of cases are in scope.
func (o opScope) count(cases []*golden.StoredCase) int {
	n := 0
	for _, c := range cases {
		if o.has(c.ID) {
			n++
		}
	}
	return n
}

// skipStudies says why the studies do not belong in a report on backend
// about the ops only ("" when they do: the emulator, every op).
func skipStudies(backend string, only opScope) string {
	switch {
	case backend != emulator.New(npu.Ascend910B()).Name():
		return "backend " + backend
	case only != nil:
		return "a report on " + strings.Join(only, ", ")
	}
	return ""
}

// writeFilesErr is the CLI error for report.WriteFiles' err: a format
// that failed to render is a fault of the report, not of --out (nothing
// was written; exit 3, an internal error), anything else a failure to
// write --out (exit 2), and each message says which.
func writeFilesErr(where, out string, err error) error {
	if re := (*report.RenderError)(nil); errors.As(err, &re) {
		return backendErr(where, fmt.Errorf("internal error: %w (nothing written to --out %s)", err, out))
	}
	return inputErr(where, fmt.Errorf("writing --out %s: %w", out, err))
}

// maxMergeBytes caps what report --merge reads over all its files
// together (each file is also held to report.MaxResultsBytes): enough for
// many shards of a store far larger than the default one, while a glob
// that matches a directory of huge files costs at most this much.
const maxMergeBytes = 4 * report.MaxResultsBytes

// readShards reads the result files of `check --json` runs through the
// bounded reader (regular files only, each and all together capped) and
// merges them: the whole of one run unless allowPartial (report.Merge).
func readShards(files []string, allowPartial bool) (*report.Results, *report.Merged, error) {
	rs := make([]*report.Results, len(files))
	left := int64(maxMergeBytes)
	for i, f := range files {
		limit := min(report.MaxResultsBytes, left)
		r, err := report.ReadResults(f, limit)
		if errors.Is(err, safefile.ErrTooLarge) && limit < report.MaxResultsBytes {
			err = fmt.Errorf("%w (the files before it used all but %d of the %d bytes a merge reads)", err, limit, int64(maxMergeBytes))
		}
		if err != nil {
			return nil, nil, err
		}
		if fi, err := os.Stat(f); err == nil {
			left = max(0, left-fi.Size())
		}
		rs[i] = r
	}
	return report.Merge(rs, files, allowPartial)
}

// casesLine is summaryLine for report cases.
func casesLine(cs []report.Case) string {
	n := map[string]int{}
	for i := range cs {
		n[cs[i].Verdict]++
	}
	s := fmt.Sprintf("%d cases: %d pass, %d fail, %d input error, %d backend error", len(cs),
		n[harness.VerdictPass], n[harness.VerdictFail], n[harness.VerdictInputError], n[harness.VerdictBackendError])
	for _, v := range []string{harness.VerdictSlower, harness.VerdictInefficient} {
		if n[v] > 0 {
			s += fmt.Sprintf(", %d %s", n[v], v)
		}
	}
	return s
}
