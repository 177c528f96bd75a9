package npu

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
)

// Trace collects the schedules of the launches run under it (WithTrace)
// and writes them as Chrome trace event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing load: one process per core, one
// thread (track) per pipe, a complete event ("X") per instruction, and a
// flow ("s" → "f") from each SetFlag or queue hand-off to the wait it
// releases. Timestamps are microseconds at the profile's clock; every
// event also carries its cycles in args (start, end) so a reader can
// check the schedule without rounding. Launches follow one another on
// the time axis.
type Trace struct {
	mu     sync.Mutex
	events []traceEvent
	offset int64 // cycles of the launches so far
	flowID int
	named  map[int]bool // cores whose tracks are named
}

// NewTrace returns an empty trace.
func NewTrace() *Trace { return &Trace{} }

type traceKey struct{}

// WithTrace returns a context under which every launch records its
// schedule into t.
func WithTrace(ctx context.Context, t *Trace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

func traceFrom(ctx context.Context) *Trace {
	t, _ := ctx.Value(traceKey{}).(*Trace)
	return t
}

// traceEvent is one Chrome trace event.
type traceEvent struct {
	Name string         `json:"name"`
	Cat  string         `json:"cat,omitempty"`
	Ph   string         `json:"ph"`
	Ts   float64        `json:"ts"`
	Dur  *float64       `json:"dur,omitempty"`
	Pid  int            `json:"pid"`
	Tid  int            `json:"tid"`
	ID   int            `json:"id,omitempty"`
	BP   string         `json:"bp,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// coreTrace is one block's spans, marks and flows, in cycles from the
// launch's start.
type coreTrace struct {
	spans []traceSpan
	marks []traceSpan // SetFlag / EnQue / FreeTensor points (zero length)
	flows []traceFlow
}

type traceSpan struct {
	p          Pipe
	op         string
	start, end int64
}

type traceFlow struct {
	mark int32
	dst  Pipe
	t    int64
}

func (t *coreTrace) span(p Pipe, op string, start, end int64) {
	t.spans = append(t.spans, traceSpan{p: p, op: op, start: start, end: end})
}

func (t *coreTrace) mark(p Pipe, op string, at int64) int32 {
	t.marks = append(t.marks, traceSpan{p: p, op: op, start: at, end: at})
	return int32(len(t.marks) - 1)
}

func (t *coreTrace) flow(mark int32, dst Pipe, at int64) {
	t.flows = append(t.flows, traceFlow{mark: mark, dst: dst, t: at})
}

// addLaunch appends one launch's blocks (by block index) to the trace,
// after the launches before it, at clock mhz.
func (t *Trace) addLaunch(blocks []*coreTrace, cycles int64, mhz float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	us := func(cyc int64) float64 { return float64(t.offset+cyc) / mhz }
	for core, ct := range blocks {
		if ct == nil {
			continue
		}
		if !t.named[core] {
			if t.named == nil {
				t.named = map[int]bool{}
			}
			t.named[core] = true
			t.events = append(t.events, traceEvent{Name: "process_name", Ph: "M", Pid: core, Args: map[string]any{"name": fmt.Sprintf("core %d", core)}})
			for p := range numPipes {
				t.events = append(t.events, traceEvent{Name: "thread_name", Ph: "M", Pid: core, Tid: int(p), Args: map[string]any{"name": p.String()}})
			}
		}
		for _, s := range ct.spans {
			d := float64(s.end-s.start) / mhz
			t.events = append(t.events, traceEvent{Name: s.op, Cat: s.p.String(), Ph: "X", Ts: us(s.start), Dur: &d, Pid: core, Tid: int(s.p),
				Args: map[string]any{"start": t.offset + s.start, "end": t.offset + s.end}})
		}
		for _, f := range ct.flows {
			m := ct.marks[f.mark]
			t.flowID++
			t.events = append(t.events,
				traceEvent{Name: "event", Cat: "flow", Ph: "s", Ts: us(m.start), Pid: core, Tid: int(m.p), ID: t.flowID, Args: map[string]any{"cycle": t.offset + m.start}},
				traceEvent{Name: "event", Cat: "flow", Ph: "f", BP: "e", Ts: us(f.t), Pid: core, Tid: int(f.dst), ID: t.flowID, Args: map[string]any{"cycle": t.offset + f.t}})
		}
	}
	t.offset += cycles
}

// WriteJSON writes the trace as a Chrome trace event JSON object.
func (t *Trace) WriteJSON(w io.Writer) error {
	t.mu.Lock()
	ev := slices.Clone(t.events)
	t.mu.Unlock()
	if ev == nil {
		ev = []traceEvent{}
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(struct {
		TraceEvents     []traceEvent `json:"traceEvents"`
		DisplayTimeUnit string       `json:"displayTimeUnit"`
	}{ev, "ns"}); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}
