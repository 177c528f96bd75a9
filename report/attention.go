package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sync"

	"github.com/npuverify/npuverify/internal/chart"
	"github.com/npuverify/npuverify/quality"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// AttentionQuality is the report section on what KV compression
// (sparse_compress) does to attention: per distribution and keep ratio,
// the relative error of attention over the compressed cache against the
// full one, for sparse_compress's importance selection and for the
// per-query oracle, and the cache bytes saved. It is computed by
// experiments.AttentionQuality (float64, seeded), not read from case
// results, so a merged report carries the same table.
type AttentionQuality struct{ Table *quality.Table }

// Key implements Section.
func (*AttentionQuality) Key() string { return "attention_quality" }

// JSON implements Section.
func (a *AttentionQuality) JSON() any { return a.Table }

func (a *AttentionQuality) intro() string {
	c := a.Table.Config
	return fmt.Sprintf("Decode attention over a KV cache compressed by sparse_compress (the %d sinks plus the top tokens by "+
		"importance, mean k²) against attention over the full cache, in float64 so the error is the selection's alone: H = %d heads "+
		"of L = %d tokens, D = %d, %d queries per head, seed %d. Relative error is the mean over heads and queries of ‖o_c − o‖/‖o‖. "+
		"The oracle keeps, per query, the tokens of largest true attention weight: what no query-independent selection can beat "+
		"reliably. random: q, k, v independent N(0,1) (attention spread out, key norm says nothing); peaked: a few heavy-hitter "+
		"tokens along a direction the queries share. Bytes saved count the fp16 K and V rows dropped (the int32 indices kept are not "+
		"subtracted).", c.Sinks, c.Heads, c.Tokens, c.HeadDim, c.Queries, c.Seed)
}

type attentionView struct{ Dist, Ratio, Keep, Importance, Oracle, Saved, Share string }

func (a *AttentionQuality) views() []attentionView {
	var out []attentionView
	for _, r := range a.Table.Rows {
		out = append(out, attentionView{
			Dist: r.Dist, Ratio: fmt.Sprintf("%g", r.KeepRatio), Keep: fmt.Sprint(r.Keep),
			Importance: fmt.Sprintf("%.4g", r.ImportanceErr), Oracle: fmt.Sprintf("%.4g", r.OracleErr),
			Saved: fmt.Sprint(r.BytesSaved), Share: fmt.Sprintf("%.1f %%", 100*float64(r.BytesSaved)/float64(r.BytesFull)),
		})
	}
	return out
}

// Markdown implements Section.
func (a *AttentionQuality) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "## Attention quality under KV compression\n\n%s\n\n", a.intro())
	fmt.Fprintln(ew, "| dist | keep_ratio | kept tokens | rel. error (importance) | rel. error (oracle) | bytes saved | saved |")
	fmt.Fprintln(ew, "| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, v := range a.views() {
		fmt.Fprintf(ew, "| %s | %s | %s | %s | %s | %s | %s |\n", v.Dist, v.Ratio, v.Keep, v.Importance, v.Oracle, v.Saved, v.Share)
	}
	fmt.Fprintln(ew)
	return ew.err
}

// HTML implements HTMLSection: the table, then relative error and bytes
// saved against keep_ratio.
func (a *AttentionQuality) HTML(w io.Writer) error {
	charts, err := sectionCharts("plot-attention", a.errorChart(), a.savedChart())
	if err != nil {
		return err
	}
	return attentionTemplate().Execute(w, struct {
		Intro  string
		Rows   []attentionView
		Charts []Chart
	}{a.intro(), a.views(), charts})
}

// attentionTemplate is the attention-quality section, parsed on first use
// (see htmlTemplates).
var attentionTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("attention").Parse(`<h2>Attention quality under KV compression</h2>
<p class="note">{{.Intro}}</p>
<table>
<thead><tr><th>dist</th><th>keep_ratio</th><th>kept tokens</th><th>rel. error (importance)</th><th>rel. error (oracle)</th><th>bytes saved</th><th>saved</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr><td>{{.Dist}}</td><td class="n">{{.Ratio}}</td><td class="n">{{.Keep}}</td><td class="n">{{.Importance}}</td><td class="n">{{.Oracle}}</td><td class="n">{{.Saved}}</td><td class="n">{{.Share}}</td></tr>
{{- end}}
</tbody>
</table>
{{- range .Charts}}
<figure id="{{.ID}}" class="plot">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{- end}}
`))
})

// errorChart plots relative error against keep_ratio on a log scale
// (peaked errors are orders of magnitude below random ones): one colour
// per distribution, solid for the importance selection, dashed for the
// oracle. An error of 0 (keep_ratio 1) has no place on it and is not drawn.
func (a *AttentionQuality) errorChart() *chart.Chart {
	rows := a.Table.Rows
	if len(rows) == 0 {
		return nil
	}
	ch := &chart.Chart{Title: "Attention error against keep_ratio"}
	lo, hi := math.Inf(1), math.Inf(-1)
	for j, dist := range a.Table.Config.Dists {
		for _, s := range []struct {
			name   string
			get    func(quality.Row) float64
			dashed bool
		}{{"importance", func(r quality.Row) float64 { return r.ImportanceErr }, false}, {"oracle", func(r quality.Row) float64 { return r.OracleErr }, true}} {
			var xy []chart.Point
			for _, r := range rows {
				if v := s.get(r); r.Dist == dist && v > 0 && !math.IsInf(v, 1) {
					xy = append(xy, chart.Point{X: r.KeepRatio, Y: v})
					lo, hi = math.Min(lo, v), math.Max(hi, v)
				}
			}
			if len(xy) == 0 {
				continue
			}
			sty := pointsLine(palette[j%len(palette)])
			if s.dashed {
				sty.Dashes, sty.Glyph = dashed, draw.TriangleGlyph{}
			}
			ch.Series(dist+", "+s.name, xy, sty)
		}
	}
	if math.IsInf(lo, 1) {
		return nil // nothing but zeros
	}
	ch.X = chart.Axis{Label: "keep_ratio", Min: 0, Max: 1.05}
	ch.Y = logAxis("relative error ‖o_c − o‖/‖o‖ (log scale)", lo, hi, 1) // a decade for the legend
	return ch
}

// savedChart plots the share of cache bytes saved against keep_ratio (the
// same for every distribution: it depends on the kept count only).
func (a *AttentionQuality) savedChart() *chart.Chart {
	var xy []chart.Point
	for _, r := range a.Table.Rows {
		if len(a.Table.Config.Dists) > 0 && r.Dist == a.Table.Config.Dists[0] && r.BytesFull > 0 {
			xy = append(xy, chart.Point{X: r.KeepRatio, Y: 100 * float64(r.BytesSaved) / float64(r.BytesFull)})
		}
	}
	if len(xy) == 0 {
		return nil
	}
	ch := &chart.Chart{
		Title: "KV-cache bytes saved against keep_ratio",
		X:     chart.Axis{Label: "keep_ratio", Min: 0, Max: 1.05},
		Y:     chart.Axis{Label: "fp16 K and V bytes saved (%)", Min: 0, Max: 100},
	}
	ch.Series("", xy, pointsLine(palette[2]))
	return ch
}

// sectionCharts renders a section's plots as 12×8 cm SVG charts with IDs
// <prefix>-N, N the plot's position from 1; a nil plot (nothing to draw)
// is left out, and the IDs of the others keep their positions.
func sectionCharts(prefix string, plots ...*chart.Chart) ([]Chart, error) {
	var charts []Chart
	for i, p := range plots {
		if p == nil {
			continue
		}
		s, err := svgOf(p, 12*vg.Centimeter, 8*vg.Centimeter)
		if err != nil {
			return nil, err
		}
		charts = append(charts, Chart{ID: fmt.Sprintf("%s-%d", prefix, i+1), Caption: p.Title, SVG: s})
	}
	return charts, nil
}
