package report

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/npuverify/npuverify/internal/chart"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/npu/kernels"
	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/tensor"
	"github.com/npuverify/npuverify/verify"
	"github.com/x448/float16"
)

// DecodingConfig sets up the comparison of incremental decoding with full
// recompute: B sequences of one attention layer with Hq query heads over
// Hkv kv heads of size D, each at every context length in Lengths.
type DecodingConfig struct {
	B, Hq, Hkv, D int
	Lengths       []int
	Seed          uint64
}

// DefaultDecodingConfig is the comparison the report command renders:
// 6 sequences × 4 kv heads (24 decode_attention work items, one per AI
// core of ascend910b), D = 128, contexts 512 … 8K.
func DefaultDecodingConfig() DecodingConfig {
	return DecodingConfig{B: 6, Hq: 4, Hkv: 4, D: 128, Lengths: []int{512, 1024, 2048, 4096, 8192}, Seed: 1}
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
// token, then the same attention).
type DecodingTable struct {
	Config DecodingConfig `json:"config"`
	Device string         `json:"device"`
	Rows   []DecodingRow  `json:"rows"`
}

// Key implements Section.
func (*DecodingTable) Key() string { return "incremental_decoding" }

// JSON implements Section.
func (t *DecodingTable) JSON() any { return t }

// IncrementalVsRecompute runs, for every length L of cfg, the emulated
// kernels of both paths on prof and reads their modeled cost:
//
//   - incremental: kv_update of x [B,Hkv,D] into fp16 contiguous caches
//     [B,Lmax,Hkv,D] at position L−1, then decode_attention of q [B,Hq,D]
//     over the L cached positions;
//   - recompute: for each kv head, K = X·w_k[h] and V = X·w_v[h] with X the
//     [B·L, D] token inputs (gemm, fp16 in, fp32 accumulation, fp16 out:
//     kv_update's numerics as one GEMM per head instead of B matrix-vector
//     products), then the same decode_attention.
//
// This is the single-layer twin the chain test checks: a multi-layer
// model without a cache would also recompute every earlier position's
// attention, so the recompute figure is a lower bound. Inputs are seeded
// uniform fp16. The cost model does not depend on the values, which the
// runs use twice: kv_update (one row per sequence whatever L) runs once,
// and of the 2·Hkv projection launches of one shape one runs, counted
// 2·Hkv times; TestDecodingCostIgnoresValues checks both.
func IncrementalVsRecompute(ctx context.Context, prof npu.Profile, cfg DecodingConfig) (*DecodingTable, error) {
	c := cfg
	if c.B <= 0 || c.Hq <= 0 || c.Hkv <= 0 || c.D <= 0 || c.Hq%c.Hkv != 0 || len(c.Lengths) == 0 {
		return nil, fmt.Errorf("decoding table: B %d, Hq %d, Hkv %d, D %d must be positive with Hkv dividing Hq, and lengths %v non-empty",
			c.B, c.Hq, c.Hkv, c.D, c.Lengths)
	}
	for _, l := range c.Lengths {
		if l <= 0 {
			return nil, fmt.Errorf("decoding table: length %d is not positive", l)
		}
	}
	dev, err := npu.NewDevice(prof)
	if err != nil {
		return nil, fmt.Errorf("decoding table: %w", err)
	}
	g := newDecodingGen(c.Seed)
	lmax := slices.Max(c.Lengths)
	b, h, d := c.B, c.Hkv, c.D
	kc, vc := g.f16(b, lmax, h, d), g.f16(b, lmax, h, d)
	ws := g.f16(2, h, d, d) // w_k, w_v
	x, q := g.f16(b, h, d), g.f16(b, c.Hq, d)
	xs := g.f16(b*lmax, d) // the token inputs of one head, for recompute
	ids := tensor.MustNew(tensor.Int32, b)
	for i := range b {
		ids.I32()[i] = int32(i)
	}
	lens := func(n int) *tensor.Tensor {
		t := tensor.MustNew(tensor.Int32, b)
		for i := range b {
			t.I32()[i] = int32(n)
		}
		return t
	}
	kvp, err := ops.KVUpdate.Validate(ops.Params{})
	if err != nil {
		return nil, fmt.Errorf("decoding table: %w", err)
	}
	dap, err := ops.DecodeAttention.Validate(ops.Params{})
	if err != nil {
		return nil, fmt.Errorf("decoding table: %w", err)
	}
	gp := ops.Params{"mode": "fp16_fp32acc"}
	wk, wv := sub(ws, 0, h*d*d, h, d, d), sub(ws, h*d*d, h*d*d, h, d, d)
	t := &DecodingTable{Config: c, Device: prof.Name}
	where := fmt.Sprintf("decoding table: B=%d Hq=%d Hkv=%d D=%d seed %d", b, c.Hq, h, d, c.Seed)
	// kv_update writes one row per sequence whatever L: its cost is the
	// same at every position and every cache length
	// (TestDecodingCostIgnoresValues), so one launch on caches of the
	// shortest length stands for every length. (On the full caches its
	// in-place outputs alone were two more copies of them.)
	lmin := slices.Min(c.Lengths)
	short := func(t *tensor.Tensor) *tensor.Tensor { return sub(t, 0, b*lmin*h*d, b, lmin, h, d) }
	_, kvCost, err := kernels.KVUpdateKernel(ctx, dev, kvp, map[string]*tensor.Tensor{
		"x": x, "w_k": wk, "w_v": wv, "k_cache": short(kc), "v_cache": short(vc), "seq_lens": lens(lmin - 1), "seq_ids": ids})
	if err != nil {
		return nil, fmt.Errorf("%s L=%d: kv_update: %w", where, lmin, err)
	}
	for _, l := range c.Lengths {
		_, daCost, err := kernels.DecodeAttentionKernel(ctx, dev, dap, map[string]*tensor.Tensor{
			"q": q, "k_cache": kc, "v_cache": vc, "seq_lens": lens(l), "seq_ids": ids})
		if err != nil {
			return nil, fmt.Errorf("%s L=%d: decode_attention: %w", where, l, err)
		}
		// The 2·Hkv projections are launches of one shape on different
		// weights; the cost model does not look at values, so one launch
		// (K of head 0) is run and counted 2·Hkv times.
		_, pc, err := kernels.GEMMKernel(ctx, dev, gp, map[string]*tensor.Tensor{"a": sub(xs, 0, b*l*d, b*l, d), "b": sub(wk, 0, d*d, d, d)})
		if err != nil {
			return nil, fmt.Errorf("%s L=%d: projection gemm [%d×%d]·[%d×%d]: %w", where, l, b*l, d, d, d, err)
		}
		proj := make([]*npu.Cost, 2*h)
		for i := range proj {
			proj[i] = pc
		}
		row := DecodingRow{L: l, KVUpdateCycles: kvCost.Cycles, AttentionCycles: daCost.Cycles, ProjectionCycles: int64(2*h) * pc.Cycles,
			Incremental: pathOf(kvCost, daCost), Recompute: pathOf(append(proj, daCost)...)}
		row.Speedup = float64(row.Recompute.Cycles) / float64(row.Incremental.Cycles)
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// sub is a tensor of shape holding n elements of t from off: a head's
// weights, or the first B·L token rows.
func sub(t *tensor.Tensor, off, n int, shape ...int) *tensor.Tensor {
	s := tensor.MustNew(t.DType, shape...)
	copy(s.F16(), t.F16()[off:off+n])
	return s
}

// decodingGen draws seeded uniform fp16 values in (−1, 1), four per
// random word, from a table of 256 values: the inputs only need to be
// valid and finite, and drawing tens of millions of them must stay fast.
type decodingGen struct {
	rng   *rand.Rand
	table [256]float16.Float16
}

func newDecodingGen(seed uint64) *decodingGen {
	g := &decodingGen{rng: rand.New(rand.NewPCG(seed, 0x6465636f6465))}
	for i := range g.table {
		g.table[i] = float16.Fromfloat32(float32(float64((float64(i)+0.5)/128) - 1))
	}
	return g
}

func (g *decodingGen) f16(shape ...int) *tensor.Tensor {
	t := tensor.MustNew(tensor.Float16, shape...)
	s := t.F16()
	i := 0
	for ; i+4 <= len(s); i += 4 {
		w := g.rng.Uint64()
		s4 := s[i : i+4 : i+4]
		s4[0], s4[1], s4[2], s4[3] = g.table[w&0xff], g.table[w>>16&0xff], g.table[w>>32&0xff], g.table[w>>48&0xff]
	}
	if i < len(s) {
		w := g.rng.Uint64()
		for j := i; j < len(s); j++ {
			s[j] = g.table[w&0xff]
			w >>= 16
		}
	}
	return t
}

// pathOf combines the costs of launches run one after the other.
func pathOf(costs ...*npu.Cost) DecodingPath {
	p := DecodingPath{Launches: len(costs)}
	var hidden, overlappable float64
	for _, k := range costs {
		p.Cycles += k.Cycles
		p.UBPeakBytes = max(p.UBPeakBytes, k.UBPeakBytes)
		for _, cc := range k.Cores {
			compute := cc.VectorCycles + cc.CubeCycles
			if m := min(cc.DMACycles, compute); m > 0 {
				overlappable += float64(m)
				hidden += float64(max(0, cc.DMACycles+compute-cc.Cycles))
			}
		}
	}
	p.Overlap = verify.Float(math.NaN())
	if overlappable > 0 {
		p.Overlap = verify.Float(min(1, hidden/overlappable))
	}
	return p
}

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
