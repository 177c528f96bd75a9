package explore

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/panicguard"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
)

// Options configure Run.
type Options struct {
	// Ops are the ops searched (nil: every registered op).
	Ops []string
	// Seed is the base seed; with Shards > 0 each shard searches the stream
	// StreamSeed(Seed, Shard).
	Seed uint64
	// Shard and Shards: shard I of N (1-based), or 0 and 0 unsharded.
	Shard, Shards int
	// Budget is the wall-clock time of the search (0: until ctx is done).
	// Replaying DB and shrinking the findings made in time may overrun
	// it by at most ShrinkTime per finding.
	Budget time.Duration
	// Jobs is how many cases run at once (≤ 1: one).
	Jobs int
	// Device and Limits shape the generated cases.
	Device Device
	Limits Limits
	// Numerics is the profile the backend computes under when it does not
	// say (harness.Options.Numerics).
	Numerics tensor.Numerics
	// Timeout bounds each run (0: none).
	Timeout time.Duration
	// DB, when set, is a store of earlier findings replayed (the cases of
	// the searched ops) before any new case; a case that still fails is a
	// finding at once.
	DB *golden.Store
	// MaxShrinkRuns and ShrinkTime bound the shrinking of one finding
	// (0: 500 runs, 60 s).
	MaxShrinkRuns int
	ShrinkTime    time.Duration
	// Extra, when set, is run on every case that passed the harness's
	// checks (e.g. metamorphic relations); an error is a failure of the
	// case, signature "extra".
	Extra func(ctx context.Context, b backend.Backend, c ops.Case) []error
	// Progress, when set, is called (from any goroutine, serialised) after
	// every case the search runs.
	Progress func(Stats)
}

// Stats are the counts of a search so far.
type Stats struct {
	Cases    int // cases run and judged
	Rejected int // cases the harness refused as illegal (draws the generator refused are counted in Report.Rejected at the end)
	Findings int
	Elapsed  time.Duration
}

// Finding is one failure: the smallest failing case shrinking reached.
type Finding struct {
	// Case is the smallest failing case (named as the case found).
	Case ops.Case `json:"case"`
	// Found is the case as the search drew it, before shrinking.
	Found ops.Case `json:"found"`
	// Kind is "fail" (a check failed), "backend error" (the backend could
	// not run a legal case: a crash is a bug) or "extra" (Options.Extra).
	Kind string `json:"kind"`
	// Signature are the failing "output:check" pairs (or the kind) of
	// Case; shrinking keeps a step only while one of them still fails.
	Signature []string `json:"signature"`
	// Message is the failure report of Case.
	Message string `json:"message"`
	// ShrinkRuns are the runs shrinking made, ShrinkSteps the steps it
	// kept.
	ShrinkRuns  int `json:"shrink_runs"`
	ShrinkSteps int `json:"shrink_steps"`
	// Replayed says the finding came from the DB, not the search.
	Replayed bool `json:"replayed,omitempty"`
	// Path is the store entry written for it (set by Write).
	Path string `json:"path,omitempty"`
	// WriteError says why no entry could be written.
	WriteError string `json:"write_error,omitempty"`
	// Outcome is the outcome of Case's last run, for reports.
	Outcome *harness.Outcome `json:"-"`
}

// Report is what a search did.
type Report struct {
	Ops         []string       `json:"ops"`
	Seed        uint64         `json:"seed"`
	StreamSeed  uint64         `json:"stream_seed"`
	Shard       int            `json:"shard,omitempty"`
	Shards      int            `json:"shards,omitempty"`
	Budget      string         `json:"budget"`
	Elapsed     string         `json:"elapsed"`
	Cases       int            `json:"cases"`
	Rejected    int            `json:"rejected"`
	CasesPerOp  map[string]int `json:"cases_per_op"`
	Replayed    int            `json:"replayed"`
	Findings    []*Finding     `json:"findings"`
	BackendRuns int            `json:"-"` // runs that returned outputs (pass or fail)
}

// verdict is one judged run.
type verdict struct {
	fail    bool
	kind    string
	sig     []string
	message string
	outcome *harness.Outcome
	ran     bool // the backend returned outputs
}

// Run searches for cases backend b fails, within opt.Budget or until ctx
// is done, and returns what it found (each finding shrunk). It fails only
// on invalid options or a contract the generator cannot draw from; a
// cancelled ctx ends the search early with what was found.
func Run(ctx context.Context, b backend.Backend, opt Options) (*Report, error) {
	names := opt.Ops
	if len(names) == 0 {
		names = ops.Names()
	}
	if opt.Shards < 0 || (opt.Shards > 0 && (opt.Shard < 1 || opt.Shard > opt.Shards)) || (opt.Shards == 0 && opt.Shard != 0) {
		return nil, &harness.InputError{Err: fmt.Errorf("shard %d/%d: want I/N with 1 ≤ I ≤ N", opt.Shard, opt.Shards)}
	}
	stream := StreamSeed(opt.Seed, opt.Shard)
	gens := map[string]*Generator{}
	for _, n := range names {
		op, err := ops.Lookup(n)
		if err != nil {
			return nil, &harness.InputError{Err: fmt.Errorf("--op: %w", err)}
		}
		gens[n] = NewGenerator(op, opt.Device, opt.Limits, stream)
	}
	start := time.Now()
	rep := &Report{Ops: names, Seed: opt.Seed, StreamSeed: stream, Shard: opt.Shard, Shards: opt.Shards,
		Budget: opt.Budget.String(), CasesPerOp: map[string]int{}}
	s := &search{b: b, opt: opt, rep: rep, start: start, found: map[string]bool{}}
	if opt.DB != nil {
		if err := s.replay(ctx, names); err != nil {
			return nil, err
		}
	}
	sctx := ctx
	if opt.Budget > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, start.Add(opt.Budget))
		defer cancel()
	}
	err := s.explore(sctx, ctx, names, gens)
	for _, g := range gens {
		rep.Rejected += g.Drawn - g.n
	}
	rep.Elapsed = time.Since(start).Round(time.Millisecond).String()
	slices.SortFunc(rep.Findings, func(a, b *Finding) int { return strings.Compare(a.Case.Op+"/"+a.Case.Name, b.Case.Op+"/"+b.Case.Name) })
	return rep, err
}

// search is the state of one Run.
type search struct {
	b     backend.Backend
	opt   Options
	rep   *Report
	start time.Time
	mu    sync.Mutex
	found map[string]bool // ops with a finding: not searched further
}

// replay runs the DB's cases of the searched ops; still-failing ones are
// findings (not shrunk again: they were shrunk when found).
func (s *search) replay(ctx context.Context, names []string) error {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	sel, err := golden.Select(s.opt.DB, golden.CheckOptions{Run: "^(" + strings.Join(quoted, "|") + ")/"})
	if err != nil {
		return err
	}
	if len(sel) == 0 {
		return nil
	}
	outs, err := golden.Check(ctx, s.opt.DB, s.b, golden.CheckOptions{
		Run: "^(" + strings.Join(quoted, "|") + ")/", Jobs: s.opt.Jobs, Numerics: s.opt.Numerics,
		Timeout: s.opt.Timeout, NoBudgets: true, Exact: golden.ExactNever,
	})
	if err != nil && ctx.Err() == nil {
		return err
	}
	for i := range outs {
		o := &outs[i]
		s.rep.Replayed++
		v := outcomeVerdict(o)
		if !v.fail {
			continue
		}
		c := o.Ran()
		if c.Op == "" {
			continue
		}
		s.found[c.Op] = true
		s.rep.Findings = append(s.rep.Findings, &Finding{Case: c, Found: c, Kind: v.kind, Signature: v.sig, Message: v.message, Replayed: true, Outcome: o, Path: o.ID})
	}
	return nil
}

// outcomeVerdict reads a golden.Check outcome as a verdict.
func outcomeVerdict(o *harness.Outcome) verdict {
	switch o.Verdict() {
	case harness.VerdictPass:
		return verdict{ran: true, outcome: o}
	case harness.VerdictBackendError:
		return verdict{fail: true, kind: "backend error", sig: []string{"backend error"}, message: o.Failure(), outcome: o}
	case harness.VerdictInputError:
		return verdict{outcome: o}
	}
	v := verdict{fail: true, kind: "fail", message: o.Failure(), outcome: o, ran: o.Result != nil}
	if o.Result != nil {
		v.sig = signature(o.Result)
	}
	for _, c := range o.Checks {
		if !c.Pass {
			v.sig = append(v.sig, "check:"+c.Name)
		}
	}
	return v
}

// signature lists the failing "output:check" pairs of a result.
func signature(r *harness.Result) []string {
	var sig []string
	if r.Verify == nil {
		return nil
	}
	for _, o := range r.Verify.Outputs {
		for _, v := range o.Verdicts {
			if !v.Pass {
				sig = append(sig, o.Name+":"+v.Policy)
			}
		}
	}
	slices.Sort(sig)
	return slices.Compact(sig)
}

// judge runs a prepared case. An input error (an illegal case the
// generator made) is neither a pass nor a failure: ok is false.
func (s *search) judge(ctx context.Context, pc *harness.Prepared) (v verdict, ok bool, err error) {
	o := &harness.Outcome{ID: pc.Case.Op + "/" + pc.Case.Name, Case: pc.Case}
	res, err := harness.RunPrepared(ctx, s.b, pc, harness.Options{Numerics: s.opt.Numerics, Timeout: s.opt.Timeout})
	if err != nil {
		if ctx.Err() != nil {
			return v, false, ctx.Err()
		}
		o.Err = err
		if harness.IsInput(err) {
			return v, false, nil
		}
		return verdict{fail: true, kind: "backend error", sig: []string{"backend error"}, message: err.Error(), outcome: o}, true, nil
	}
	o.Result = res
	for _, p := range res.Verify.Outputs {
		for _, vd := range p.Verdicts {
			o.Policies = appendNew(o.Policies, vd.Policy)
		}
	}
	if !res.Pass() {
		return verdict{fail: true, kind: "fail", sig: signature(res), message: res.Verify.Failure(), outcome: o, ran: true}, true, nil
	}
	if s.opt.Extra != nil {
		if errs := s.opt.Extra(ctx, s.b, pc.Case); len(errs) > 0 {
			if ctx.Err() != nil {
				return v, false, ctx.Err()
			}
			msg := make([]string, len(errs))
			for i, e := range errs {
				msg[i] = e.Error()
			}
			o.Checks = append(o.Checks, harness.Check{Name: "extra", Pass: false, Detail: strings.Join(msg, "; ")})
			return verdict{fail: true, kind: "extra", sig: []string{"extra"}, message: strings.Join(msg, "\n"), outcome: o, ran: true}, true, nil
		}
	}
	return verdict{ran: true, outcome: o}, true, nil
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// work is one case handed to a job.
type work struct {
	op string
	pc *harness.Prepared
}

// explore runs the generators' cases, opt.Jobs at a time, round robin
// over the ops without a finding, until sctx is done (the budget) or every
// op has one; each failure is shrunk under ctx (the caller's: shrinking
// is bounded on its own).
func (s *search) explore(sctx, ctx context.Context, names []string, gens map[string]*Generator) error {
	next := make(chan work)
	var genErr error
	// A panic in the generator or a job is raised again here once every
	// goroutine is done (the CLI's guard reports it); the jobs take no new
	// case meanwhile and the generator stops, so nothing hangs.
	var crash panicguard.Catcher
	defer crash.Rethrow()
	go func() {
		defer close(next)
		defer crash.Catch()
		for i := 0; ; i++ {
			var live []string
			s.locked(func() {
				for _, n := range names {
					if !s.found[n] {
						live = append(live, n)
					}
				}
			})
			if len(live) == 0 || sctx.Err() != nil || crash.Caught() {
				return
			}
			n := live[i%len(live)]
			pc, err := gens[n].Next()
			if err != nil {
				s.locked(func() { genErr = err })
				return
			}
			select {
			case next <- work{n, pc}:
			case <-sctx.Done():
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range max(s.opt.Jobs, 1) {
		wg.Go(func() {
			for w := range next {
				if crash.Caught() {
					continue
				}
				func() {
					defer crash.Catch()
					s.run(sctx, ctx, w)
				}()
			}
		})
	}
	wg.Wait()
	if genErr != nil {
		return genErr
	}
	return nil
}

// run judges one case and shrinks it when it is its op's first failure.
// s.mu is taken through locked, so a panic (in a judge or the progress
// callback) never leaves it held for the other jobs to wait on.
func (s *search) run(sctx, ctx context.Context, w work) {
	var skip bool
	s.locked(func() { skip = s.found[w.op] })
	if skip {
		return
	}
	v, ok, err := s.judge(sctx, w.pc)
	if err != nil {
		return // the budget ran out mid-case
	}
	var first bool
	s.locked(func() {
		if !ok {
			s.rep.Rejected++ // the harness refused what the generator drew
		} else {
			s.rep.Cases++
			s.rep.CasesPerOp[w.op]++
			if v.ran {
				s.rep.BackendRuns++
			}
		}
		first = v.fail && !s.found[w.op]
		if first {
			s.found[w.op] = true
		}
		s.progress()
	})
	if first {
		f := s.shrink(ctx, w.pc.Case, v)
		s.locked(func() {
			s.rep.Findings = append(s.rep.Findings, f)
			s.progress()
		})
	}
}

// locked runs f with s.mu held.
func (s *search) locked(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
}

// progress reports the counts; s.mu is held.
func (s *search) progress() {
	if s.opt.Progress != nil {
		s.opt.Progress(Stats{Cases: s.rep.Cases, Rejected: s.rep.Rejected, Findings: len(s.rep.Findings), Elapsed: time.Since(s.start)})
	}
}
