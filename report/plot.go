package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/harness"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plots are drawn with gonum.org/v1/plot into SVG (vg/vgsvg) and inlined in
// the HTML report. Text metrics come from the Liberation fonts compiled into
// gonum/plot, so nothing is loaded at run time; the fonts are referenced by
// name in the SVG, not embedded (a viewer without them substitutes its own).
// vgsvg escapes text (case IDs, dist and mode names) with xml.Escape, which
// is what makes the SVG safe to insert into the page as template.HTML.

var (
	colorPass = color.RGBA{R: 0x46, G: 0x82, B: 0xb4, A: 0xff} // steel blue
	colorFail = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // red
	palette   = []color.Color{
		color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
		color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
		color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
		color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
		color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
	}
)

// svgOf draws p on a w×h canvas and returns the <svg> element, without the
// XML prolog, ready to inline in HTML.
func svgOf(p *plot.Plot, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("report: plot %q: %w", p.Title.Text, err)
	}
	s := b.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("report: plot %q: no <svg> element", p.Title.Text)
	}
	return template.HTML(s[i:]), nil // vgsvg escapes all text
}

// tightnessPlot is a dot chart of bound tightness per case, sorted by
// tightness (largest on top), with a line at 1.0; cases without a result
// (errors) are left out. It returns "" when no case has a tightness.
func tightnessPlot(cases []harness.Outcome) (template.HTML, error) {
	p, w, h, err := tightnessChart(cases)
	if p == nil || err != nil {
		return "", err
	}
	return svgOf(p, w, h)
}

func tightnessChart(cases []harness.Outcome) (p *plot.Plot, w, h vg.Length, err error) {
	type point struct {
		id   string
		t    float64
		pass bool
	}
	var pts []point
	maxT := 0.0
	for i := range cases {
		c := &cases[i]
		t := c.Tightness()
		if math.IsNaN(t) {
			continue
		}
		pts = append(pts, point{c.ID, t, c.Verdict() == harness.VerdictPass})
		if !math.IsInf(t, 1) {
			maxT = math.Max(maxT, t)
		}
	}
	if len(pts) == 0 {
		return nil, 0, 0, nil
	}
	// Ascending from the bottom; among equals, IDs read alphabetically
	// from the top.
	slices.SortStableFunc(pts, func(a, b point) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	// Beyond 2 the chart says only "far out of bound": such cases sit at the
	// right end with their value in the label, so that one wild case does
	// not squash the rest against 0.
	xmax := math.Min(math.Max(1.1, maxT*1.05), 2)
	d := &dots{}
	var ticks []plot.Tick
	for i, pt := range pts {
		col := colorPass
		if !pt.pass {
			col = colorFail
		}
		d.vals = append(d.vals, pt.t)
		d.colors = append(d.colors, col)
		label := pt.id
		if pt.t > xmax {
			label += " (" + num(pt.t) + ")"
		}
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: label})
	}
	n := float64(len(pts))
	p = plot.New()
	p.Title.Text = "Bound tightness per case (max err/bound over outputs; > 1 is out of bound)"
	p.X.Label.Text = "tightness"
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Label.Font.Size = 7
	p.Add(plotter.NewGrid())
	p.Add(d)
	one, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -0.5}, {X: 1, Y: n - 0.5}})
	if err != nil {
		return nil, 0, 0, err
	}
	one.Color = colorFail
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	p.X.Min, p.X.Max = 0, xmax
	p.Y.Min, p.Y.Max = -0.5, n-0.5
	return p, 16 * vg.Centimeter, vg.Length(n)*vg.Points(9) + vg.Points(70), nil
}

// dots is a horizontal lollipop chart: value vals[i] at y = i, drawn as a
// line from x = 0 and a dot; values beyond the axis are drawn at its end.
type dots struct {
	vals   []float64
	colors []color.Color
}

// Plot implements plot.Plotter.
func (d *dots) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range d.vals {
		v = math.Min(math.Max(v, p.X.Min), p.X.Max)
		x0, x, y := trX(math.Max(0, p.X.Min)), trX(v), trY(float64(i))
		ls := draw.LineStyle{Color: d.colors[i], Width: vg.Points(1)}
		c.StrokeLine2(ls, x0, y, x, y)
		c.DrawGlyph(draw.GlyphStyle{Color: d.colors[i], Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}, vg.Point{X: x, Y: y})
	}
}

// rmsePlot is a grouped bar chart of RMSE (log scale) per mode, one bar per
// distribution. Non-positive or non-finite RMSEs have no bar. It returns ""
// when there is nothing to draw.
func rmsePlot(rows []PrecisionRow) (template.HTML, error) {
	p := rmseChart(rows)
	if p == nil {
		return "", nil
	}
	return svgOf(p, 16*vg.Centimeter, 9*vg.Centimeter)
}

func rmseChart(rows []PrecisionRow) *plot.Plot {
	var modes, dists []string
	rmse := map[[2]string]float64{}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		if !slices.Contains(modes, r.Mode) {
			modes = append(modes, r.Mode)
		}
		if !slices.Contains(dists, r.Dist) {
			dists = append(dists, r.Dist)
		}
		v := float64(r.RMSE)
		if v > 0 && !math.IsInf(v, 1) {
			rmse[[2]string{r.Dist, r.Mode}] = v
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if len(rmse) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = "GEMM RMSE vs the float64 product, per mode and distribution"
	p.Y.Label.Text = "RMSE (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = decades{}
	p.Title.Padding = vg.Points(8)
	p.NominalX(modes...)
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	width := vg.Points(60) / vg.Length(len(dists))
	for j, dist := range dists {
		b := &logBars{width: width, color: palette[j%len(palette)],
			offset: (vg.Length(j) - vg.Length(len(dists)-1)/2) * width}
		for _, m := range modes {
			v, ok := rmse[[2]string{dist, m}]
			if !ok {
				v = math.NaN()
			}
			b.vals = append(b.vals, v)
		}
		p.Add(b)
		p.Legend.Add(dist, b)
	}
	// Whole decades around the data, with room for the legend on top.
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(hi))+1)
	p.X.Min, p.X.Max = -0.5, float64(len(modes))-0.5
	return p
}

// logBars draws vals[i] as a bar from the bottom of the plot at category i
// (shifted by offset), so that it works on a log scale; NaN has no bar.
type logBars struct {
	vals   []float64
	width  vg.Length
	offset vg.Length
	color  color.Color
}

// Plot implements plot.Plotter.
func (b *logBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range b.vals {
		if math.IsNaN(v) {
			continue
		}
		x := trX(float64(i)) + b.offset - b.width/2
		top := trY(math.Min(math.Max(v, p.Y.Min), p.Y.Max))
		pts := []vg.Point{{X: x, Y: c.Min.Y}, {X: x, Y: top}, {X: x + b.width, Y: top}, {X: x + b.width, Y: c.Min.Y}}
		c.FillPolygon(b.color, c.ClipPolygonXY(pts))
	}
}

// Thumbnail implements plot.Thumbnailer for the legend.
func (b *logBars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(b.color, c.ClipPolygonXY(pts))
}

// decades marks and labels every power of ten in the axis range ("1e-06",
// "0.001", "1"); plot.LogTicks prints 1e-05 as 9.999999999999999e-06.
type decades struct{}

// Ticks implements plot.Ticker.
func (decades) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		v := math.Pow10(e)
		if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
		for m := 2.0; m < 10; m++ {
			if mv := m * v; mv >= lo && mv <= hi {
				ts = append(ts, plot.Tick{Value: mv})
			}
		}
	}
	return ts
}
