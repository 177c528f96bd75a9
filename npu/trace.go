package npu

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"strconv"
	"sync"
)

// DefaultTraceLimit is the number of events (instruction spans and
// flows) a Trace from NewTrace keeps. A trace is held in memory until it
// is written, 24 bytes an event here and about 130 bytes of JSON on
// disk, so the limit bounds both: 1<<19 events are 12 MiB in memory (up
// to twice that while the slices grow; a launch being recorded holds at
// most the limit again in each of its blocks' spans, marks and flows,
// shared among the blocks) and some 70 MB of JSON, past which Perfetto
// itself grows slow. The events past the limit are counted, not kept
// (Dropped), and the file says so.
const DefaultTraceLimit = 1 << 19

// Trace collects the schedules of the launches run under it (WithTrace)
// and writes them as Chrome trace event JSON, which Perfetto
// (ui.perfetto.dev) and chrome://tracing load: one process per core, one
// thread (track) per pipe, a complete event ("X") per instruction, and a
// flow ("s" → "f") from each SetFlag or queue hand-off to the wait it
// releases. Timestamps are microseconds at the profile's clock; every
// event also carries its cycles in args (start, end) so a reader can
// check the schedule without rounding. Launches follow one another on
// the time axis.
//
// A trace keeps at most its limit of events (NewTrace: DefaultTraceLimit),
// compactly, and renders the JSON only when written; the events it drops
// are chosen deterministically (by launch, block and issue order), so the
// same run always keeps the same events.
type Trace struct {
	mu       sync.Mutex
	spans    []traceRecSpan // every launch's, offset applied
	flows    []traceRecFlow
	names    []string // the instruction names spans index
	nameIdx  map[string]uint16
	cores    int   // tracks are named for cores [0, cores)
	offset   int64 // cycles of the launches so far
	launches int
	mhz      float64 // the first launch's clock
	limit    int
	dropped  int64
}

// NewTrace returns an empty trace that keeps at most DefaultTraceLimit
// events.
func NewTrace() *Trace { return NewTraceLimit(DefaultTraceLimit) }

// NewTraceLimit returns an empty trace that keeps at most limit events
// (spans and flows; limit ≤ 0 means DefaultTraceLimit): a caller tracing
// many runs at once holds each one's memory to what it can afford.
func NewTraceLimit(limit int) *Trace {
	if limit <= 0 {
		limit = DefaultTraceLimit
	}
	return &Trace{limit: limit}
}

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

// coreTrace is one block's spans, marks and flows, in cycles from the
// launch's start. It keeps at most limit spans and limit marks (a block
// cannot add more to its trace than the whole trace keeps); the rest
// are counted in dropped. Instruction names are indices into names, so
// that the records hold no pointer (the garbage collector skips them,
// and a span is 24 bytes).
type coreTrace struct {
	spans   []traceSpan
	marks   []traceSpan // SetFlag / EnQue / FreeTensor points (zero length)
	flows   []traceFlow
	names   []string
	last    uint16 // the index of the name used last
	limit   int
	dropped int64
}

type traceSpan struct {
	start, end int64
	op         uint16 // index into coreTrace.names
	p          Pipe
}

// traceRecSpan is a span as the trace keeps it.
type traceRecSpan struct {
	start, end int64
	core       int32
	op         uint16 // index into Trace.names
	p          Pipe
}

// name returns op's index in t.names, adding it when new. A block uses
// a handful of names, mostly the last one again.
func (t *coreTrace) name(op string) uint16 {
	if int(t.last) < len(t.names) && t.names[t.last] == op {
		return t.last
	}
	i := slices.Index(t.names, op)
	if i < 0 {
		t.names = append(t.names, op)
		i = len(t.names) - 1
	}
	t.last = uint16(i)
	return t.last
}

type traceFlow struct {
	mark int32
	dst  Pipe
	t    int64
}

// traceRecFlow is a flow as the trace keeps it: from pipe src at cycle
// from to pipe dst at cycle to, on one core.
type traceRecFlow struct {
	from, to int64
	core     int32
	src, dst Pipe
}

// blockLimit is how many spans (and marks, and flows) one block of a
// launch of blockDim blocks may record: the trace's limit shared by the
// blocks, so that the blocks' traces of a launch in flight, before
// addLaunch takes what the trace keeps, hold at most about three times
// the limit (at least 64 of each a block).
func (t *Trace) blockLimit(blockDim int) int {
	limit := t.limit
	if limit <= 0 {
		limit = DefaultTraceLimit
	}
	return max(limit/max(blockDim, 1), 64)
}

func (t *coreTrace) span(p Pipe, op string, start, end int64) {
	if t.limit > 0 && len(t.spans) >= t.limit {
		t.dropped++
		return
	}
	t.spans = append(t.spans, traceSpan{p: p, op: t.name(op), start: start, end: end})
}

// mark records a zero-length point a flow may start from and returns its
// index, or -1 when the block's limit is reached: no flow starts there,
// and the flow it would have started is counted as dropped here (every
// SetFlag and EnQue is waited on once in a kernel that does not hang).
func (t *coreTrace) mark(p Pipe, op string, at int64) int32 {
	if t.limit > 0 && len(t.marks) >= t.limit {
		t.dropped++
		return -1
	}
	t.marks = append(t.marks, traceSpan{p: p, op: t.name(op), start: at, end: at})
	return int32(len(t.marks) - 1)
}

func (t *coreTrace) flow(mark int32, dst Pipe, at int64) {
	if t.limit > 0 && len(t.flows) >= t.limit {
		t.dropped++
		return
	}
	t.flows = append(t.flows, traceFlow{mark: mark, dst: dst, t: at})
}

// newCoreTrace returns the trace of one block of a launch of blockDim
// blocks under t.
func (t *Trace) newCoreTrace(blockDim int) *coreTrace {
	return &coreTrace{limit: t.blockLimit(blockDim)}
}

// addLaunch appends one launch's blocks (by block index) to the trace,
// after the launches before it, at clock mhz. Blocks are taken in index
// order, each block's spans then flows in issue order, until the trace's
// limit: the events kept do not depend on how the blocks were scheduled
// on the host.
func (t *Trace) addLaunch(blocks []*coreTrace, cycles int64, mhz float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.launches == 0 {
		t.mhz = mhz
	}
	t.launches++
	limit := t.limit
	if limit <= 0 {
		limit = DefaultTraceLimit
	}
	room := func() bool { return len(t.spans)+len(t.flows) < limit }
	n := 0
	for _, ct := range blocks {
		if ct != nil {
			n += len(ct.spans) + len(ct.flows)
		}
	}
	t.spans = slices.Grow(t.spans, min(n, max(limit-len(t.spans)-len(t.flows), 0)))
	for core, ct := range blocks {
		if ct == nil {
			continue
		}
		t.cores = max(t.cores, core+1)
		t.dropped += ct.dropped
		// The block's name indices in the trace's table.
		idx := make([]uint16, len(ct.names))
		for i, name := range ct.names {
			j, ok := t.nameIdx[name]
			if !ok {
				if t.nameIdx == nil {
					t.nameIdx = map[string]uint16{}
				}
				j = uint16(len(t.names))
				t.names = append(t.names, name)
				t.nameIdx[name] = j
			}
			idx[i] = j
		}
		for _, s := range ct.spans {
			if !room() {
				t.dropped++
				continue
			}
			t.spans = append(t.spans, traceRecSpan{start: t.offset + s.start, end: t.offset + s.end, core: int32(core), op: idx[s.op], p: s.p})
		}
		for _, f := range ct.flows {
			if !room() {
				t.dropped++
				continue
			}
			m := ct.marks[f.mark]
			t.flows = append(t.flows, traceRecFlow{from: t.offset + m.start, to: t.offset + f.t, core: int32(core), src: m.p, dst: f.dst})
		}
	}
	t.offset += cycles
}

// TraceSpan is one instruction of a traced schedule: the block (core)
// and pipe that ran it, its name, and its cycles [Start, End) counted
// from the start of the trace's first launch.
type TraceSpan struct {
	Core       int
	Pipe       Pipe
	Op         string
	Start, End int64
}

// Spans returns the instructions the trace kept, launch by launch, each
// launch's by block and then issue order. The slice is the caller's.
func (t *Trace) Spans() []TraceSpan {
	var out []TraceSpan
	for s := range t.All() {
		out = append(out, s)
	}
	return out
}

// All yields the instructions the trace kept, in the order of Spans,
// without copying them first (a large trace is not held twice). The
// trace must not be added to while it yields.
func (t *Trace) All() iter.Seq[TraceSpan] {
	return func(yield func(TraceSpan) bool) {
		t.mu.Lock()
		defer t.mu.Unlock()
		for _, s := range t.spans {
			if !yield(TraceSpan{Core: int(s.core), Pipe: s.p, Op: t.names[s.op], Start: s.start, End: s.end}) {
				return
			}
		}
	}
}

// Len is how many instructions the trace kept.
func (t *Trace) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.spans)
}

// Cycles is the length of the traced schedule: the modelled cycles of
// its launches, one after the other.
func (t *Trace) Cycles() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.offset
}

// Launches is the number of launches traced.
func (t *Trace) Launches() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.launches
}

// Dropped is the number of events (spans and flows) past the trace's
// limit, counted but not kept.
func (t *Trace) Dropped() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// Limit is the number of events the trace keeps at most.
func (t *Trace) Limit() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.limit
}

// traceEvent is one metadata event (a track's name) as written; the
// spans and flows are encoded by hand (WriteJSON).
type traceEvent struct {
	Name string  `json:"name"`
	Cat  string  `json:"cat,omitempty"`
	Ph   string  `json:"ph"`
	Ts   float64 `json:"ts"`
	Pid  int     `json:"pid"`
	Tid  int     `json:"tid"`
	Args any     `json:"args,omitempty"`
}

type nameArgs struct {
	Name string `json:"name"`
}

// WriteJSON writes the trace as a Chrome trace event JSON object: the
// track names (a process per core, a thread per pipe), the spans, then
// the flows. When events were dropped, "otherData" says how many and
// the limit. The events are encoded one at a time, so writing costs no
// more memory than the trace holds.
func (t *Trace) WriteJSON(w io.Writer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	bw := bufio.NewWriterSize(w, 64<<10)
	mhz := t.mhz
	if !(mhz > 0) {
		mhz = 1
	}
	us := func(cyc int64) float64 { return float64(cyc) / mhz }
	first := true
	enc := func(e traceEvent) error {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if !first {
			bw.WriteByte(',')
		}
		first = false
		bw.WriteByte('\n')
		_, err = bw.Write(b)
		return err
	}
	if err := func() error {
		bw.WriteString(`{"traceEvents":[`)
		for core := range t.cores {
			if err := enc(traceEvent{Name: "process_name", Ph: "M", Pid: core, Args: nameArgs{fmt.Sprintf("core %d", core)}}); err != nil {
				return err
			}
			for p := range PipeS + 1 { // the pipes and the scalar's track (its waits)
				if err := enc(traceEvent{Name: "thread_name", Ph: "M", Pid: core, Tid: int(p), Args: nameArgs{p.String()}}); err != nil {
					return err
				}
			}
		}
		// The spans and flows, most of a trace, are encoded by hand into
		// the bytes json.Marshal writes for them (names marshalled once
		// each, numbers as encoding/json formats them): reflection per
		// event made writing a large trace cost more than running it.
		names := make([][]byte, len(t.names))
		for i, n := range t.names {
			b, err := json.Marshal(n)
			if err != nil {
				return err
			}
			names[i] = b
		}
		var b []byte
		for _, s := range t.spans {
			b = append(b[:0], ",\n{\"name\":"...)
			if first {
				b = append(b[:0], "\n{\"name\":"...)
				first = false
			}
			b = append(b, names[s.op]...)
			b = append(b, `,"cat":"`...)
			b = append(b, s.p.String()...)
			b = append(b, `","ph":"X","ts":`...)
			b = appendJSONFloat(b, us(s.start))
			b = append(b, `,"dur":`...)
			b = appendJSONFloat(b, float64(s.end-s.start)/mhz)
			b = append(b, `,"pid":`...)
			b = strconv.AppendInt(b, int64(s.core), 10)
			b = append(b, `,"tid":`...)
			b = strconv.AppendInt(b, int64(s.p), 10)
			b = append(b, `,"args":{"start":`...)
			b = strconv.AppendInt(b, s.start, 10)
			b = append(b, `,"end":`...)
			b = strconv.AppendInt(b, s.end, 10)
			b = append(b, "}}"...)
			if _, err := bw.Write(b); err != nil {
				return err
			}
		}
		flow := func(ph string, at int64, core int32, p Pipe, id int) error {
			b = append(b[:0], ",\n{\"name\":\"event\",\"cat\":\"flow\",\"ph\":\""...)
			if first {
				b = append(b[:0], "\n{\"name\":\"event\",\"cat\":\"flow\",\"ph\":\""...)
				first = false
			}
			b = append(b, ph...)
			b = append(b, `","ts":`...)
			b = appendJSONFloat(b, us(at))
			b = append(b, `,"pid":`...)
			b = strconv.AppendInt(b, int64(core), 10)
			b = append(b, `,"tid":`...)
			b = strconv.AppendInt(b, int64(p), 10)
			b = append(b, `,"id":`...)
			b = strconv.AppendInt(b, int64(id), 10)
			if ph == "f" {
				b = append(b, `,"bp":"e"`...)
			}
			b = append(b, `,"args":{"cycle":`...)
			b = strconv.AppendInt(b, at, 10)
			b = append(b, "}}"...)
			_, err := bw.Write(b)
			return err
		}
		for i, f := range t.flows {
			if err := flow("s", f.from, f.core, f.src, i+1); err != nil {
				return err
			}
			if err := flow("f", f.to, f.core, f.dst, i+1); err != nil {
				return err
			}
		}
		bw.WriteString("\n],\"displayTimeUnit\":\"ns\"")
		if t.dropped > 0 {
			fmt.Fprintf(bw, `,"otherData":{"dropped_events":%s,"event_limit":%s,"note":"the trace keeps its first %s events (launch, block, then issue order); the schedule's cycles count every instruction"}`,
				strconv.FormatInt(t.dropped, 10), strconv.Itoa(t.limit), strconv.Itoa(t.limit))
		}
		bw.WriteString("}\n")
		return bw.Flush()
	}(); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// appendJSONFloat appends f as encoding/json writes a float64: the
// shortest decimal that reads back as f, in exponent form below 1e-6 or
// from 1e21 on, with a one-digit exponent written without its leading 0.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
