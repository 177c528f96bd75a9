package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/perf"
	"github.com/npuverify/npuverify/report"
)

// perfFlags are check's performance budgets on kernels that report their
// own times (docs/cli.md): --baseline with --max-slowdown, and
// --min-efficiency against the roofline of --device (else of --profile).
type perfFlags struct {
	baseline    string
	maxSlowdown string
	minEff      string
	device      string
}

// defaultMaxSlowdown is --max-slowdown's default.
const defaultMaxSlowdown = "10%"

func (f *perfFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.baseline, "baseline", "", "compare each case's kernel times with the same case in FILE, an earlier check --json; a significant slowdown beyond --max-slowdown is SLOWER")
	fs.StringVar(&f.maxSlowdown, "max-slowdown", defaultMaxSlowdown, "with --baseline: the allowed rise of the median kernel time, as a percentage (10%) or a fraction below 1 (0.1)")
	fs.StringVar(&f.minEff, "min-efficiency", "", "fail as INEFFICIENT a case whose kernel reports times and reaches less than this share of its roofline, a fraction in (0, 1] (0.6) or a percentage (60%); latency-bound cases are not judged")
	fs.StringVar(&f.device, "device", "", "the device's peak rates for the roofline, a JSON file (docs/cli.md#performance-budgets-on-kernel-times; default: derived from --profile)")
}

// perfBudget is the parsed and loaded perfFlags.
type perfBudget struct {
	base        *perf.Baseline // nil without --baseline
	maxSlowdown float64
	minEff      float64 // 0: not judged
	peaks       perf.Peaks
}

// load validates the flags and reads the baseline and device files, before
// any case runs: every problem is a usage error (exit 2) naming the flag
// and, for a file, the field or case at fault.
func (f *perfFlags) load(fs *flag.FlagSet, where string, prof npu.Profile) (*perfBudget, error) {
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	b := &perfBudget{peaks: perf.PeaksOf(prof)}
	var err error
	if b.maxSlowdown, err = parseShare(f.maxSlowdown, false); err != nil {
		return nil, usageErr(where, "--max-slowdown %s: %v", f.maxSlowdown, err)
	}
	if set["max-slowdown"] && f.baseline == "" {
		return nil, usageErr(where, "--max-slowdown %s: needs --baseline FILE.json (the earlier run to compare with)", f.maxSlowdown)
	}
	if f.minEff != "" {
		if b.minEff, err = parseShare(f.minEff, true); err != nil {
			return nil, usageErr(where, "--min-efficiency %s: %v", f.minEff, err)
		}
		if b.minEff <= 0 || b.minEff > 1 {
			return nil, usageErr(where, "--min-efficiency %s: want a share of the roofline in (0, 1]", f.minEff)
		}
	}
	if f.device != "" {
		if b.peaks, err = perf.LoadPeaks(f.device); err != nil {
			return nil, usageErr(where, "--device: %v", err)
		}
	}
	if f.baseline != "" {
		if b.base, err = perf.ReadBaseline(f.baseline); err != nil {
			return nil, usageErr(where, "--baseline: %v", err)
		}
	}
	return b, nil
}

// parseShare parses a share: "10%" or a fraction ("0.1"). Unless whole
// is set (a share of a whole, which the caller holds to (0, 1]), a bare
// number of 1 or more is refused: "10" may mean 10 % or ten times, so it
// must be written "10%" or "1000%".
func parseShare(s string, whole bool) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if p, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(p), 0.01
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, fmt.Errorf("not a percentage (10%%) or a fraction (0.1)")
	}
	if x < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	if scale == 1 && x >= 1 && !whole {
		return 0, fmt.Errorf("a bare number must be a fraction below 1; write %s%% for a percentage", t)
	}
	return x * scale, nil
}

// judge adds the performance checks to every judged case: a slowdown
// check under --baseline, an efficiency check under --min-efficiency. A
// case without kernel times, or missing from the baseline, passes its
// check with a detail saying so: nothing was measured against nothing.
func (b *perfBudget) judge(results []harness.Outcome) error {
	for i := range results {
		r := &results[i]
		if r.Result == nil {
			continue
		}
		var times []float64
		if m := r.Result.Measurement; m != nil {
			times = m.KernelSeconds
		}
		if b.base != nil {
			k := harness.Check{Name: harness.CheckSlowdown, Pass: true}
			base, ok := b.base.Times[r.ID]
			switch {
			case len(times) == 0:
				k.Detail = perf.StateNoTimes
			case !ok:
				k.Detail = "no baseline: the case is not in " + b.base.Path
			case len(base) == 0:
				k.Detail = "no baseline: " + b.base.Path + " has no kernel times for the case"
			default:
				c, err := perf.Compare(base, times, b.maxSlowdown)
				if err != nil {
					return fmt.Errorf("%s: %w", r.ID, err)
				}
				k.Pass, k.Detail = c.State != perf.StateSlower, c.String()
			}
			r.Checks = append(r.Checks, k)
		}
		if b.minEff > 0 {
			k := harness.Check{Name: harness.CheckEfficiency, Pass: true, Detail: perf.StateNoTimes}
			if len(times) > 0 {
				if w, err := perf.WorkOf(r.Result.Case.Op, r.Result.Params, r.Result.Inputs); err != nil {
					k.Detail = "no roofline: " + err.Error()
				} else {
					var state string
					state, k.Detail = perf.JudgeEfficiency(perf.RooflineOf(w, b.peaks), times, b.minEff)
					k.Pass = state != perf.StateInefficient
				}
			}
			r.Checks = append(r.Checks, k)
		}
	}
	return nil
}

// reportCases are the report's records of results with their rooflines on
// the budget's device.
func (b *perfBudget) reportCases(results []harness.Outcome) []report.Case {
	cs := make([]report.Case, len(results))
	for i := range results {
		cs[i] = report.FromOutcome(&results[i])
		cs[i].SetRoofline(b.peaks)
	}
	return cs
}

// print writes the performance checks below check's table: one line per
// case with kernel times, then how many cases had none.
func (b *perfBudget) print(w io.Writer, results []harness.Outcome) {
	if b.base == nil && b.minEff == 0 {
		return
	}
	var lines []string
	untimed := 0
	for i := range results {
		r := &results[i]
		if r.Result == nil {
			continue
		}
		for _, k := range r.Checks {
			if k.Name != harness.CheckSlowdown && k.Name != harness.CheckEfficiency {
				continue
			}
			if k.Detail == perf.StateNoTimes {
				untimed++
				break
			}
			mark := "ok"
			switch {
			case k.Pass:
			case k.Name == harness.CheckSlowdown:
				mark = strings.ToUpper(harness.VerdictSlower)
			default:
				mark = strings.ToUpper(harness.VerdictInefficient)
			}
			lines = append(lines, fmt.Sprintf("%s: %s: %s: %s", r.ID, k.Name, mark, k.Detail))
		}
	}
	var src []string
	if b.base != nil {
		src = append(src, fmt.Sprintf("baseline %s, max slowdown %s", b.base.Path, strconv.FormatFloat(100*b.maxSlowdown, 'g', 4, 64)+"%"))
	}
	if b.minEff > 0 {
		src = append(src, fmt.Sprintf("min efficiency %g of the roofline on %s", b.minEff, b.peaks.Name))
	}
	fmt.Fprintf(w, "\nPerformance (%s):\n\n", strings.Join(src, "; "))
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	if untimed > 0 {
		fmt.Fprintf(w, "%d cases without kernel times: not judged\n", untimed)
	}
}
