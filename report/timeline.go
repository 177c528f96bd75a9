package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/npuverify/npuverify/internal/chart"
	"github.com/npuverify/npuverify/npu"
)

// TimelineCriterion says which of an op's cases the Timelines section
// draws. The most modelled cycles picks the op's longest schedule, where
// pipes idling behind one another cost the most; a lowest-utilisation
// criterion would pick the op's empty and one-element cases, whose
// schedules (a copy in, a copy out) show nothing.
const TimelineCriterion = "the case with the most modelled cycles (ties: the first by ID)"

// Timeline geometry, in SVG user units (px): rows of timelineRowH with
// timelineRowGap between them and timelineCoreGap more between cores.
const (
	timelineWidth   = 960
	timelineLabelW  = 118 // the row labels, left of the plot
	timelinePlotW   = timelineWidth - timelineLabelW - 16
	timelineRowH    = 12
	timelineRowGap  = 3
	timelineCoreGap = 7
	// timelineFirstCores is how many of the first cores are drawn; the
	// slowest core (the last to finish) is drawn too when it is not one
	// of them, so at most timelineFirstCores+1 cores × 6 pipes = 24 rows.
	timelineFirstCores = 3
)

// pipeColours colour a pipe's spans (and its legend entry): the DMA pipes
// in blues and oranges, the cube red, the vector unit green.
var pipeColours = map[string]string{
	"MTE2": "#1f77b4", "MTE1": "#17becf", "M": "#d62728", "V": "#2ca02c", "MTE3": "#ff7f0e", "FIX": "#9467bd",
}

// TimelineCases returns, for each op of cases (sorted by op), the ID of
// the case whose timeline the report draws (TimelineCriterion); an op
// none of whose cases has a modelled cost of more than 0 cycles has none.
// Both the report of a run and one merged from shards choose from the
// same cases, so they draw the same timelines.
func TimelineCases(cases []Case) []string {
	best := map[string]*Case{}
	for i := range cases {
		c := &cases[i]
		if c.Cost == nil || c.Cost.Cycles <= 0 {
			continue
		}
		if b := best[c.Op]; b == nil || c.Cost.Cycles > b.Cost.Cycles || (c.Cost.Cycles == b.Cost.Cycles && c.ID < b.ID) {
			best[c.Op] = c
		}
	}
	var ids []string
	for _, op := range slices.Sorted(maps.Keys(best)) {
		ids = append(ids, best[op].ID)
	}
	return ids
}

// Timeline is one op's timeline: the schedule of its case chosen by
// TimelineCriterion, as the emulator traced it (npu.Trace), reduced to
// what is drawn: rows of core × pipe, each row's spans merged where the
// gap between them is under a pixel.
type Timeline struct {
	Op   string `json:"op"`
	Case string `json:"case"`
	// Cycles is the schedule's length, its launches one after another.
	Cycles   int64 `json:"cycles"`
	Launches int   `json:"launches"`
	// Cores is how many cores (blocks) ran instructions; Spans how many
	// instructions the trace kept, Dropped how many past its limit.
	Cores   int   `json:"cores"`
	Spans   int   `json:"spans"`
	Dropped int64 `json:"dropped,omitempty"`
	// Slowest is the core whose last instruction ends last.
	Slowest int           `json:"slowest_core"`
	Rows    []TimelineRow `json:"rows"`
	// HiddenCores is how many cores that ran instructions are not drawn.
	HiddenCores int `json:"hidden_cores"`
	// Error is why there is no schedule to draw ("" when there is).
	Error string `json:"error,omitempty"`
}

// TimelineRow is one drawn track: a core's pipe, with the count, busy
// cycles and extent of its instructions in the trace.
type TimelineRow struct {
	Core  int    `json:"core"`
	Pipe  string `json:"pipe"`
	Spans int    `json:"spans"`
	Busy  int64  `json:"busy_cycles"`
	// First and Last are the start of the row's first instruction and the
	// end of its last (0 and 0 when the pipe ran nothing on the core).
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	// bars are the drawn intervals [start, end) in cycles: the spans,
	// merged where less than a pixel apart.
	bars [][2]int64
}

// NewTimeline reduces trace, the schedule of case id of op, to its
// timeline. It keeps no reference to trace, so a caller tracing many
// cases holds one trace at a time.
func NewTimeline(op, id string, trace *npu.Trace) Timeline {
	tl := Timeline{Op: op, Case: id, Cycles: trace.Cycles(), Launches: trace.Launches(), Dropped: trace.Dropped()}
	// First pass: each core's end, and the pipes that ran anything.
	coreEnd := map[int]int64{}
	var pipes [8]bool
	for s := range trace.All() {
		tl.Spans++
		if int(s.Pipe) < len(pipes) {
			pipes[s.Pipe] = true
		}
		if e, ok := coreEnd[s.Core]; !ok || s.End > e {
			coreEnd[s.Core] = s.End
		}
		tl.Cycles = max(tl.Cycles, s.End)
	}
	cores := slices.Sorted(maps.Keys(coreEnd))
	tl.Cores = len(cores)
	if len(cores) == 0 {
		return tl
	}
	tl.Slowest = cores[0]
	for _, c := range cores {
		if coreEnd[c] > coreEnd[tl.Slowest] {
			tl.Slowest = c
		}
	}
	shown := cores[:min(timelineFirstCores, len(cores))]
	if !slices.Contains(shown, tl.Slowest) {
		shown = append(slices.Clip(shown), tl.Slowest)
	}
	tl.HiddenCores = len(cores) - len(shown)
	// Second pass: the spans of the cores drawn, by row.
	rowOf := map[[2]int]int{}
	var spans [][][2]int64
	for _, c := range shown {
		for p, used := range pipes {
			if used {
				rowOf[[2]int{c, p}] = len(tl.Rows)
				tl.Rows = append(tl.Rows, TimelineRow{Core: c, Pipe: npu.Pipe(p).String()})
				spans = append(spans, nil)
			}
		}
	}
	for s := range trace.All() {
		if i, ok := rowOf[[2]int{s.Core, int(s.Pipe)}]; ok {
			spans[i] = append(spans[i], [2]int64{s.Start, s.End})
		}
	}
	// A gap of less than a pixel's cycles is not drawn.
	px := max(tl.Cycles/timelinePlotW, 1)
	for i := range tl.Rows {
		row, ss := &tl.Rows[i], spans[i]
		// A pipe runs in order, so its spans come sorted; sort anyway
		// rather than trust it.
		if !slices.IsSortedFunc(ss, func(a, b [2]int64) int { return cmpInt64(a[0], b[0]) }) {
			slices.SortStableFunc(ss, func(a, b [2]int64) int { return cmpInt64(a[0], b[0]) })
		}
		row.Spans = len(ss)
		for j, s := range ss {
			row.Busy += s[1] - s[0]
			if j == 0 {
				row.First = s[0]
			}
			row.Last = max(row.Last, s[1])
			if n := len(row.bars); n > 0 && s[0]-row.bars[n-1][1] < px {
				row.bars[n-1][1] = max(row.bars[n-1][1], s[1])
				continue
			}
			row.bars = append(row.bars, s)
		}
	}
	return tl
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Timelines is the report section drawing, per op, the schedule of one
// case (TimelineCriterion) as the emulator ran it: a row per core × pipe,
// a bar per instruction, coloured by pipe, on an axis of cycles. The CLI
// fills it by tracing those cases again (npu.Trace), so this package,
// which only renders it, links no kernel.
type Timelines struct {
	Criterion string     `json:"criterion"`
	Timelines []Timeline `json:"timelines"`
	// Note says why there are no timelines, or what is missing.
	Note string `json:"note,omitempty"`
}

// Key implements Section.
func (*Timelines) Key() string { return "timelines" }

// JSON implements Section.
func (t *Timelines) JSON() any { return t }

// intro is the section's opening paragraph; code wraps the command
// (backquotes in Markdown, nothing in HTML, which escapes them anyway).
func (t *Timelines) intro(code func(string) string) string {
	return "Per op, the emulator's schedule of " + t.Criterion + ": a row per core and pipe (the first " +
		strconv.Itoa(timelineFirstCores) + " cores, and the slowest, marked *, the last to finish), a bar per instruction " +
		"coloured by pipe, time in cycles from the first launch; a pipe idle while another works is " +
		"overlap the kernel leaves unused. The whole schedule, every core and the events between pipes, is " +
		code("npuverify check --run '^CASE$' --trace DIR") + ", opened in ui.perfetto.dev (docs/device-model.md)."
}

// busiest is the slowest core's pipes with their busy share, busiest
// first: "MTE2 45 %, V 12 %".
func (tl *Timeline) busiest() string {
	type pb struct {
		pipe string
		busy int64
	}
	var ps []pb
	for _, r := range tl.Rows {
		if r.Core == tl.Slowest && r.Busy > 0 {
			ps = append(ps, pb{r.Pipe, r.Busy})
		}
	}
	slices.SortStableFunc(ps, func(a, b pb) int { return cmpInt64(b.busy, a.busy) })
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s %s %%", p.pipe, strconv.FormatFloat(100*float64(p.busy)/float64(max(tl.Cycles, 1)), 'f', 0, 64)))
	}
	return strings.Join(parts, ", ")
}

// Markdown implements Section: a table, one op a row (Markdown draws no
// SVG; report.html does).
func (t *Timelines) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "## Timelines\n\n%s\n\n", t.intro(func(s string) string { return "`" + s + "`" }))
	if t.Note != "" {
		fmt.Fprintf(ew, "%s\n\n", t.Note)
	}
	if len(t.Timelines) > 0 {
		fmt.Fprintln(ew, "| op | case | cycles | launches | cores | instructions | busy on the slowest core |")
		fmt.Fprintln(ew, "|---|---|---:|---:|---:|---:|---|")
		for i := range t.Timelines {
			tl := &t.Timelines[i]
			if tl.Error != "" {
				fmt.Fprintf(ew, "| %s | %s | — | — | — | — | %s |\n", cell(tl.Op), cell(tl.Case), cell(tl.Error))
				continue
			}
			fmt.Fprintf(ew, "| %s | %s | %d | %d | %d | %d | core %d: %s |\n", cell(tl.Op), cell(tl.Case), tl.Cycles, tl.Launches, tl.Cores, tl.Spans, tl.Slowest, tl.busiest())
		}
		fmt.Fprintln(ew)
	}
	return ew.err
}

// HTML implements HTMLSection: the intro, then a figure per op.
func (t *Timelines) HTML(w io.Writer) error {
	type fig struct {
		ID, Caption, Error string
		SVG                template.HTML
	}
	v := struct {
		Intro, Note string
		Figures     []fig
	}{Intro: t.intro(func(s string) string { return s }), Note: t.Note}
	for i := range t.Timelines {
		tl := &t.Timelines[i]
		f := fig{ID: "timeline-" + anchor(tl.Op), Caption: tl.caption(), Error: tl.Error}
		if tl.Error == "" {
			f.SVG = template.HTML(tl.SVG()) // every text in it escaped by SVG
		}
		v.Figures = append(v.Figures, f)
	}
	return timelineTemplate().Execute(w, v)
}

// caption is a figure's caption: op, case, length, and what is not drawn.
func (tl *Timeline) caption() string {
	s := fmt.Sprintf("%s: %s, %d cycles, %d launch(es), %d instructions on %d cores", tl.Op, tl.Case, tl.Cycles, tl.Launches, tl.Spans, tl.Cores)
	if tl.HiddenCores > 0 {
		s += fmt.Sprintf("; %d cores not drawn", tl.HiddenCores)
	}
	if tl.Dropped > 0 {
		s += fmt.Sprintf("; %d events past the trace's limit not drawn", tl.Dropped)
	}
	return s
}

var timelineTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("timelines").Parse(`<h2>Timelines</h2>
<p>{{.Intro}}</p>
{{- if .Note}}
<p class="note">{{.Note}}</p>
{{- end}}
{{- range .Figures}}
{{- if .Error}}
<p class="note" id="{{.ID}}">{{.Caption}}: {{.Error}}</p>
{{- else}}
<figure id="{{.ID}}" class="timeline">
{{.SVG}}
<figcaption>{{.Caption}}</figcaption>
</figure>
{{- end}}
{{- end}}
`))
})

// cycleLabel labels tick v of an axis up to top cycles: in millions
// ("2.5M") when top is 10^7 or more, whose labels would be eight digits
// wide, else in cycles.
func cycleLabel(v float64, top int64) string {
	if top >= 10_000_000 {
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// f1 formats an SVG coordinate with one decimal (deterministic, short).
func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// SVG draws the timeline: the rows (a grey track, the bars coloured by
// pipe, a label "core C PIPE"; each row a <g class="track"> whose data-
// attributes give its core, pipe, instruction count, busy cycles and
// extent, and whose <title> says so to a reader hovering it), the axis
// of cycles with its ticks, and the legend of the pipes drawn. Same
// timeline, same bytes.
func (tl *Timeline) SVG() string {
	var b strings.Builder
	scale := float64(timelinePlotW) / float64(max(tl.Cycles, 1))
	x0 := float64(timelineLabelW)
	y := 6.0
	type rowPos struct {
		row *TimelineRow
		y   float64
	}
	var pos []rowPos
	for i := range tl.Rows {
		r := &tl.Rows[i]
		if i > 0 && r.Core != tl.Rows[i-1].Core {
			y += timelineCoreGap
		}
		pos = append(pos, rowPos{r, y})
		y += timelineRowH + timelineRowGap
	}
	axisY := y + 2
	legendY := axisY + 34
	height := legendY + 14
	var pipes []string
	for _, r := range tl.Rows {
		if !slices.Contains(pipes, r.Pipe) {
			pipes = append(pipes, r.Pipe)
		}
	}
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="%d" height="%s" viewBox="0 0 %d %s" role="img" aria-label="%s" font-family="system-ui, sans-serif" font-size="10">`,
		timelineWidth, f1(height), timelineWidth, f1(height), html.EscapeString("timeline of "+tl.Case))
	fmt.Fprintf(&b, "\n<title>%s</title>", html.EscapeString(tl.caption()))
	for _, p := range pos {
		r := p.row
		label := fmt.Sprintf("core %d %s", r.Core, r.Pipe)
		if r.Core == tl.Slowest {
			label = fmt.Sprintf("core %d* %s", r.Core, r.Pipe)
		}
		share := 100 * float64(r.Busy) / float64(max(tl.Cycles, 1))
		fmt.Fprintf(&b, "\n"+`<g class="track" data-core="%d" data-pipe="%s" data-spans="%d" data-busy="%d" data-first="%d" data-last="%d">`,
			r.Core, html.EscapeString(r.Pipe), r.Spans, r.Busy, r.First, r.Last)
		fmt.Fprintf(&b, "<title>core %d, pipe %s: %d instructions, busy %d of %d cycles (%s %%), cycles %d to %d</title>",
			r.Core, html.EscapeString(r.Pipe), r.Spans, r.Busy, tl.Cycles, strconv.FormatFloat(share, 'f', 1, 64), r.First, r.Last)
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, f1(x0-6), f1(p.y+timelineRowH-2), html.EscapeString(label))
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%d" height="%d" fill="#f0f0f0"/>`, f1(x0), f1(p.y), timelinePlotW, timelineRowH)
		col := pipeColours[r.Pipe]
		if col == "" {
			col = "#555"
		}
		for _, bar := range r.bars {
			// float64(...) keeps each product rounded before the sum: a
			// fused multiply-add on some machines would move a bar's last
			// digit, and the page must be the same bytes everywhere.
			bx, bw := float64(float64(bar[0])*scale), float64(float64(bar[1]-bar[0])*scale)
			fmt.Fprintf(&b, `<rect class="span" x="%s" y="%s" width="%s" height="%d" fill="%s" data-start="%d" data-end="%d"/>`,
				f1(x0+bx), f1(p.y), f1(max(bw, 0.5)), timelineRowH, col, bar[0], bar[1])
		}
		b.WriteString("</g>")
	}
	// The axis: a line, the nice ticks of [0, cycles] with labels, and
	// the unit.
	fmt.Fprintf(&b, "\n"+`<g class="axis"><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444"/>`, f1(x0), f1(axisY), f1(x0+timelinePlotW), f1(axisY))
	for _, t := range chart.NiceTicks(0, float64(max(tl.Cycles, 1))) {
		tx := x0 + float64(t.Value*scale) // rounded before the sum, as the bars' x
		if t.Label == "" {
			fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444"/>`, f1(tx), f1(axisY), f1(tx), f1(axisY+3))
			continue
		}
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#444"/><text x="%s" y="%s" text-anchor="middle">%s</text>`,
			f1(tx), f1(axisY), f1(tx), f1(axisY+5), f1(tx), f1(axisY+15), html.EscapeString(cycleLabel(t.Value, tl.Cycles)))
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">cycles</text></g>`, f1(x0+timelinePlotW), f1(axisY+27))
	// The legend: a swatch and the name of each pipe drawn; * marks the
	// slowest core.
	b.WriteString("\n" + `<g class="legend">`)
	lx := x0
	for _, p := range pipes {
		col := pipeColours[p]
		if col == "" {
			col = "#555"
		}
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="10" height="10" fill="%s"/><text x="%s" y="%s">%s</text>`, f1(lx), f1(legendY), col, f1(lx+14), f1(legendY+9), html.EscapeString(p))
		lx += 24 + float64(7*len(p))
	}
	fmt.Fprintf(&b, `<text x="%s" y="%s">* the slowest core (the last to finish)</text></g>`, f1(lx+10), f1(legendY+9))
	b.WriteString("\n</svg>")
	return b.String()
}
