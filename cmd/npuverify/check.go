package main

import (
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/verify"
)

const checkSynopsis = "check [--golden DIR] [--backend B] [--profile P] [--op OP] [--policy P] [--shard I/N] [--json FILE] [--junit FILE] [--timeout D]"

// cmdCheck verifies golden cases against a backend: a table on stdout
// (case, verdict, policy, tightness, cycles), then the failure reports;
// cases that could not be judged are reported on stderr. The emulator is
// held to the stored bits and budgets, any other backend to the case's
// accuracy policy (golden.Check).
func cmdCheck(args []string, stdout, stderr io.Writer) error {
	const where = "check"
	fs := newFlagSet(where, checkSynopsis, stdout)
	dir := fs.String("golden", "", "golden store directory (default: the set embedded in this binary)")
	opName := fs.String("op", "", "check only this op's cases")
	policy := fs.String("policy", "", "judge every case by this policy instead of its own ("+strings.Join(verify.PolicyNames(), ", ")+")")
	shard := fs.String("shard", "", "run shard I of N (I/N, 1 ≤ I ≤ N) of the sorted cases")
	jsonOut := fs.String("json", "", "also write the results as JSON to FILE")
	junitOut := fs.String("junit", "", "also write the results as JUnit XML to FILE")
	var dev deviceFlags
	dev.register(fs)
	pos, err := parse(fs, where, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr(where, "unexpected argument %q", pos[0])
	}
	opt := golden.CheckOptions{Op: *opName, Policy: *policy}
	if *shard != "" {
		if opt.Shard, opt.Shards, err = parseShard(*shard); err != nil {
			return usageErr(where, "%v", err)
		}
	}
	prof, b, err := dev.build(where)
	if err != nil {
		return err
	}
	opt.Numerics, opt.Timeout = prof.Numerics, dev.caseTimeout(b)
	if !recordingProfile(prof) {
		opt.Exact, opt.NoBudgets = golden.ExactNever, true
		fmt.Fprintf(stderr, "npuverify: check: profile %s is not the one the goldens were recorded on (ascend910b): no bit-exact or budget checks\n", prof.Name)
	}
	store, err := openStore(*dir)
	if err != nil {
		return inputErr(where, err)
	}
	intr := catchSignals(b, stderr)
	defer intr.stop()
	results, err := golden.Check(intr.ctx, store, b, opt)
	if err != nil && intr.signal() == 0 {
		if harness.IsInput(err) {
			return inputErr(where, err)
		}
		return backendErr(where, err)
	}
	printTable(stdout, results)
	var fails []string
	for i := range results {
		r := &results[i]
		switch {
		case r.Err != nil:
			fmt.Fprintf(stderr, "npuverify: check: %s: %v\n", r.ID, r.Err)
		case !r.Pass():
			fails = append(fails, r.Failure())
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(stdout, "\nFailures:\n\n%s\n", strings.Join(fails, "\n\n"))
	}
	code := golden.Exit(results)
	fmt.Fprintf(stdout, "\n%s (backend %s, profile %s, store %s)\n", summaryLine(results), b.Name(), prof.Name, store.Where())

	meta := map[string]string{"backend": b.Name(), "profile": prof.Name, "store": store.Where()}
	if sig := intr.signal(); sig != 0 {
		meta["interrupted"] = fmt.Sprintf("%s after %d cases", signalName(sig), len(results))
	}
	if *jsonOut != "" {
		rep := report.New("npuverify check", reportCases(results))
		rep.Meta = meta
		if err := writeWith(*jsonOut, rep.JSON); err != nil {
			return inputErr(where, fmt.Errorf("--json %s: %w", *jsonOut, err))
		}
	}
	if *junitOut != "" {
		if err := writeWith(*junitOut, func(w io.Writer) error { return writeJUnit(w, results, meta) }); err != nil {
			return inputErr(where, fmt.Errorf("--junit %s: %w", *junitOut, err))
		}
	}
	if err := intr.err(where, fmt.Sprintf("%d cases done, running kernels killed", len(results))); err != nil {
		return err
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
		return golden.Embedded(), nil
	}
	s, err := golden.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--golden %s: %w", dir, err)
	}
	return s, nil
}

func verdict(r *golden.CaseResult) string {
	switch {
	case r.Err != nil && harness.IsInput(r.Err):
		return "INPUT ERROR"
	case r.Err != nil:
		return "BACKEND ERROR"
	case !r.Pass():
		return "FAIL"
	}
	return "pass"
}

func printTable(w io.Writer, results []golden.CaseResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tVERDICT\tPOLICY\tTIGHTNESS\tCYCLES")
	for i := range results {
		r := &results[i]
		tight, cycles := "—", "—"
		if r.Result != nil {
			t := 0.0
			for _, o := range r.Result.Verify.Outputs {
				t = math.Max(t, o.Metrics.Tightness)
			}
			tight = fmtNum(t)
			if r.Result.Cost != nil {
				cycles = strconv.FormatInt(r.Result.Cost.Cycles, 10)
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

func summaryLine(results []golden.CaseResult) string {
	var pass, fail, inErr, beErr int
	for i := range results {
		switch verdict(&results[i]) {
		case "pass":
			pass++
		case "FAIL":
			fail++
		case "INPUT ERROR":
			inErr++
		default:
			beErr++
		}
	}
	return fmt.Sprintf("%d cases: %d pass, %d fail, %d input error, %d backend error", len(results), pass, fail, inErr, beErr)
}

// reportCases converts check results for the report package.
func reportCases(results []golden.CaseResult) []report.Case {
	out := make([]report.Case, len(results))
	for i := range results {
		r := &results[i]
		c := report.Case{ID: r.ID, Case: r.Case, Result: r.Result, Err: r.Err, BackendErr: r.Err != nil && !harness.IsInput(r.Err)}
		for _, b := range r.Budgets {
			c.Checks = append(c.Checks, report.Check{Name: "budget " + b.Name, Pass: b.Pass, Detail: b.String()})
		}
		out[i] = c
	}
	return out
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

// writeWith renders into a file atomically.
func writeWith(p string, render func(io.Writer) error) error {
	var sb strings.Builder
	if err := render(&sb); err != nil {
		return err
	}
	return writeFileAtomic(p, []byte(sb.String()))
}
