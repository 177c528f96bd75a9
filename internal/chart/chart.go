// Package chart draws the report's charts (lines, points, bars and cells
// on linear, logarithmic or inverted axes, with a grid, a title and a
// legend) as SVG, on gonum/plot's canvas (vg, vg/draw, vg/vgsvg) and its
// text layout over the Liberation fonts it bundles.
//
// It does not use gonum/plot's plot package, whose package initialisation
// parses all twelve bundled fonts in every process of any binary that
// links it, whatever that process does: for the npuverify CLI that was
// 2.9 MiB of every process's resident memory (10.5 against 7.7 MiB for
// a `run` that stops at its usage error) and about 0.3 ms of its start,
// for charts only the report command draws. Here the fonts are parsed on
// the first chart drawn (fonts).
//
// Coordinates: data values go through their axis's Scale to [0, 1] and
// then onto the plotting area, whose origin is at the bottom left, as in
// vg. Values that fall outside the axis range are clipped to the area.
package chart

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/font/liberation"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Scale maps a value of the axis range [lo, hi] to [0, 1].
type Scale int

// The scales.
const (
	Linear   Scale = iota
	Log            // lo and hi must be positive
	Inverted       // linear, hi at the start (a matrix's row 0 at the top)
)

// normalize is x's position in [lo, hi] on scale s, 0 at lo (hi for
// Inverted).
func (s Scale) normalize(lo, hi, x float64) float64 {
	switch s {
	case Log:
		return (math.Log(x) - math.Log(lo)) / (math.Log(hi) - math.Log(lo))
	case Inverted:
		return (hi - x) / (hi - lo)
	}
	return (x - lo) / (hi - lo)
}

// A Tick marks a value on an axis: with a label it is a major tick (a
// longer mark, and a grid line), without one a minor tick.
type Tick struct {
	Value float64
	Label string
}

// Axis is one axis of a chart.
type Axis struct {
	Label    string
	Min, Max float64 // the range shown; Min < Max
	Scale    Scale
	// Ticks returns the ticks of [lo, hi]; nil takes NiceTicks on a linear
	// axis and Decades on a logarithmic one.
	Ticks func(lo, hi float64) []Tick
	// Nominal names categories at 0, 1, … in place of ticks: each name
	// under its value, no marks and no vertical grid lines.
	Nominal []string
}

// ticks is a's ticks within its range.
func (a *Axis) ticks() []Tick {
	var ts []Tick
	switch {
	case a.Nominal != nil:
		for i, n := range a.Nominal {
			ts = append(ts, Tick{Value: float64(i), Label: n})
		}
	case a.Ticks != nil:
		ts = a.Ticks(a.Min, a.Max)
	case a.Scale == Log:
		ts = Decades(a.Min, a.Max)
	default:
		ts = NiceTicks(a.Min, a.Max)
	}
	in := ts[:0]
	for _, t := range ts {
		if t.Value >= a.Min && t.Value <= a.Max {
			in = append(in, t)
		}
	}
	return in
}

// Style is how a series is drawn: a line (Width > 0) through its points,
// a glyph (Glyph not nil) at each of them, or both.
type Style struct {
	Color  color.Color
	Width  vg.Length   // line width; 0 draws no line
	Dashes []vg.Length // on and off lengths of a dashed line
	Glyph  draw.GlyphDrawer
	Radius vg.Length // glyph radius
}

// Point is a data point.
type Point struct{ X, Y float64 }

// Chart is a chart to draw: its axes, the items on them and a legend at
// the top of the plotting area, on the left when LegendLeft.
type Chart struct {
	Title      string
	X, Y       Axis
	LegendLeft bool
	items      []func(c draw.Canvas, tr transform)
	legend     []entry
}

// entry is one line of the legend: a thumbnail drawn in its box, and a name.
type entry struct {
	name  string
	thumb func(c draw.Canvas, box vg.Rectangle)
}

// transform maps data coordinates to the plotting area.
type transform struct {
	area vg.Rectangle
	x, y *Axis
}

func (t transform) point(x, y float64) vg.Point {
	return vg.Point{X: t.x.place(x, t.area.Min.X, t.area.Max.X), Y: t.y.place(y, t.area.Min.Y, t.area.Max.Y)}
}

// place is where v falls on a drawn from lo to hi. (Every product here is
// rounded on its own, as the module's lint asks of all its code: see
// scripts/fmacheck.sh.)
func (a *Axis) place(v float64, lo, hi vg.Length) vg.Length {
	return lo + vg.Length(vg.Length(a.Scale.normalize(a.Min, a.Max, v))*(hi-lo))
}

// Series adds pts drawn in sty, and a legend entry when name is not empty.
// A point with a NaN or infinite coordinate is left out, and so is a
// point at a non-positive value on a logarithmic axis: the line joins
// the points either side of it.
func (ch *Chart) Series(name string, pts []Point, sty Style) {
	var keep []Point
	for _, p := range pts {
		if finite(p.X) && finite(p.Y) && (ch.X.Scale != Log || p.X > 0) && (ch.Y.Scale != Log || p.Y > 0) {
			keep = append(keep, p)
		}
	}
	ch.items = append(ch.items, func(c draw.Canvas, tr transform) {
		vs := make([]vg.Point, len(keep))
		for i, p := range keep {
			vs[i] = tr.point(p.X, p.Y)
		}
		if sty.Width > 0 && len(vs) > 1 {
			c.StrokeLines(sty.line(), c.ClipLinesXY(vs)...)
		}
		if sty.Glyph != nil {
			for _, v := range vs {
				if v.X >= tr.area.Min.X && v.X <= tr.area.Max.X && v.Y >= tr.area.Min.Y && v.Y <= tr.area.Max.Y {
					c.DrawGlyph(sty.glyph(), v)
				}
			}
		}
	})
	if name != "" {
		ch.legend = append(ch.legend, entry{name, func(c draw.Canvas, box vg.Rectangle) {
			mid := (box.Min.Y + box.Max.Y) / 2
			if sty.Width > 0 {
				c.StrokeLine2(sty.line(), box.Min.X, mid, box.Max.X, mid)
			}
			if sty.Glyph != nil {
				c.DrawGlyphNoClip(sty.glyph(), vg.Point{X: (box.Min.X + box.Max.X) / 2, Y: mid})
			}
		}})
	}
}

func (s Style) line() draw.LineStyle {
	return draw.LineStyle{Color: s.Color, Width: s.Width, Dashes: s.Dashes}
}

func (s Style) glyph() draw.GlyphStyle {
	return draw.GlyphStyle{Color: s.Color, Radius: s.Radius, Shape: s.Glyph}
}

// Bars adds a bar for each vals[i] at x = i, shifted by offset and width
// wide, rising from the bottom of the plotting area (so that it works on
// a logarithmic axis); a NaN value has no bar. A legend entry is added
// when name is not empty.
func (ch *Chart) Bars(name string, vals []float64, offset, width vg.Length, col color.Color) {
	ch.items = append(ch.items, func(c draw.Canvas, tr transform) {
		for i, v := range vals {
			if math.IsNaN(v) {
				continue
			}
			top := tr.point(float64(i), math.Min(math.Max(v, tr.y.Min), tr.y.Max))
			x := top.X + offset - vg.Length(width/2)
			fillRect(c, col, vg.Rectangle{Min: vg.Point{X: x, Y: tr.area.Min.Y}, Max: vg.Point{X: x + width, Y: top.Y}})
		}
	})
	if name != "" {
		ch.legend = append(ch.legend, entry{name, func(c draw.Canvas, box vg.Rectangle) { fillRect(c, col, box) }})
	}
}

// Rect adds a filled rectangle between data corners (x0, y0) and (x1, y1).
func (ch *Chart) Rect(x0, y0, x1, y1 float64, col color.Color) {
	ch.items = append(ch.items, func(c draw.Canvas, tr transform) {
		a, b := tr.point(x0, y0), tr.point(x1, y1)
		fillRect(c, col, vg.Rectangle{
			Min: vg.Point{X: min(a.X, b.X), Y: min(a.Y, b.Y)},
			Max: vg.Point{X: max(a.X, b.X), Y: max(a.Y, b.Y)},
		})
	})
}

func fillRect(c draw.Canvas, col color.Color, r vg.Rectangle) {
	pts := []vg.Point{r.Min, {X: r.Min.X, Y: r.Max.Y}, r.Max, {X: r.Max.X, Y: r.Min.Y}}
	c.FillPolygon(col, c.ClipPolygonXY(pts))
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// The look, close to gonum/plot's defaults.
const (
	pad        = vg.Length(5)   // around the chart, and between its parts
	titleSize  = vg.Length(12)  // points
	labelSize  = vg.Length(12)  // axis labels
	tickSize   = vg.Length(10)  // tick labels and the legend
	majorMark  = vg.Length(5)   // length of a labelled tick's mark
	minorMark  = vg.Length(2.5) // of an unlabelled one
	axisWidth  = vg.Length(0.5)
	thumbWidth = vg.Length(20) // a legend entry's thumbnail
)

var (
	gridColor     = color.Gray{Y: 0xcc}
	legendBacking = color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xd8}
)

// fonts is the text handler over the bundled Liberation fonts, parsed on
// the first chart drawn.
var fonts = sync.OnceValue(func() text.Handler {
	return text.Plain{Fonts: font.NewCache(liberation.Collection())}
})

// textStyle is Liberation Serif of size pt, black, aligned by (xa, ya).
func textStyle(pt vg.Length, xa text.XAlignment, ya text.YAlignment) draw.TextStyle {
	return draw.TextStyle{
		Color:   color.Black,
		Font:    font.Font{Typeface: "Liberation", Variant: "Serif", Size: pt},
		XAlign:  xa,
		YAlign:  ya,
		Handler: fonts(),
	}
}

// SVG draws ch on a w×h canvas and returns the <svg> element, without the
// XML prolog, for inlining in HTML. All text is escaped by vgsvg.
func (ch *Chart) SVG(w, h vg.Length) ([]byte, error) {
	if err := ch.check(); err != nil {
		return nil, fmt.Errorf("chart %q: %w", ch.Title, err)
	}
	cv := vgsvg.New(w, h)
	ch.draw(draw.New(cv))
	var b bytes.Buffer
	if _, err := cv.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("chart %q: %w", ch.Title, err)
	}
	s := b.Bytes()
	i := bytes.Index(s, []byte("<svg"))
	if i < 0 {
		return nil, fmt.Errorf("chart %q: no <svg> element", ch.Title)
	}
	return s[i:], nil
}

// check reports axes that cannot be drawn.
func (ch *Chart) check() error {
	for _, a := range []*Axis{&ch.X, &ch.Y} {
		if !(a.Min < a.Max) || !finite(a.Min) || !finite(a.Max) {
			return fmt.Errorf("axis %q: range [%v, %v] is empty or not finite", a.Label, a.Min, a.Max)
		}
		if a.Scale == Log && a.Min <= 0 {
			return fmt.Errorf("axis %q: a logarithmic axis needs a positive range, not [%v, %v]", a.Label, a.Min, a.Max)
		}
	}
	return nil
}

// draw lays ch out on c: the title at the top, the y axis's label and
// tick labels on the left, the x axis's at the bottom, and the plotting
// area in what remains.
func (ch *Chart) draw(c draw.Canvas) {
	xt, yt := ch.X.ticks(), ch.Y.ticks()
	tickText := textStyle(tickSize, text.XCenter, text.YTop)
	area := vg.Rectangle{Min: vg.Point{X: c.Min.X + pad, Y: c.Min.Y + pad}, Max: vg.Point{X: c.Max.X - pad, Y: c.Max.Y - pad}}
	if ch.Title != "" {
		ts := textStyle(titleSize, text.XCenter, text.YTop)
		c.FillText(ts, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: area.Max.Y}, ch.Title)
		area.Max.Y -= ts.Height(ch.Title) + pad
	}
	// The y label reads upwards, its top towards the left edge.
	yLabel := textStyle(labelSize, text.XCenter, text.YTop)
	yLabel.Rotation = math.Pi / 2
	if ch.Y.Label != "" {
		area.Min.X += yLabel.Height(ch.Y.Label) + pad
	}
	var yw vg.Length
	for _, t := range yt {
		yw = max(yw, tickText.Width(t.Label))
	}
	area.Min.X += yw + pad + majorMark
	if ch.X.Label != "" {
		area.Min.Y += textStyle(labelSize, text.XCenter, text.YBottom).Height(ch.X.Label) + pad
	}
	area.Min.Y += tickText.Height("0") + pad + majorMark
	// Room for the halves of the outermost x tick labels.
	for _, t := range xt {
		if t.Label == "" {
			continue
		}
		half := vg.Length(tickText.Width(t.Label) / 2)
		x := ch.X.place(t.Value, area.Min.X, area.Max.X)
		if over := x + half - (c.Max.X - pad); over > 0 {
			area.Max.X -= over
		}
	}
	tr := transform{area: area, x: &ch.X, y: &ch.Y}

	// Grid, items, axes, legend, in that order, each over the last.
	grid := draw.LineStyle{Color: gridColor, Width: axisWidth}
	for _, t := range yt {
		if t.Label != "" {
			y := tr.point(ch.X.Min, t.Value).Y
			c.StrokeLine2(grid, area.Min.X, y, area.Max.X, y)
		}
	}
	if ch.X.Nominal == nil {
		for _, t := range xt {
			if t.Label != "" {
				x := tr.point(t.Value, ch.Y.Min).X
				c.StrokeLine2(grid, x, area.Min.Y, x, area.Max.Y)
			}
		}
	}
	inner := draw.Crop(c, area.Min.X-c.Min.X, area.Max.X-c.Max.X, area.Min.Y-c.Min.Y, area.Max.Y-c.Max.Y)
	for _, it := range ch.items {
		it(inner, tr)
	}
	axis := draw.LineStyle{Color: color.Black, Width: axisWidth}
	c.StrokeLine2(axis, area.Min.X, area.Min.Y, area.Max.X, area.Min.Y)
	c.StrokeLine2(axis, area.Min.X, area.Min.Y, area.Min.X, area.Max.Y)
	for _, t := range xt {
		x := tr.point(t.Value, ch.Y.Min).X
		mark := minorMark
		if t.Label != "" {
			mark = majorMark
			c.FillText(tickText, vg.Point{X: x, Y: area.Min.Y - majorMark - pad/2}, t.Label)
		}
		if ch.X.Nominal == nil {
			c.StrokeLine2(axis, x, area.Min.Y, x, area.Min.Y-mark)
		}
	}
	yText := textStyle(tickSize, text.XRight, text.YCenter)
	for _, t := range yt {
		y := tr.point(ch.X.Min, t.Value).Y
		mark := minorMark
		if t.Label != "" {
			mark = majorMark
			c.FillText(yText, vg.Point{X: area.Min.X - majorMark - pad/2, Y: y}, t.Label)
		}
		c.StrokeLine2(axis, area.Min.X, y, area.Min.X-mark, y)
	}
	if ch.X.Label != "" {
		c.FillText(textStyle(labelSize, text.XCenter, text.YBottom), vg.Point{X: (area.Min.X + area.Max.X) / 2, Y: c.Min.Y + pad}, ch.X.Label)
	}
	if ch.Y.Label != "" {
		c.FillText(yLabel, vg.Point{X: c.Min.X + pad, Y: (area.Min.Y + area.Max.Y) / 2}, ch.Y.Label)
	}
	ch.drawLegend(c, area)
}

// drawLegend lists the entries at the top of area, on its left or right,
// each a thumbnail followed by its name.
func (ch *Chart) drawLegend(c draw.Canvas, area vg.Rectangle) {
	if len(ch.legend) == 0 {
		return
	}
	ts := textStyle(tickSize, text.XLeft, text.YCenter)
	rowH := ts.Height("Xg")
	var textW vg.Length
	for _, e := range ch.legend {
		textW = max(textW, ts.Width(e.name))
	}
	x := area.Min.X + pad
	if !ch.LegendLeft {
		x = area.Max.X - pad - thumbWidth - pad - textW
	}
	y := area.Max.Y - pad
	// A light backing, so that the entries read over the data under them.
	fillRect(c, legendBacking, vg.Rectangle{
		Min: vg.Point{X: x - pad/2, Y: y - vg.Length(rowH*vg.Length(len(ch.legend))) - pad/2},
		Max: vg.Point{X: x + thumbWidth + pad + textW + pad/2, Y: y + pad/2},
	})
	for _, e := range ch.legend {
		box := vg.Rectangle{Min: vg.Point{X: x, Y: y - vg.Length(rowH*0.8)}, Max: vg.Point{X: x + thumbWidth, Y: y - vg.Length(rowH*0.2)}}
		e.thumb(c, box)
		c.FillText(ts, vg.Point{X: x + thumbWidth + pad, Y: y - vg.Length(rowH/2)}, e.name)
		y -= rowH
	}
}

// Decades marks every power of ten in [lo, hi] with a label ("1e-06",
// "0.001", "1") and its multiples 2…9 within the range without one.
func Decades(lo, hi float64) []Tick {
	var ts []Tick
	for e := int(math.Floor(math.Log10(lo))); e <= int(math.Ceil(math.Log10(hi))); e++ {
		v := math.Pow10(e)
		if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
			ts = append(ts, Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
		}
		for m := 2.0; m < 10; m++ {
			if mv := m * v; mv >= lo && mv <= hi {
				ts = append(ts, Tick{Value: mv})
			}
		}
	}
	return ts
}

// PowersOfTwo labels every power of two in [lo, hi] (512, 1024, …).
func PowersOfTwo(lo, hi float64) []Tick {
	var ts []Tick
	for v := math.Exp2(math.Ceil(math.Log2(lo))); v <= hi; v *= 2 {
		ts = append(ts, Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
	}
	return ts
}

// NiceTicks labels the multiples of a step of 1, 2 or 5 times a power of
// ten in [lo, hi], the smallest such step that gives at most six labels,
// and marks the halves between them without a label. Labels are printed
// at the step's precision, so that 0.1·3 reads "0.3", without trailing
// zeros ("1", not "1.0").
func NiceTicks(lo, hi float64) []Tick {
	span := hi - lo
	if !(span > 0) || !finite(span) {
		return nil
	}
	e := math.Floor(math.Log10(span / 6))
	var step float64
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * math.Pow(10, e)
		if math.Floor(hi/step)-math.Ceil(lo/step) < 6 {
			break
		}
	}
	prec := max(0, -int(math.Floor(math.Log10(step))))
	var ts []Tick
	for i := math.Ceil(lo / step); i*step <= hi; i++ {
		v := float64(i * step)
		ts = append(ts, Tick{Value: v, Label: shortest(strconv.FormatFloat(v, 'f', prec, 64))})
		if h := v + float64(step/2); h <= hi {
			ts = append(ts, Tick{Value: h})
		}
	}
	if first := float64(math.Ceil(lo/step) * step); first-float64(step/2) >= lo {
		ts = append(ts, Tick{Value: first - float64(step/2)})
	}
	return ts
}

// shortest drops a decimal number's trailing zeros (and its point, when
// nothing follows it), and the sign of a zero.
func shortest(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		return "0"
	}
	return s
}
