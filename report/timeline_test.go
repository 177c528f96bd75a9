package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/npuverify/npuverify/backend/emulator"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/ops"
)

// tracedRun runs case c on the emulator under a trace and returns it.
func tracedRun(t *testing.T, c ops.Case) *npu.Trace {
	t.Helper()
	tr := npu.NewTrace()
	if _, err := harness.Run(npu.WithTrace(context.Background(), tr), emulator.New(npu.Ascend910B()), c, harness.Options{}); err != nil {
		t.Fatalf("%s %s: %v", c.Op, c.Name, err)
	}
	return tr
}

// The fixture's traces: a vector_add over many cores (more than the
// timeline draws) and a gemm (the cube's pipes), traced once per test
// binary.
var (
	fixtureOnce   sync.Once
	fixtureTraces map[string]*npu.Trace
)

func timelineTraces(t *testing.T) map[string]*npu.Trace {
	t.Helper()
	fixtureOnce.Do(func() {
		fixtureTraces = map[string]*npu.Trace{
			"vector_add/fp16_n300000": tracedRun(t, ops.Case{Name: "fp16_n300000", Op: "vector_add", Params: ops.Params{"dtype": "fp16"}, Dims: map[string]int{"n": 300000}, Dist: "uniform", Seed: 7}),
			"gemm/fp16_fp32acc_96x64x80": tracedRun(t, ops.Case{Name: "fp16_fp32acc_96x64x80", Op: "gemm", Params: ops.Params{"mode": "fp16_fp32acc"},
				Dims: map[string]int{"m": 96, "k": 64, "n": 80}, Dist: "uniform", Seed: 7}),
		}
	})
	return fixtureTraces
}

// timelineFixture is a Timelines section drawn from the fixture's traces.
func timelineFixture(t *testing.T) *Timelines {
	t.Helper()
	sec := &Timelines{Criterion: TimelineCriterion}
	for _, id := range []string{"gemm/fp16_fp32acc_96x64x80", "vector_add/fp16_n300000"} {
		op, _, _ := strings.Cut(id, "/")
		sec.Timelines = append(sec.Timelines, NewTimeline(op, id, timelineTraces(t)[id]))
	}
	sec.Timelines = append(sec.Timelines, Timeline{Op: "<b>op</b>", Case: "<b>op</b>/x", Error: "not traced: <i>why</i>"})
	return sec
}

// svgTrack is one drawn row as the SVG states it.
type svgTrack struct {
	core                      int
	pipe                      string
	spans                     int
	busy, first, last         int64
	bars                      [][2]int64 // data-start, data-end of its bars
	minX, maxX, plotX0, plotW float64
}

// parseTimelineSVG parses an SVG timeline as XML (it must be
// well-formed) and returns its tracks.
func parseTimelineSVG(t *testing.T, svg string) []svgTrack {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	var tracks []svgTrack
	var cur *svgTrack
	depth := 0
	attr := func(se xml.StartElement, name string) string {
		for _, a := range se.Attr {
			if a.Name.Local == name {
				return a.Value
			}
		}
		return ""
	}
	num := func(s string) int64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("SVG attribute %q is not an integer", s)
		}
		return v
	}
	flt := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("SVG attribute %q is not a number", s)
		}
		return v
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case e.Name.Local == "g" && attr(e, "class") == "track":
				tracks = append(tracks, svgTrack{core: int(num(attr(e, "data-core"))), pipe: attr(e, "data-pipe"), spans: int(num(attr(e, "data-spans"))),
					busy: num(attr(e, "data-busy")), first: num(attr(e, "data-first")), last: num(attr(e, "data-last")), minX: 1e9})
				cur = &tracks[len(tracks)-1]
			case e.Name.Local == "rect" && cur != nil && attr(e, "class") == "span":
				cur.bars = append(cur.bars, [2]int64{num(attr(e, "data-start")), num(attr(e, "data-end"))})
				x, w := flt(attr(e, "x")), flt(attr(e, "width"))
				cur.minX, cur.maxX = min(cur.minX, x), max(cur.maxX, x+w)
			case e.Name.Local == "rect" && cur != nil:
				cur.plotX0, cur.plotW = flt(attr(e, "x")), flt(attr(e, "width"))
			}
		case xml.EndElement:
			depth--
			if e.Name.Local == "g" {
				cur = nil
			}
		}
	}
	if depth != 0 {
		t.Fatalf("SVG: %d elements left open", depth)
	}
	return tracks
}

// TestTimelineMatchesTrace: the SVG timeline of a traced run is
// well-formed XML whose rows are the first three cores and the slowest
// core, each × every pipe the run used, and whose every row states the
// instruction count, busy cycles and extent the trace has for that core
// and pipe; its bars cover exactly the row's instructions (every bar
// starts at an instruction's start and ends at one's end, every
// instruction lies in a bar) and lie inside the plot, drawn to scale.
// Drawing the same trace again gives the same bytes.
func TestTimelineMatchesTrace(t *testing.T) {
	for id, tr := range timelineTraces(t) {
		op, _, _ := strings.Cut(id, "/")
		tl := NewTimeline(op, id, tr)
		type key struct {
			core int
			pipe string
		}
		spans := map[key][]npu.TraceSpan{}
		ends := map[int]int64{}
		pipes := map[string]bool{}
		for _, s := range tr.Spans() {
			k := key{s.Core, s.Pipe.String()}
			spans[k] = append(spans[k], s)
			ends[s.Core] = max(ends[s.Core], s.End)
			pipes[k.pipe] = true
		}
		slowest := 0
		for c, e := range ends {
			if e > ends[slowest] || (e == ends[slowest] && c < slowest) {
				slowest = c
			}
		}
		if len(ends) <= 4 {
			t.Fatalf("%s: ran on %d cores; the fixture must use more than the timeline draws", id, len(ends))
		}
		if tl.Spans != tr.Len() || tl.Cycles != tr.Cycles() || tl.Cores != len(ends) || tl.Slowest != slowest || tl.HiddenCores != len(ends)-4+boolInt(slowest < 3) {
			t.Errorf("%s: timeline of %d spans, %d cycles, %d cores, slowest %d, %d hidden; trace has %d, %d, %d cores, slowest %d",
				id, tl.Spans, tl.Cycles, tl.Cores, tl.Slowest, tl.HiddenCores, tr.Len(), tr.Cycles(), len(ends), slowest)
		}
		svg := tl.SVG()
		if again := NewTimeline(op, id, tr); again.SVG() != svg {
			t.Errorf("%s: the same trace draws two SVGs", id)
		}
		tracks := parseTimelineSVG(t, svg)
		wantCores := []int{0, 1, 2}
		if slowest >= 3 {
			wantCores = append(wantCores, slowest)
		}
		if len(tracks) != len(wantCores)*len(pipes) {
			t.Fatalf("%s: %d rows drawn, want %d cores × %d pipes", id, len(tracks), len(wantCores), len(pipes))
		}
		scale := float64(timelinePlotW) / float64(tl.Cycles)
		for i, tk := range tracks {
			if want := wantCores[i/len(pipes)]; tk.core != want || !pipes[tk.pipe] {
				t.Errorf("%s: row %d is core %d pipe %s, want core %d and a pipe the run used", id, i, tk.core, tk.pipe, want)
			}
			ss := spans[key{tk.core, tk.pipe}]
			var busy, first, last int64
			for j, s := range ss {
				busy += s.End - s.Start
				if j == 0 {
					first = s.Start
				}
				last = max(last, s.End)
			}
			if tk.spans != len(ss) || tk.busy != busy || tk.first != first || tk.last != last {
				t.Errorf("%s: core %d %s: drawn %d spans, busy %d, [%d, %d); trace %d, %d, [%d, %d)", id, tk.core, tk.pipe, tk.spans, tk.busy, tk.first, tk.last, len(ss), busy, first, last)
			}
			if (len(ss) > 0) != (len(tk.bars) > 0) || len(tk.bars) > len(ss) {
				t.Errorf("%s: core %d %s: %d bars for %d instructions", id, tk.core, tk.pipe, len(tk.bars), len(ss))
				continue
			}
			starts, endsAt := map[int64]bool{}, map[int64]bool{}
			for _, s := range ss {
				starts[s.Start], endsAt[s.End] = true, true
				in := false
				for _, b := range tk.bars {
					in = in || (b[0] <= s.Start && s.End <= b[1])
				}
				if !in {
					t.Errorf("%s: core %d %s: instruction %s [%d, %d) lies in no bar", id, tk.core, tk.pipe, s.Op, s.Start, s.End)
				}
			}
			for _, b := range tk.bars {
				if !starts[b[0]] || !endsAt[b[1]] {
					t.Errorf("%s: core %d %s: bar [%d, %d) does not start and end at instructions", id, tk.core, tk.pipe, b[0], b[1])
				}
			}
			if len(tk.bars) > 0 {
				x0 := tk.plotX0
				if tk.minX < x0-0.05 || tk.maxX > x0+tk.plotW+0.6 || abs(tk.minX-(x0+float64(first)*scale)) > 0.06 || abs(tk.maxX-(x0+float64(last)*scale)) > 0.6 {
					t.Errorf("%s: core %d %s: bars drawn over x [%g, %g], the instructions span [%g, %g] in a plot of [%g, %g]",
						id, tk.core, tk.pipe, tk.minX, tk.maxX, x0+float64(first)*scale, x0+float64(last)*scale, x0, x0+tk.plotW)
				}
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestTimelineCases: per op, the case of the most modelled cycles, the
// first by ID on a tie; cases without a cost or with 0 cycles are never
// picked, and an op with only those has no timeline.
func TestTimelineCases(t *testing.T) {
	c := func(id string, cycles int64) Case {
		op, _, _ := strings.Cut(id, "/")
		cs := Case{ID: id, Op: op}
		if cycles >= 0 {
			cs.Cost = &Cost{Cycles: cycles}
		}
		return cs
	}
	got := TimelineCases([]Case{c("b/y", 10), c("a/x", 5), c("a/z", 7), c("a/w", 7), c("c/none", -1), c("c/zero", 0), c("b/big", 11)})
	want := []string{"a/w", "b/big"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("TimelineCases = %q, want %q", got, want)
	}
}

// TestTimelinesRendered: the section's HTML has a figure per op holding
// the op's SVG (and the reason in place of one it could not trace, with
// its markup escaped); its Markdown a row per op; its JSON the rows.
func TestTimelinesRendered(t *testing.T) {
	sec := timelineFixture(t)
	var h, md bytes.Buffer
	if err := sec.HTML(&h); err != nil {
		t.Fatal(err)
	}
	if err := sec.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	page := h.String()
	for _, tl := range sec.Timelines[:2] {
		fig := `<figure id="timeline-` + anchor(tl.Op) + `" class="timeline">`
		i := strings.Index(page, fig)
		if i < 0 || !strings.Contains(page[i:], tl.SVG()) {
			t.Errorf("HTML lacks %s holding the SVG of %s", fig, tl.Case)
		}
		if !strings.Contains(md.String(), "| "+tl.Op+" | "+tl.Case+" | "+strconv.FormatInt(tl.Cycles, 10)+" |") {
			t.Errorf("Markdown lacks the row of %s:\n%s", tl.Case, md.String())
		}
	}
	if strings.Contains(page, "<b>op</b>") || strings.Contains(page, "<i>why</i>") || !strings.Contains(page, "not traced: &lt;i&gt;why&lt;/i&gt;") {
		t.Errorf("HTML does not escape the op and error of an untraced timeline:\n%s", page[strings.LastIndex(page, "<figure"):])
	}
	if strings.Count(page, "<svg") != 2 {
		t.Errorf("HTML holds %d SVGs, want 2", strings.Count(page, "<svg"))
	}
}
