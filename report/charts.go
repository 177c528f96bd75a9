package report

import (
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/internal/chart"
	"github.com/npuverify/npuverify/verify"
)

// maxHeatmaps caps the error heatmaps drawn (one per failing case and 2-D
// output), so that a run where everything fails stays a readable page.
const maxHeatmaps = 6

// Plots is the section of charts: ulp histograms per op and dtype/mode,
// error heatmaps of failing cases with 2-D outputs, and modeled cycles
// against GM traffic with the roofline, per op. Only the HTML report draws
// them; Markdown points there, JSON leaves them out (the data is in
// "cases").
type Plots struct{ Cases []Case }

// Key implements Section.
func (*Plots) Key() string { return "plots" }

// JSON implements Section: nil, the plots are drawn from "cases".
func (*Plots) JSON() any { return nil }

// Markdown implements Section.
func (p *Plots) Markdown(w io.Writer) error {
	note := "No case fails, so there is no error heatmap."
	if n := len(p.heatmapCases()); n > 0 {
		note = fmt.Sprintf("%d failing output(s) have an error heatmap.", n)
	}
	_, err := fmt.Fprintf(w, "## Plots\n\nIn report.html: ulp histograms per op and dtype/mode, modeled cycles against GM traffic with the roofline per op. %s\n\n", note)
	return err
}

// Chart is one drawn plot with its caption, for the HTML report.
type Chart struct {
	ID, Caption string
	SVG         template.HTML
}

// charts draws every plot of the section, and the note shown in place of
// the heatmaps when no case fails.
func (p *Plots) charts() (hist, heat, cyc []Chart, heatNote string, err error) {
	for _, op := range opsOf(p.Cases) {
		if pl := ulpChart(p.Cases, op); pl != nil {
			s, err := svgOf(pl, 14*vg.Centimeter, 8*vg.Centimeter)
			if err != nil {
				return nil, nil, nil, "", err
			}
			hist = append(hist, Chart{"plot-ulp-" + anchor(op), "Error in ulps, " + op, s})
		}
		if pl := cyclesChart(p.Cases, op); pl != nil {
			s, err := svgOf(pl, 14*vg.Centimeter, 9*vg.Centimeter)
			if err != nil {
				return nil, nil, nil, "", err
			}
			cyc = append(cyc, Chart{"plot-cycles-" + anchor(op), "Modeled cycles and roofline, " + op, s})
		}
	}
	hc := p.heatmapCases()
	for i, h := range hc {
		if i == maxHeatmaps {
			heatNote = fmt.Sprintf("… and %d more failing outputs, not drawn.", len(hc)-maxHeatmaps)
			break
		}
		s, err := svgOf(heatmapChart(h.c, h.out), 10*vg.Centimeter, 9*vg.Centimeter)
		if err != nil {
			return nil, nil, nil, "", err
		}
		heat = append(heat, Chart{fmt.Sprintf("plot-heat-%d", i+1), "err/bound of the worst elements, " + h.c.ID + " " + h.out.Name, s})
	}
	if len(hc) == 0 {
		heatNote = "No case fails: no error heatmap to draw."
	}
	return hist, heat, cyc, heatNote, nil
}

type heatCase struct {
	c   *Case
	out *Output
}

// heatmapCases are the failed outputs with two dimensions and worst
// elements to place.
func (p *Plots) heatmapCases() []heatCase {
	var out []heatCase
	for i := range p.Cases {
		c := &p.Cases[i]
		if c.Verdict != harness.VerdictFail {
			continue
		}
		for j := range c.Outputs {
			o := &c.Outputs[j]
			failed := slices.ContainsFunc(o.Verdicts, func(v Verdict) bool { return !v.Pass })
			if failed && len(o.Shape) == 2 && o.Shape[0] > 0 && o.Shape[1] > 0 && len(o.Metrics.Worst) > 0 {
				out = append(out, heatCase{c, o})
			}
		}
	}
	return out
}

// ulpChart is a grouped bar chart per ulp bucket of the share of an op's
// output elements (summed over its judged cases), one bar per dtype/mode,
// on a log scale: nil when the op has no judged elements.
func ulpChart(cases []Case, op string) *chart.Chart {
	hist := map[string]map[string]int{}
	total := map[string]int{}
	var variants []string
	for i := range cases {
		c := &cases[i]
		if c.Op != op {
			continue
		}
		v := c.Variant()
		for _, o := range c.Outputs {
			for k, n := range o.Metrics.UlpHist {
				if hist[v] == nil {
					hist[v] = map[string]int{}
					variants = append(variants, v)
				}
				hist[v][k] += n
				total[v] += n
			}
		}
	}
	if len(variants) == 0 {
		return nil
	}
	slices.Sort(variants)
	lo := 1.0
	for _, v := range variants {
		for _, n := range hist[v] {
			if n > 0 {
				lo = math.Min(lo, float64(n)/float64(total[v]))
			}
		}
	}
	ch := &chart.Chart{
		Title: op + ": share of output elements by error in ulps",
		X:     chart.Axis{Label: "error (ulps of the output dtype)", Nominal: verify.UlpBuckets, Min: -0.5, Max: float64(len(verify.UlpBuckets)) - 0.5},
		Y:     logAxis("share of elements (log scale)", lo, 1, 1), // a decade of room for the legend
	}
	width := vg.Points(36) / vg.Length(len(variants))
	for j, v := range variants {
		var vals []float64
		for _, k := range verify.UlpBuckets {
			x := math.NaN()
			if n := hist[v][k]; n > 0 {
				x = float64(n) / float64(total[v])
			}
			vals = append(vals, x)
		}
		ch.Bars(v, vals, groupOffset(j, len(variants), width), width, palette[j%len(palette)])
	}
	return ch
}

// cyclesChart plots, per case of op with a cost and GM traffic, modeled
// cycles (dots, one colour per dtype/mode) and the roofline bound (a
// dashed line through the bounds in traffic order) against GM bytes, on
// log-log axes: nil when no case qualifies.
func cyclesChart(cases []Case, op string) *chart.Chart {
	type pt struct{ x, y, bound float64 }
	byVariant := map[string][]pt{}
	var variants []string
	var all []pt
	for i := range cases {
		c := &cases[i]
		if c.Op != op || c.Cost == nil || c.Cost.Cycles <= 0 {
			continue
		}
		x := float64(c.Cost.GMBytesIn + c.Cost.GMBytesOut)
		r, ok := roofline(c)
		if x <= 0 || !ok {
			continue
		}
		v := c.Variant()
		if byVariant[v] == nil {
			variants = append(variants, v)
		}
		q := pt{x, float64(c.Cost.Cycles), r.Bound()}
		byVariant[v] = append(byVariant[v], q)
		all = append(all, q)
	}
	if len(all) == 0 {
		return nil
	}
	slices.Sort(variants)
	slices.SortFunc(all, func(a, b pt) int { return cmp.Or(cmp.Compare(a.x, b.x), cmp.Compare(a.bound, b.bound)) })
	line := make([]chart.Point, len(all))
	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i, q := range all {
		line[i] = chart.Point{X: q.x, Y: q.bound}
		xlo, xhi = math.Min(xlo, q.x), math.Max(xhi, q.x)
		ylo, yhi = math.Min(ylo, math.Min(q.y, q.bound)), math.Max(yhi, math.Max(q.y, q.bound))
	}
	ch := &chart.Chart{
		Title:      op + ": modeled cycles against GM traffic",
		X:          logAxis("GM bytes in + out (log scale)", xlo, xhi, 0),
		Y:          logAxis("cycles (log scale)", ylo, yhi, 1),
		LegendLeft: true,
	}
	ch.Series("roofline bound", line, chart.Style{Color: color.Black, Width: vg.Points(1), Dashes: dashed})
	for j, v := range variants {
		xy := make([]chart.Point, len(byVariant[v]))
		for i, q := range byVariant[v] {
			xy[i] = chart.Point{X: q.x, Y: q.y}
		}
		ch.Series(v, xy, chart.Style{Color: palette[j%len(palette)], Glyph: draw.CircleGlyph{}, Radius: vg.Points(2.5)})
	}
	return ch
}

// heatmapChart places the worst elements of a failed 2-D output on its
// rows × columns grid (binned to at most 32 × 32 cells), coloured by
// err/bound: blue within bound, red beyond.
func heatmapChart(c *Case, o *Output) *chart.Chart {
	rows, cols := o.Shape[0], o.Shape[1]
	br, bc := (rows+31)/32, (cols+31)/32
	cells := map[[2]int]float64{}
	for _, e := range o.Metrics.Worst {
		r := float64(math.Inf(1))
		if d := math.Abs(e.Got - e.Ref); e.Bound > 0 {
			r = d / e.Bound
		} else if d == 0 {
			r = 0
		}
		k := [2]int{e.Index / cols / br, e.Index % cols / bc}
		if v, ok := cells[k]; !ok || r > v || math.IsNaN(r) {
			cells[k] = r
		}
	}
	ch := &chart.Chart{
		Title: fmt.Sprintf("%s %s %v: err/bound", c.ID, o.Name, o.Shape),
		X:     chart.Axis{Label: fmt.Sprintf("column (bins of %d)", bc), Min: 0, Max: float64((cols + bc - 1) / bc)},
		// Row 0 at the top, as a matrix is read.
		Y: chart.Axis{Label: fmt.Sprintf("row (bins of %d)", br), Scale: chart.Inverted, Min: 0, Max: float64((rows + br - 1) / br)},
	}
	for _, k := range slices.SortedFunc(maps.Keys(cells), func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) }) {
		ch.Rect(float64(k[1]), float64(k[0]), float64(k[1]+1), float64(k[0]+1), heatColor(cells[k]))
	}
	return ch
}

// heatColor is blue up to err/bound = 1, then red, darker with the ratio.
func heatColor(v float64) color.Color {
	if math.IsNaN(v) || v > 1 {
		s := math.Min(1, math.Log10(math.Max(1, v))/2) // 1 → light, ≥100 → dark
		if math.IsNaN(v) {
			s = 1
		}
		return color.RGBA{R: 0xff - uint8(80*s), G: uint8(140 * (1 - s)), B: uint8(140 * (1 - s)), A: 0xff}
	}
	return color.RGBA{R: uint8(200 * (1 - v)), G: uint8(220 - float64(90*v)), B: 0xff, A: 0xff}
}
