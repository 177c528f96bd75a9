package report

import (
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/npuverify/npuverify/internal/chart"
)

// Plots are drawn by package chart (gonum/plot's canvas and its Liberation
// fonts, without its plot package) into SVG and inlined in the HTML report.
// Text metrics come from the fonts compiled into the binary, so nothing is
// loaded at run time; the fonts are referenced by name in the SVG, not
// embedded (a viewer without them substitutes its own). The SVG writer
// escapes text (case IDs, dist and mode names) with xml.Escape, which is
// what makes the SVG safe to insert into the page as template.HTML.

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

// svgOf draws ch on a w×h canvas and returns the <svg> element, ready to
// inline in HTML.
func svgOf(ch *chart.Chart, w, h vg.Length) (template.HTML, error) {
	s, err := ch.SVG(w, h)
	if err != nil {
		return "", fmt.Errorf("report: plot: %w", err)
	}
	return template.HTML(s), nil // the SVG writer escapes all text
}

// logAxis is a logarithmic axis over whole decades around [lo, hi] (both
// positive), with room decades more above for a legend. The range is
// never empty: when lo and hi are the same power of ten (every value
// equal, e.g. one case of 1000 GM bytes), floor and ceiling of its
// decade agree, and the axis spans the decade above it too.
func logAxis(label string, lo, hi float64, room int) chart.Axis {
	a := chart.Axis{Label: label, Scale: chart.Log,
		Min: math.Pow(10, math.Floor(math.Log10(lo))), Max: math.Pow(10, math.Ceil(math.Log10(hi))+float64(room))}
	if !(a.Max > a.Min) {
		a.Max = a.Min * 10
	}
	return a
}

// dashed is the dash pattern of a dashed line.
var dashed = []vg.Length{vg.Points(4), vg.Points(3)}

// pointsLine is a series' line with a circle at each point, in colour c.
func pointsLine(c color.Color) chart.Style {
	return chart.Style{Color: c, Width: vg.Points(1.5), Glyph: draw.CircleGlyph{}, Radius: vg.Points(2.5)}
}

// groupOffset places the j-th of n bars of width w around its category.
func groupOffset(j, n int, w vg.Length) vg.Length {
	return (vg.Length(j) - vg.Length(vg.Length(n-1)/2)) * w
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

func rmseChart(rows []PrecisionRow) *chart.Chart {
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
	ch := &chart.Chart{
		Title: "GEMM RMSE vs the float64 product, per mode and distribution",
		// Whole decades around the data, with room for the legend on top.
		Y:          logAxis("RMSE (log scale)", lo, hi, 1),
		X:          chart.Axis{Nominal: modes, Min: -0.5, Max: float64(len(modes)) - 0.5},
		LegendLeft: true,
	}
	width := vg.Points(60) / vg.Length(len(dists))
	for j, dist := range dists {
		var vals []float64
		for _, m := range modes {
			v, ok := rmse[[2]string{dist, m}]
			if !ok {
				v = math.NaN()
			}
			vals = append(vals, v)
		}
		ch.Bars(dist, vals, groupOffset(j, len(dists), width), width, palette[j%len(palette)])
	}
	return ch
}
