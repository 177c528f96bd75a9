package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func labels(ts []Tick) (major []string, minor []float64) {
	for _, t := range ts {
		if t.Label != "" {
			major = append(major, t.Label)
		} else {
			minor = append(minor, t.Value)
		}
	}
	slices.Sort(minor)
	return major, minor
}

// The tickers' labels and marks, worked out by hand from their rules.
func TestTicks(t *testing.T) {
	for _, tt := range []struct {
		name   string
		f      func(lo, hi float64) []Tick
		lo, hi float64
		major  []string
		minor  []float64
	}{
		// span/6 = 16.7: a step of 10 gives 11 labels, 20 gives 6.
		{"NiceTicks", NiceTicks, 0, 100, []string{"0", "20", "40", "60", "80", "100"}, []float64{10, 30, 50, 70, 90}},
		// span/6 = 0.175: 0.1 gives 11 labels, 0.2 gives 6; 1.05 − 1 < 0.1, no half after 1.
		{"NiceTicks", NiceTicks, 0, 1.05, []string{"0", "0.2", "0.4", "0.6", "0.8", "1"}, []float64{0.1, 0.30000000000000004, 0.5, 0.7, 0.9}},
		// span 3.5: a step of 1 (4 labels); the half below the first label is inside.
		{"NiceTicks", NiceTicks, -0.5, 3, []string{"0", "1", "2", "3"}, []float64{-0.5, 0.5, 1.5, 2.5}},
		{"NiceTicks", NiceTicks, 1, 1, nil, nil},
		{"Decades", Decades, 0.05, 300, []string{"0.1", "1", "10", "100"},
			[]float64{0.05, 0.06, 0.07, 0.08, 0.09, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 2, 3, 4, 5, 6, 7, 8, 9, 20, 30, 40, 50, 60, 70, 80, 90, 200, 300}},
		{"Decades", Decades, 1e-6, 1e-5, []string{"1e-06", "1e-05"},
			[]float64{2e-6, 3e-6, 4e-6, 5e-6, 6e-6, 7e-6, 8e-6, 9e-6}},
		{"PowersOfTwo", PowersOfTwo, 512 / 1.2, 8192 * 1.2, []string{"512", "1024", "2048", "4096", "8192"}, nil},
	} {
		major, minor := labels(tt.f(tt.lo, tt.hi))
		if !slices.Equal(major, tt.major) || len(minor) != len(tt.minor) {
			t.Errorf("%s(%v, %v) = labels %q, %d unlabelled; want %q, %d", tt.name, tt.lo, tt.hi, major, len(minor), tt.major, len(tt.minor))
			continue
		}
		for i := range minor {
			if math.Abs(minor[i]-tt.minor[i]) > 1e-12*math.Abs(tt.minor[i]) {
				t.Errorf("%s(%v, %v): unlabelled ticks %v, want %v", tt.name, tt.lo, tt.hi, minor, tt.minor)
				break
			}
		}
	}
}

// NiceTicks labels two to six values of any range, equally spaced by 1, 2
// or 5 times a power of ten, within the range; each unlabelled tick is
// halfway between labels or half a step outside the first: on 2000
// seeded ranges of every scale.
func TestNiceTicksProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 0))
	for i := range 2000 {
		scale := math.Pow(10, float64(r.IntN(25)-12))
		lo := (r.Float64()*2 - 1) * scale * 10
		hi := lo + r.Float64()*scale*10 + scale*1e-3
		major, minor := labels(NiceTicks(lo, hi))
		var vals []float64
		for _, tk := range NiceTicks(lo, hi) {
			if tk.Value < lo || tk.Value > hi {
				t.Errorf("seed 12, range %d: NiceTicks(%v, %v) has %v outside the range", i, lo, hi, tk.Value)
			}
			if tk.Label != "" {
				vals = append(vals, tk.Value)
			}
		}
		if len(major) < 2 || len(major) > 6 {
			t.Errorf("seed 12, range %d: NiceTicks(%v, %v) = %d labels %q, want 2 to 6", i, lo, hi, len(major), major)
			continue
		}
		step := vals[1] - vals[0]
		e := math.Floor(math.Log10(step) + 1e-9) // a step of 10^e computed as 0.99…·10^e is 10^e
		if m := math.Round(step / math.Pow(10, e)); m != 1 && m != 2 && m != 5 {
			t.Errorf("seed 12, range %d: NiceTicks(%v, %v): step %v, want 1, 2 or 5 times a power of ten", i, lo, hi, step)
		}
		for j := 1; j < len(vals); j++ {
			if d := vals[j] - vals[j-1]; math.Abs(d-step) > 1e-9*step {
				t.Errorf("seed 12, range %d: NiceTicks(%v, %v): labels %v not equally spaced", i, lo, hi, vals)
				break
			}
		}
		if len(minor) > len(major)+1 {
			t.Errorf("seed 12, range %d: NiceTicks(%v, %v): %d unlabelled ticks for %d labels, want at most one more", i, lo, hi, len(minor), len(major))
		}
	}
}

// svgText returns the character data of every element of s, failing if s
// is not well-formed XML.
func svgText(t *testing.T, s []byte) string {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(s))
	var b strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return b.String()
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed: %v\n%s", err, s)
		}
		if cd, ok := tok.(xml.CharData); ok {
			b.Write(cd)
			b.WriteByte('\n')
		}
	}
}

var (
	marked = color.RGBA{R: 0x12, G: 0x34, B: 0x56, A: 0xff}
	other  = color.RGBA{R: 0x65, G: 0x43, B: 0x21, A: 0xff}
)

// fills counts the shapes filled with c.
func fills(s []byte, c color.RGBA) int {
	return bytes.Count(s, fmt.Appendf(nil, "fill:#%02x%02x%02x", c.R, c.G, c.B))
}

// A chart draws every value it is given once, and nothing it cannot place:
// a bar per number (none for NaN), a glyph per finite point and a line
// through them alone (none for a non-positive value on a log axis), a
// thumbnail per named series; and its text, escaped, in well-formed SVG.
func TestSVGDrawsWhatItIsGiven(t *testing.T) {
	ch := &Chart{
		Title: "bars & <points>",
		X:     Axis{Label: "x", Nominal: []string{"a", "b", "c", "d"}, Min: -0.5, Max: 3.5},
		Y:     Axis{Label: "y (log)", Scale: Log, Min: 1e-3, Max: 10},
	}
	ch.Bars("named <bars>", []float64{0.5, math.NaN(), 0.01, 2}, 0, vg.Points(10), marked)
	ch.Series("", []Point{{0, 1}, {1, -1}, {2, 0}, {3, math.NaN()}, {3, 0.1}, {math.Inf(1), 1}}, Style{Color: other, Width: 1, Glyph: draw.CircleGlyph{}, Radius: 2})
	s, err := ch.SVG(10*vg.Centimeter, 8*vg.Centimeter)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fills(s, marked), 3+1; got != want {
		t.Errorf("Bars(4 values, one NaN) with a name: %d shapes in its colour, want %d (3 bars, 1 thumbnail)", got, want)
	}
	if got, want := fills(s, other), 2; got != want {
		t.Errorf("Series(6 points, 2 placeable): %d glyphs, want %d", got, want)
	}
	if bytes.Contains(s, []byte("NaN")) || bytes.Contains(s, []byte("Inf")) {
		t.Errorf("SVG has a NaN or Inf coordinate: the line went through a point it cannot place\n%s", s)
	}
	txt := svgText(t, s)
	for _, w := range []string{"bars & <points>", "named <bars>", "y (log)", "a", "d", "0.001", "10"} {
		if !strings.Contains(txt, w) {
			t.Errorf("SVG text lacks %q:\n%s", w, txt)
		}
	}
	if !bytes.HasPrefix(s, []byte("<svg")) {
		t.Errorf("SVG starts %q, want the <svg> element", s[:min(len(s), 20)])
	}
}

// Every rectangle of a heat map lands inside the plotting area, row 0 at
// the top on an inverted axis.
func TestRectInverted(t *testing.T) {
	ch := &Chart{X: Axis{Min: 0, Max: 2}, Y: Axis{Scale: Inverted, Min: 0, Max: 2}}
	tr := transform{area: vg.Rectangle{Min: vg.Point{X: 10, Y: 20}, Max: vg.Point{X: 110, Y: 220}}, x: &ch.X, y: &ch.Y}
	if p := tr.point(0, 0); p.X != 10 || p.Y != 220 {
		t.Errorf("inverted y: data (0, 0) at %v, want the top left (10, 220)", p)
	}
	if p := tr.point(2, 2); p.X != 110 || p.Y != 20 {
		t.Errorf("inverted y: data (2, 2) at %v, want the bottom right (110, 20)", p)
	}
	ch.Rect(0, 0, 1, 1, marked)
	s, err := ch.SVG(5*vg.Centimeter, 5*vg.Centimeter)
	if err != nil || fills(s, marked) != 1 {
		t.Errorf("Rect: %d shapes in its colour, error %v; want 1, nil", fills(s, marked), err)
	}
}

// An axis that cannot be drawn is an error naming it, not a panic or an
// empty picture.
func TestSVGRejectsBadAxes(t *testing.T) {
	for _, a := range []Axis{
		{Label: "empty", Min: 1, Max: 1},
		{Label: "reversed", Min: 2, Max: 1},
		{Label: "nan", Min: math.NaN(), Max: 1},
		{Label: "inf", Min: 0, Max: math.Inf(1)},
		{Label: "log", Scale: Log, Min: 0, Max: 1},
	} {
		ch := &Chart{Title: "t", X: Axis{Min: 0, Max: 1}, Y: a}
		if _, err := ch.SVG(vg.Centimeter, vg.Centimeter); err == nil || !strings.Contains(err.Error(), a.Label) {
			t.Errorf("SVG with axis %+v: error %v, want one naming %q", a, err, a.Label)
		}
	}
}

// The CLI does not link gonum/plot's plot package: its initialisation
// parses every bundled font in every process of the binary (2.9 MiB of
// resident memory in every run), for charts only the report command
// draws, and this package draws them without it.
func TestCLIDoesNotLinkPlot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/npuverify/npuverify/cmd/npuverify").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "gonum.org/v1/plot/vg/vgsvg") {
		t.Fatalf("go list -deps ./cmd/npuverify lacks vgsvg: the test does not see the CLI's dependencies\n%s", out)
	}
	if slices.Contains(deps, "gonum.org/v1/plot") {
		t.Error("cmd/npuverify depends on gonum.org/v1/plot; draw charts with package chart")
	}
}
