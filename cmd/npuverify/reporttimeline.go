package main

import (
	"context"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/golden"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/report"
)

// timelineTracer traces cases as they run (golden.CheckOptions.Observe)
// when their ID is wanted, and keeps each trace only as the
// report.Timeline it reduces to, so that no more traces are held than
// cases run at once.
type timelineTracer struct {
	want  map[string]bool
	mu    sync.Mutex
	drawn map[string]report.Timeline
}

// expectTimelines returns a tracer for the report's own run that traces
// the cases TimelineCases is expected to pick among those opt selects:
// per op the one of the most recorded cycles (its budget, which a run on
// the recording profile stays at), so that the usual report runs no case
// twice; addTimelines runs again only a case the expectation missed.
func expectTimelines(store *golden.Store, opt golden.CheckOptions) *timelineTracer {
	tt := &timelineTracer{want: map[string]bool{}}
	cases, err := golden.Select(store, opt)
	if err != nil {
		return tt // golden.Check reports it
	}
	best := map[string]*golden.StoredCase{}
	for _, c := range cases { // sorted by ID: the first wins a tie
		if c.Err != nil || c.File.Budgets == nil || c.File.Budgets.Cycles <= 0 {
			continue
		}
		op, _, _ := strings.Cut(c.ID, "/")
		if b := best[op]; b == nil || c.File.Budgets.Cycles > b.File.Budgets.Cycles {
			best[op] = c
		}
	}
	for _, c := range best {
		tt.want[c.ID] = true
	}
	return tt
}

// observe is golden.CheckOptions.Observe.
func (tt *timelineTracer) observe(ctx context.Context, id string) (context.Context, func()) {
	if !tt.want[id] {
		return ctx, nil
	}
	t := npu.NewTrace()
	return npu.WithTrace(ctx, t), func() {
		op, _, _ := strings.Cut(id, "/")
		tl := report.NewTimeline(op, id, t)
		tt.mu.Lock()
		defer tt.mu.Unlock()
		if tt.drawn == nil {
			tt.drawn = map[string]report.Timeline{}
		}
		tt.drawn[id] = tl
	}
}

// addTimelines adds the report's Timelines section: for each op, the
// case report.TimelineCases picks from cases, traced on the emulator b.
// The timelines tt drew during the report's own run are used as they
// are (nil: none, as for a merge); any other case is run again under a
// trace (golden.Check with tt.observe). The cases come from the embedded
// store, which is where both a report's own run and the shards it merges
// (storeWhere, from their meta) read them; the schedule is deterministic,
// so a merged report draws what the unsharded one draws. Another backend
// has no schedule to draw: no section. An error is only ctx's (a
// signal); a case that cannot be traced is a timeline with an Error.
func addTimelines(ctx context.Context, rep *report.Report, b backend.Backend, base golden.CheckOptions, cases []report.Case, storeWhere string, tt *timelineTracer) error {
	if b.Name() != golden.ReferenceBackend {
		return nil
	}
	sec := &report.Timelines{Criterion: report.TimelineCriterion}
	ids := report.TimelineCases(cases)
	store := golden.Embedded().WithRecorder(emulator.Recorder())
	switch {
	case len(ids) == 0:
		sec.Note = "No case has a modelled schedule to draw."
		rep.Add(sec)
		return nil
	case storeWhere != store.Where():
		sec.Note = fmt.Sprintf("No timeline: the cases come from the store %s; the report traces again only the cases of the store embedded in npuverify (%s). Trace a store's cases with check --golden DIR --trace DIR.", storeWhere, store.Where())
		rep.Add(sec)
		return nil
	}
	if tt == nil {
		tt = &timelineTracer{}
	}
	tt.want = map[string]bool{}
	var quoted []string
	for _, id := range ids {
		if _, done := tt.drawn[id]; !done {
			tt.want[id] = true
			quoted = append(quoted, regexp.QuoteMeta(id))
		}
	}
	why := map[string]string{}
	if len(quoted) > 0 {
		opt := golden.CheckOptions{
			Run: "^(?:" + strings.Join(quoted, "|") + ")$", Jobs: runtime.NumCPU(), Observe: tt.observe,
			Exact: base.Exact, NoBudgets: base.NoBudgets, Numerics: base.Numerics, Timeout: base.Timeout, StepTimeout: base.StepTimeout,
		}
		outcomes, err := golden.Check(ctx, store, b, opt)
		if err != nil {
			return fmt.Errorf("timelines: %w", err)
		}
		for i := range outcomes {
			if o := &outcomes[i]; o.Err != nil {
				why[o.ID] = firstLine(o.Err.Error())
			}
		}
	}
	for _, id := range ids {
		tl, ok := tt.drawn[id]
		if !ok || tl.Spans == 0 {
			op, _, _ := strings.Cut(id, "/")
			msg := "not traced: it is not in the embedded store"
			if _, found := store.Lookup(id); found {
				msg = "not traced: the run recorded no instruction"
			}
			if w := why[id]; w != "" {
				msg = "not traced: " + w
			}
			tl = report.Timeline{Op: op, Case: id, Error: msg}
		}
		sec.Timelines = append(sec.Timelines, tl)
	}
	rep.Add(sec)
	return nil
}
