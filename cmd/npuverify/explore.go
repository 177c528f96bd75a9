package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/explore"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/metamorphic"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/report"
	"github.com/npuverify/npuverify/safefile"
)

const exploreSynopsis = "explore [--op OP]... [--backend B] [--budget D] [--seed N] [--jobs N] [--out DIR] [--db DIR] [--json FILE] [--shard I/N] [--profile P] [--timeout D]"

// exploreJSON is explore's --json file: "meta" and "cases" as check
// --json writes them (the smallest failing case of every finding), so that
// report --merge renders the findings of every shard, and "explore", the
// search's own summary.
type exploreJSON struct {
	Meta    map[string]string `json:"meta"`
	Cases   []report.Case     `json:"cases"`
	Explore *explore.Report   `json:"explore"`
}

// cmdExplore searches for cases the backend fails (package explore):
// findings are printed, shrunk, and added to the --out store, which check
// --golden and --db replay.
func cmdExplore(args []string, stdout, stderr io.Writer) error {
	const where = "explore"
	fs := newFlagSet(where, exploreSynopsis, stdout)
	var opNames multiFlag
	fs.Var(&opNames, "op", "search this op (repeatable; default: every op)")
	budget := fs.Duration("budget", 60*time.Second, "wall-clock time of the search (replaying --db and shrinking a finding may overrun it)")
	seed := fs.Uint64("seed", 1, "seed of the case streams; each shard searches a stream derived from it and the shard index")
	jobs := fs.Int("jobs", 0, "run this many cases at once (default: the number of CPUs)")
	out := fs.String("out", "explore-findings", "golden store to add the smallest failing cases to (created with its marker when absent)")
	db := fs.String("db", "", "store of earlier findings replayed first (default: the --out store, when it exists)")
	jsonOut := fs.String("json", "", "also write the summary and findings as JSON to FILE (report --merge reads it)")
	shard := fs.String("shard", "", "search shard I of N (I/N, 1 ≤ I ≤ N): a seed stream of its own (default: from Bazel's TEST_SHARD_INDEX and TEST_TOTAL_SHARDS when set)")
	var dev deviceFlags
	dev.register(fs)
	pos, err := parse(fs, where, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageErr(where, "unexpected argument %q", pos[0])
	}
	for _, n := range opNames {
		if _, err := ops.Lookup(n); err != nil {
			return usageErr(where, "--op: %v", err)
		}
	}
	switch {
	case *jobs < 0:
		return usageErr(where, "--jobs %d: want at least 1 (or 0: the number of CPUs)", *jobs)
	case *jobs == 0:
		*jobs = runtime.NumCPU()
	}
	if *budget <= 0 {
		return usageErr(where, "--budget %s: must be positive", *budget)
	}
	if *out == "" {
		return usageErr(where, "--out: want a directory")
	}
	opt := explore.Options{Ops: opNames, Seed: *seed, Budget: *budget, Jobs: *jobs, Extra: metamorphic.Check}
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
	opt.Numerics, opt.Timeout = prof.Numerics, dev.caseTimeout(b)
	b = exploreBackend(b)
	opt.Device = deviceOf(prof)
	dbDir, dbGiven := *db, *db != ""
	if !dbGiven {
		dbDir = *out
	}
	store, err := openDB(dbDir, dbGiven)
	if err != nil {
		return inputErr(where, err)
	}
	if store != nil {
		opt.DB = store
	}
	if bazelStatus != "" {
		if err := touchStatusFile(bazelStatus); err != nil {
			return inputErr(where, fmt.Errorf("%s: %w", envShardStatus, err))
		}
	}
	if p := newProgress(stderr, "npuverify explore", 0); p != nil {
		var mu sync.Mutex
		opt.Progress = func(s explore.Stats) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "\r\x1b[Knpuverify explore: %d cases, %d findings, %s of %s", s.Cases, s.Findings, s.Elapsed.Round(time.Second), *budget)
		}
		defer fmt.Fprintln(stderr)
	}
	if err := checkResultFiles(where, "", resultFile{flag: "--json", path: *jsonOut}); err != nil {
		return err // before the first case (resultfiles.go)
	}
	intr := catchSignals(b, stderr)
	defer intr.stop()
	rep, err := explore.Run(intr.ctx, b, opt)
	if store != nil {
		store.Close() // the shared lock, before Write takes the exclusive one
	}
	if err != nil && intr.signal() == 0 {
		return harnessErr(where, err)
	}
	if rep == nil {
		return intr.err(where, "no case finished")
	}
	// A backend that ran no case at all (it cannot start, every run is an
	// error) has not been explored: that is its failure, not a finding,
	// and nothing is written.
	broken := rep.BackendRuns == 0 && len(rep.Findings) > 0
	for _, f := range rep.Findings {
		if f.Kind != "backend error" || f.Replayed {
			broken = false
		}
	}
	if !broken {
		if err := explore.Write(intr.ctx, *out, emulator.Recorder(), rep.Findings, io.Discard); err != nil && intr.signal() == 0 {
			return inputErr(where, fmt.Errorf("--out %s: %w", *out, err))
		}
	}
	printFindings(stdout, rep, b.Name(), dev.backend, *out)
	meta := map[string]string{"backend": b.Name(), "profile": prof.Name, report.MetaCommand: report.CommandExplore, "seed": strconv.FormatUint(*seed, 10), "ops": strings.Join(rep.Ops, ",")}
	if *jsonOut != "" {
		js := exploreJSON{Meta: meta, Cases: []report.Case{}, Explore: rep}
		for _, f := range rep.Findings {
			if f.Outcome != nil {
				c := report.FromOutcome(f.Outcome)
				c.ID = f.Case.Op + "/" + f.Case.Name
				js.Cases = append(js.Cases, c)
			}
		}
		if err := safefile.Write(*jsonOut, 0o644, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(js)
		}); err != nil {
			return inputErr(where, fmt.Errorf("--json: %w", err))
		}
	}
	if err := intr.err(where, fmt.Sprintf("%d cases done, running kernels killed", rep.Cases)); err != nil {
		return err
	}
	switch {
	case broken:
		return backendErr(where, fmt.Errorf("backend %s ran none of the %d cases (%s): not explored", b.Name(), rep.Cases, firstLine(rep.Findings[0].Message)))
	case len(rep.Findings) > 0:
		return failed{exitFail}
	}
	return nil
}

// exploreBackend is the test seam of cmdExplore: the tests plant a bug in
// the emulator here to see the CLI find it, shrink it and write it.
var exploreBackend = func(b backend.Backend) backend.Backend { return b }

// deviceOf is the device facts explore derives its boundaries from.
func deviceOf(p npu.Profile) explore.Device {
	return explore.Device{UBBytes: p.UBBytes, BlockBytes: p.UBBlockBytes, Cores: p.VectorCores, Fractal: p.CubeFP16.M}
}

// openDB opens the example database: the store in dir, or none when dir
// does not exist and was not named by --db (the default, the --out store,
// before the first finding).
func openDB(dir string, given bool) (*golden.Store, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) && !given {
		return nil, nil
	}
	s, err := golden.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--db %s: %w", dir, err)
	}
	return s.WithRecorder(emulator.Recorder()), nil
}

// printFindings prints each finding (as found, as shrunk, the failure and
// how to replay it) and the summary line.
func printFindings(w io.Writer, rep *explore.Report, name, backendFlag, out string) {
	for _, f := range rep.Findings {
		id := f.Case.Op + "/" + f.Case.Name
		if f.Replayed {
			fmt.Fprintf(w, "FINDING %s (%s, replayed from the database)\n", id, f.Kind)
		} else {
			fmt.Fprintf(w, "FINDING %s (%s)\n  found:  %s\n  shrunk: %s (%d steps in %d runs)\n", id, f.Kind,
				explore.Describe(f.Found), explore.Describe(f.Case), f.ShrinkSteps, f.ShrinkRuns)
		}
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(strings.TrimRight(f.Message, "\n"), "\n", "\n  "))
		switch {
		case f.WriteError != "":
			fmt.Fprintf(w, "  not written: %s\n", f.WriteError)
		case f.Path != "" && !f.Replayed:
			fmt.Fprintf(w, "  written: %s\n  replay:  %s\n", f.Path, explore.ReplayHint(out, f.Case, shellQuote(backendFlag)))
		}
		fmt.Fprintln(w)
	}
	shard := ""
	if rep.Shards > 0 {
		shard = fmt.Sprintf(", shard %d/%d (stream %d)", rep.Shard, rep.Shards, rep.StreamSeed)
	}
	fmt.Fprintf(w, "explore: %d cases, %d findings, %d replayed, %d rejected draws in %s (backend %s, seed %d%s)\n",
		rep.Cases, len(rep.Findings), rep.Replayed, rep.Rejected, rep.Elapsed, name, rep.Seed, shard)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
