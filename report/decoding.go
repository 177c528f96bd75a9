package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sync"

	"github.com/npuverify/npuverify/internal/chart"
	"github.com/npuverify/npuverify/verify"
)

// DecodingConfig sets up the comparison of incremental decoding with full
// recompute: B sequences of one attention layer with Hq query heads over
// Hkv kv heads of size D, each at every context length in Lengths.
type DecodingConfig struct {
	B, Hq, Hkv, D int
	Lengths       []int
	Seed          uint64
}

// DecodingPath is the modeled cost of one decode step (one new token for
// each of the B sequences) along one path: its launches run one after the
// other, so Cycles is their sum.
type DecodingPath struct {
	Cycles   int64 `json:"cycles"`   // per step: B generated tokens
	Launches int   `json:"launches"` // kernel launches per step
	// UBPeakBytes is the largest UB use of any core in any launch.
	UBPeakBytes int64 `json:"ub_peak_bytes"`
	// Overlap is npu.Cost's DMA/compute overlap over all cores of all the
	// step's launches: hidden cycles / Σ min(DMA, compute).
	Overlap verify.Float `json:"overlap"`
}

// DecodingRow is one context length.
type DecodingRow struct {
	L int `json:"l"`
	// The launches: kv_update of one token per sequence; decode_attention
	// over L positions (the same launch on both paths); and the 2·Hkv
	// gemm launches projecting K and V of all B·L tokens.
	KVUpdateCycles   int64        `json:"kv_update_cycles"`
	AttentionCycles  int64        `json:"decode_attention_cycles"`
	ProjectionCycles int64        `json:"projection_cycles"`
	Incremental      DecodingPath `json:"incremental"`
	Recompute        DecodingPath `json:"recompute"`
	// Speedup is Recompute.Cycles / Incremental.Cycles.
	Speedup float64 `json:"speedup"`
}

// DecodingTable is the report section comparing, on the cost model,
// incremental decoding (kv_update of the new token + decode_attention
// over the cache) with full recompute (K and V projected again for every
// token, then the same attention). experiments.IncrementalVsRecompute
// fills it by running the emulated kernels, so that this package, which
// renders it, links no kernel.
type DecodingTable struct {
	Config DecodingConfig `json:"config"`
	Device string         `json:"device"`
	Rows   []DecodingRow  `json:"rows"`
}

// Key implements Section.
func (*DecodingTable) Key() string { return "incremental_decoding" }

// JSON implements Section.
func (t *DecodingTable) JSON() any { return t }

// perToken is a path's cycles per generated token (a step makes B).
func (t *DecodingTable) perToken(cycles int64) float64 {
	return float64(cycles) / float64(t.Config.B)
}

func (t *DecodingTable) intro() string {
	c := t.Config
	return fmt.Sprintf("Modeled cycles on %s per generated token (one decode step makes one token for each of B = %d sequences; "+
		"Hq = %d, Hkv = %d, D = %d, fp16 contiguous cache). Incremental: kv_update of the new token (K and V projected and written "+
		"at position L−1) + decode_attention over the L cached positions. Full recompute: K and V projected again for all B·L tokens "+
		"(2·Hkv = %d gemm launches [B·L×D]·[D×D], fp16 in, fp32 accumulation) + the same decode_attention; this is the single-layer "+
		"twin of the chain test, so for a multi-layer model, which would also recompute every earlier position's attention, it is a "+
		"lower bound. Launches run one after the other; UB peak is the largest of any core in any launch; overlap is DMA/compute "+
		"overlap over all cores of the step's launches (hidden cycles / Σ min(DMA, compute)).",
		t.Device, c.B, c.Hq, c.Hkv, c.D, 2*c.Hkv)
}

type decodingView struct {
	L, Inc, Rec, Speedup, KVU, Attn, Proj, UBInc, UBRec, OvInc, OvRec string
}

func (t *DecodingTable) views() []decodingView {
	var out []decodingView
	ov := func(x verify.Float) string {
		if math.IsNaN(float64(x)) {
			return "—"
		}
		return fmt.Sprintf("%.2f", float64(x))
	}
	for _, r := range t.Rows {
		out = append(out, decodingView{
			L: fmt.Sprint(r.L), Inc: fmt.Sprintf("%.0f", t.perToken(r.Incremental.Cycles)), Rec: fmt.Sprintf("%.0f", t.perToken(r.Recompute.Cycles)),
			Speedup: fmt.Sprintf("%.2f×", r.Speedup), KVU: fmt.Sprint(r.KVUpdateCycles), Attn: fmt.Sprint(r.AttentionCycles), Proj: fmt.Sprint(r.ProjectionCycles),
			UBInc: fmt.Sprint(r.Incremental.UBPeakBytes), UBRec: fmt.Sprint(r.Recompute.UBPeakBytes), OvInc: ov(r.Incremental.Overlap), OvRec: ov(r.Recompute.Overlap),
		})
	}
	return out
}

const decodingHead = "| L | incremental cycles/token | recompute cycles/token | speedup | kv_update cycles | decode_attention cycles | projection cycles | UB peak B (inc / rec) | overlap (inc / rec) |"

// Markdown implements Section.
func (t *DecodingTable) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "## Incremental decoding vs full recompute\n\n%s\n\n%s\n|%s\n", t.intro(), decodingHead, " ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, v := range t.views() {
		fmt.Fprintf(ew, "| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s |\n", v.L, v.Inc, v.Rec, v.Speedup, v.KVU, v.Attn, v.Proj, v.UBInc, v.UBRec, v.OvInc, v.OvRec)
	}
	fmt.Fprintln(ew)
	return ew.err
}

// HTML implements HTMLSection: the table and two plots (cycles per token
// against L for both paths, and the speedup).
func (t *DecodingTable) HTML(w io.Writer) error {
	charts, err := sectionCharts("plot-decoding", t.cyclesChart(), t.speedupChart())
	if err != nil {
		return err
	}
	return decodingTemplate().Execute(w, struct {
		Intro  string
		Rows   []decodingView
		Charts []Chart
	}{t.intro(), t.views(), charts})
}

// decodingTemplate is the decoding section, parsed on first use (see
// htmlTemplates).
var decodingTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("decoding").Parse(`<h2>Incremental decoding vs full recompute</h2>
<p class="note">{{.Intro}}</p>
<table>
<thead><tr><th>L</th><th>incremental cycles/token</th><th>recompute cycles/token</th><th>speedup</th><th>kv_update cycles</th><th>decode_attention cycles</th><th>projection cycles</th><th>UB peak B (inc / rec)</th><th>overlap (inc / rec)</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr><td class="n">{{.L}}</td><td class="n">{{.Inc}}</td><td class="n">{{.Rec}}</td><td class="n">{{.Speedup}}</td><td class="n">{{.KVU}}</td><td class="n">{{.Attn}}</td><td class="n">{{.Proj}}</td><td class="n">{{.UBInc}} / {{.UBRec}}</td><td class="n">{{.OvInc}} / {{.OvRec}}</td></tr>
{{- end}}
</tbody>
</table>
{{- range .Charts}}
<figure id="{{.ID}}" class="plot">{{.SVG}}<figcaption>{{.Caption}}</figcaption></figure>
{{- end}}
`))
})

// cyclesChart plots cycles per token against L for both paths, log-log.
func (t *DecodingTable) cyclesChart() *chart.Chart {
	if len(t.Rows) == 0 {
		return nil
	}
	ch := &chart.Chart{Title: "Modeled cycles per generated token against context length", LegendLeft: true}
	lo, hi := math.Inf(1), math.Inf(-1)
	for j, s := range []struct {
		name string
		get  func(r DecodingRow) int64
	}{{"full recompute", func(r DecodingRow) int64 { return r.Recompute.Cycles }}, {"incremental", func(r DecodingRow) int64 { return r.Incremental.Cycles }}} {
		xy := make([]chart.Point, len(t.Rows))
		for i, r := range t.Rows {
			xy[i] = chart.Point{X: float64(r.L), Y: t.perToken(s.get(r))}
			lo, hi = math.Min(lo, xy[i].Y), math.Max(hi, xy[i].Y)
		}
		ch.Series(s.name, xy, pointsLine(palette[j]))
	}
	ch.X = chart.Axis{Label: "context length L (log scale)", Scale: chart.Log, Ticks: chart.PowersOfTwo,
		Min: float64(t.Rows[0].L) / 1.2, Max: float64(t.Rows[len(t.Rows)-1].L) * 1.2}
	ch.Y = chart.Axis{Label: "cycles per token (log scale)", Scale: chart.Log,
		Min: lo / 2, Max: hi * 6} // room above the data for the legend
	return ch
}

// speedupChart plots recompute / incremental cycles against L.
func (t *DecodingTable) speedupChart() *chart.Chart {
	if len(t.Rows) == 0 {
		return nil
	}
	xy := make([]chart.Point, len(t.Rows))
	hi := 1.0
	for i, r := range t.Rows {
		xy[i] = chart.Point{X: float64(r.L), Y: r.Speedup}
		hi = math.Max(hi, r.Speedup)
	}
	ch := &chart.Chart{
		Title: "Speedup of incremental decoding over full recompute",
		X: chart.Axis{Label: "context length L (log scale)", Scale: chart.Log, Ticks: chart.PowersOfTwo,
			Min: float64(t.Rows[0].L) / 1.2, Max: float64(t.Rows[len(t.Rows)-1].L) * 1.2},
		Y: chart.Axis{Label: "recompute / incremental cycles", Min: 0, Max: math.Ceil(hi + 0.5)},
	}
	ch.Series("", xy, pointsLine(palette[2]))
	return ch
}
