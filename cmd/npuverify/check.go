package main

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/verify"
)

const checkSynopsis = "check [--golden DIR] [--backend B] [--profile P] [--op OP] [--run REGEX] [--policy P] [--shard I/N] [--jobs N] [--repeat N] [--json FILE] [--junit FILE] [--trace DIR] [--timeout D] [--baseline FILE.json [--max-slowdown P%]] [--min-efficiency E] [--device FILE.json]"

// cmdCheck verifies golden cases against a backend: a table on stdout
// (case, verdict, policy, tightness, cycles), then the failure reports and,
// under --repeat, the outputs that differed between runs; cases that could
// not be judged are reported on stderr. The emulator is held to the stored
// bits and budgets, any other backend to the case's accuracy policy
// (golden.Check). --jobs cases run at once; the table keeps case order.
// Kernel times a backend reports are held to --baseline and
// --min-efficiency (perfFlags, checkperf.go).
func cmdCheck(args []string, stdout, stderr io.Writer) error {
	const where = "check"
	fs := newFlagSet(where, checkSynopsis, stdout)
	dir := fs.String("golden", "", "golden store directory (default: the set embedded in this binary)")
	opName := fs.String("op", "", "check only this op's cases")
	runRE := fs.String("run", "", "check only the cases whose name <op>/<case> matches this regular expression")
	policy := fs.String("policy", "", "judge every case by this policy instead of its own ("+strings.Join(verify.PolicyNames(), ", ")+")")
	shard := fs.String("shard", "", "run shard I of N (I/N, 1 ≤ I ≤ N) of the sorted cases (default: from Bazel's TEST_SHARD_INDEX and TEST_TOTAL_SHARDS when set)")
	jobs := fs.Int("jobs", 0, "run this many cases at once (default: the number of CPUs)")
	repeat := fs.Int("repeat", 1, "run each case N times; outputs that differ bitwise between runs are NONDETERMINISTIC")
	jsonOut := fs.String("json", "", "also write the results as JSON to FILE")
	junitOut := fs.String("junit", "", "also write the results as JUnit XML to FILE")
	traceOut := fs.String("trace", "", "write each case's emulator schedule to DIR/<op>/<case>.json as Chrome trace events (open in ui.perfetto.dev): a track per core and pipe, a span per instruction; DIR is made if missing")
	var dev deviceFlags
	dev.register(fs)
	var perfF perfFlags
	perfF.register(fs)
	pos, err := parse(fs, where, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr(where, "unexpected argument %q", pos[0])
	}
	switch {
	case *jobs < 0:
		return usageErr(where, "--jobs %d: want at least 1 (or 0: the number of CPUs)", *jobs)
	case *jobs == 0:
		*jobs = runtime.NumCPU()
	}
	if *repeat < 1 {
		return usageErr(where, "--repeat %d: want at least 1", *repeat)
	}
	if *traceOut != "" && dev.backend != "emulator" {
		return usageErr(where, "--trace: only the emulator backend has a schedule to trace, not %s", dev.backend)
	}
	opt := golden.CheckOptions{Op: *opName, Run: *runRE, Policy: *policy, Jobs: *jobs, Repeat: *repeat}
	var bazelStatus string
	opt.Shard, opt.Shards, bazelStatus, err = selectShard(*shard, where, stderr)
	if err != nil {
		return err
	}
	prof, b, err := dev.build(where)
	if err != nil {
		return err
	}
	defer closeBackend(b, stderr, where)
	budget, err := perfF.load(fs, where, prof)
	if err != nil {
		return err
	}
	opt.Numerics, opt.Timeout, opt.StepTimeout = prof.Numerics, dev.caseTimeout(b), dev.timeout
	if !recordingProfile(prof) {
		opt.Exact, opt.NoBudgets = golden.ExactNever, true
		fmt.Fprintf(stderr, "npuverify: check: profile %s is not the one the goldens were recorded on (ascend910b): no bit-exact or budget checks\n", prof.Name)
	}
	store, err := openStore(*dir)
	if err != nil {
		return inputErr(where, err)
	}
	defer store.Close() // holds the store's shared lock for the whole run
	if bazelStatus != "" {
		if err := touchStatusFile(bazelStatus); err != nil {
			return inputErr(where, fmt.Errorf("%s: %w", envShardStatus, err))
		}
	}
	if err := checkResultFiles(where, *dir, resultFile{flag: "--json", path: *jsonOut}, resultFile{flag: "--junit", path: *junitOut}); err != nil {
		return err
	}
	var traces *traceDir
	if *traceOut != "" {
		traces = &traceDir{dir: *traceOut}
		// Neither a result file nor an input file may be a case's trace.
		if err := traces.prepare(where, *dir, store, opt, resultFile{flag: "--json", path: *jsonOut}, resultFile{flag: "--junit", path: *junitOut},
			resultFile{flag: "--baseline", path: perfF.baseline}, resultFile{flag: "--device", path: perfF.device}, resultFile{flag: "--profile", path: dev.profile}); err != nil {
			return err
		}
		opt.Observe = traces.observe
	}
	if *shard == "" && opt.Shards > 0 {
		if msg, empty := emptyBazelShard(store, opt); empty {
			fmt.Fprintln(stdout, msg)
			return nil
		}
	}
	intr := catchSignals(b, stderr)
	defer intr.stop()
	results, err := golden.Check(intr.ctx, store, b, opt)
	intr.finish()
	if err != nil && intr.signal() == 0 {
		return harnessErr(where, err)
	}
	if err := budget.judge(results); err != nil {
		return harnessErr(where, err)
	}
	code := exitFor(results)
	// The result files first: a closed standard output must not cost them.
	writeErr := writeCheckResults(*jsonOut, *junitOut, results, checkMeta(b.Name(), prof.Name, store, opt, intr, len(results)), budget, opt.Repeat)
	printTable(stdout, results)
	budget.print(stdout, results)
	var fails, nondet []string
	for i := range results {
		r := &results[i]
		switch {
		case r.Err != nil:
			fmt.Fprintf(stderr, "npuverify: check: %s: %v\n", r.ID, r.Err)
		case r.Verdict() == harness.VerdictFail:
			fails = append(fails, r.Failure())
		}
		for _, d := range r.Nondeterministic {
			nondet = append(nondet, r.ID+": "+d)
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(stdout, "\nFailures:\n\n%s\n", strings.Join(fails, "\n\n"))
	}
	if len(nondet) > 0 {
		fmt.Fprintf(stdout, "\nNondeterministic (outputs that differ between the %d runs of a case):\n\n%s\n", opt.Repeat, strings.Join(nondet, "\n"))
	}
	if s := traces.summary(); s != "" {
		fmt.Fprintf(stdout, "\n%s\n", s)
	}
	fmt.Fprintf(stdout, "\n%s%s (backend %s, profile %s, store %s)\n", summaryLine(results), repeatSummary(results, opt.Repeat), b.Name(), prof.Name, store.Where())
	if writeErr != nil {
		if intr.signal() != 0 {
			fmt.Fprintf(stderr, "npuverify: %s: %v\n", where, writeErr)
		} else {
			return resultWriteErr(where, code, writeErr)
		}
	}
	if err := intr.err(where, fmt.Sprintf("%d cases done, running kernels killed", len(results))); err != nil {
		return err
	}
	if err := traces.failure(); err != nil {
		return resultWriteErr(where, code, err)
	}
	if code != 0 {
		return failed{code}
	}
	return nil
}

// recordingProfile reports whether prof is the profile the golden store is
// recorded on (ascend910b, unmodified): only then do the stored bits and
// budgets apply to the emulator.
func recordingProfile(prof npu.Profile) bool { return reflect.DeepEqual(prof, npu.Ascend910B()) }

// openStore opens the store in dir, or the embedded one when dir is "".
func openStore(dir string) (*golden.Store, error) {
	if dir == "" {
		return golden.Embedded().WithRecorder(emulator.Recorder()), nil
	}
	s, err := golden.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--golden %s: %w", dir, err)
	}
	return s.WithRecorder(emulator.Recorder()), nil
}

// exitFor maps the outcomes of a run over cases to the CLI's exit code
// (docs/cli.md): 3 if any case hit a backend failure, else 2 if any could
// not be judged because of its input, else 1 if any failed or was
// nondeterministic, else 0.
func exitFor(outcomes []harness.Outcome) int {
	code := exitPass
	for i := range outcomes {
		switch outcomes[i].Verdict() {
		case harness.VerdictBackendError:
			code = max(code, exitBackend)
		case harness.VerdictInputError:
			code = max(code, exitUsage)
		case harness.VerdictFail, harness.VerdictNondeterministic, harness.VerdictSlower, harness.VerdictInefficient:
			code = max(code, exitFail)
		}
	}
	return code
}

// verdict is the table's column: "pass", or the verdict in capitals.
func verdict(r *harness.Outcome) string {
	if v := r.Verdict(); v != harness.VerdictPass {
		return strings.ToUpper(v)
	}
	return harness.VerdictPass
}

func printTable(w io.Writer, results []harness.Outcome) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tVERDICT\tPOLICY\tTIGHTNESS\tCYCLES")
	for i := range results {
		r := &results[i]
		tight, cycles := "—", "—"
		if r.Result != nil {
			tight = fmtNum(r.Tightness())
			if m := r.Result.Measurement; m != nil && m.Model != nil {
				cycles = strconv.FormatInt(m.Model.Cycles, 10)
			}
		}
		pol := strings.Join(r.Policies, "+")
		if pol == "" {
			pol = "—"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, verdict(r), pol, tight, cycles)
	}
	tw.Flush()
}

func summaryLine(results []harness.Outcome) string {
	n := map[string]int{}
	for i := range results {
		n[results[i].Verdict()]++
	}
	s := fmt.Sprintf("%d cases: %d pass, %d fail, %d input error, %d backend error", len(results),
		n[harness.VerdictPass], n[harness.VerdictFail], n[harness.VerdictInputError], n[harness.VerdictBackendError])
	for _, v := range []string{harness.VerdictSlower, harness.VerdictInefficient} {
		if n[v] > 0 {
			s += fmt.Sprintf(", %d %s", n[v], v)
		}
	}
	return s
}

// repeatSummary is the summary line's tail under --repeat (repeat > 1):
// how many cases had outputs that differed between runs, whatever their
// verdict ("" without --repeat, so the line is as it always was).
func repeatSummary(results []harness.Outcome, repeat int) string {
	if repeat <= 1 {
		return ""
	}
	n := 0
	for i := range results {
		if len(results[i].Nondeterministic) > 0 {
			n++
		}
	}
	return fmt.Sprintf(", %d nondeterministic in %d runs each", n, repeat)
}

func policyNames(vs []verify.Verdict) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Policy
	}
	return out
}

// fmtNum renders a metric with 4 significant digits.
func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x == 0:
		return "0"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// checkMeta is the meta block of check's result files: backend, profile,
// store, shard and run (for report --merge), repeat, and the signal that
// interrupted the run after n cases.
func checkMeta(backendName, profName string, store *golden.Store, opt golden.CheckOptions, intr *interrupt, n int) map[string]string {
	meta := map[string]string{"backend": backendName, "profile": profName, "store": store.Where()}
	addRunMeta(meta, store, opt) // shard and run, for report --merge
	if opt.Repeat > 1 {
		meta["repeat"] = strconv.Itoa(opt.Repeat)
	}
	if sig := intr.signal(); sig != 0 {
		meta["interrupted"] = fmt.Sprintf("%s after %d cases", signalName(sig), n)
	}
	return meta
}

// writeCheckResults writes check's --json and --junit files (either may
// be "") together: both replaced or neither.
func writeCheckResults(jsonOut, junitOut string, results []harness.Outcome, meta map[string]string, budget *perfBudget, repeat int) error {
	renderJSON := func(w io.Writer) error {
		rep := report.FromCases("npuverify check", budget.reportCases(results))
		rep.Meta = meta
		if repeat > 1 {
			rep.Add(determinism{Repeat: repeat, Cases: results})
		}
		return rep.JSON(w)
	}
	return writeResultFiles(
		resultFile{flag: "--json", path: jsonOut, render: renderJSON},
		resultFile{flag: "--junit", path: junitOut, render: func(w io.Writer) error { return writeJUnit(w, results, meta) }})
}
