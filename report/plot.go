package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

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
	palette = []color.Color{
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
			offset: (vg.Length(j) - vg.Length(vg.Length(len(dists)-1)/2)) * width}
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
		x := trX(float64(i)) + b.offset - vg.Length(b.width/2)
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
