package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/npu"
)

// The statuses of a checklist item.
const (
	StatusPass        = "pass"
	StatusFail        = "fail"
	StatusNA          = "n/a"          // the shape cannot reach the target, or there is nothing to measure
	StatusNotModelled = "not modelled" // the cost model does not compute the metric
)

// Target is one item of the performance checklist.
type Target struct {
	Metric    string  `json:"metric"`
	Target    string  `json:"target"`
	Threshold float64 `json:"threshold"`
	// Below is true when the metric must stay below Threshold.
	Below bool `json:"below,omitempty"`
	// NotModelled says why the cost model cannot judge it ("" when it can).
	NotModelled string `json:"not_modelled,omitempty"`
	// Note says how the figure is obtained where that is not evident.
	Note string `json:"note,omitempty"`
}

// interCoreNote is why inter-core traffic is 0 for every case with a cost.
const interCoreNote = "0 % for every kernel: the emulated device has no inter-core channel or shared local memory " +
	"(each block runs on its own core with its own UB, L1 and L0; blocks of a cooperative launch meet only at SyncAll), " +
	"so no kernel can move a byte from one core to another but through GM (decode_attention's split contexts: partial records written, then read after the barrier), by its own DMA, counted as GM traffic"

// ubReuseNote is how UB reuse is measured.
const ubReuseNote = "1 − (GM bytes DMA'd into UB) / (bytes compute reads from UB), per case summed over cores " +
	"(npu.Cost.UBReuse): vector sources, fused-instruction inputs, kernel-charged vector work (one operand stream), " +
	"kernel-charged cube products on UB operands (decode_attention) and a sparse index read from UB count as reads; " +
	"stores UB→GM do not; Mmad's operands pass GM→L1→L0 and never touch UB, so a GEMM's figure is its epilogue's " +
	"(accumulators from L0C are on-chip data, C and scales are loads), and kv_update's, whose loads all go to L1, is 1 " +
	"with nothing reused (docs/performance.md). " +
	"A streaming op that reads each loaded element once (vector_add) scores 0 by construction"

// Targets is the performance checklist. Inter-core traffic is judged,
// and is 0 by construction (interCoreNote); UB reuse is the cost model's
// read counters (ubReuseNote).
var Targets = []Target{
	{Metric: "cube utilisation", Target: "> 75 %", Threshold: 0.75},
	{Metric: "UB reuse", Target: "> 80 %", Threshold: 0.80, Note: ubReuseNote},
	{Metric: "DMA/compute overlap", Target: "> 85 %", Threshold: 0.85},
	{Metric: "load balance", Target: "> 90 %", Threshold: 0.90},
	{Metric: "inter-core traffic", Target: "< 10 % of cycles", Threshold: 0.10, Below: true, Note: interCoreNote},
}

// Item is one checklist item on one case.
type Item struct {
	Metric string  `json:"metric"`
	Status string  `json:"status"`
	Value  float64 `json:"-"`
	Reason string  `json:"reason,omitempty"`
}

// Roofline is the least number of cycles any kernel needs for a case's
// work on its device, and the lower bounds it is the maximum of: cube work
// spread over every AI core, vector bytes over every vector core at full
// width, HBM traffic at full HBM bandwidth (the launch's HBM bytes where
// the cost has them: an L2 serves the rest), and one transfer's latency
// (npu.Profile.GMPath: the L2's, or dma_latency_cycles without L2) per
// direction of traffic (the first load precedes any result, the last
// store follows it).
type Roofline struct {
	Cube, Vector, Memory, Latency float64
}

// Bound is the roofline: the largest of the lower bounds.
func (r Roofline) Bound() float64 { return max(r.Cube, r.Vector, r.Memory, r.Latency) }

// roofline returns the case's roofline, false when it has no cost or the
// device profile is unknown to this binary.
func roofline(c *Case) (Roofline, bool) {
	k := c.Cost
	if k == nil {
		return Roofline{}, false
	}
	p, err := npu.ProfileByName(k.Device)
	if err != nil {
		return Roofline{}, false
	}
	var r Roofline
	if k.CubeMACs > 0 {
		r.Cube = float64(k.CubeCycles) * float64(k.CubeUsefulMACs) / float64(k.CubeMACs) / float64(p.AICores)
	}
	r.Vector = float64(k.VectorBytes) / float64(p.VectorBytesPerCycle*p.VectorCores)
	// The memory roof is HBM's: the launch's HBM bytes when the report
	// has them (an L2 serves the rest), else every GM byte.
	hbm := k.HBMBytes
	if hbm == 0 {
		hbm = k.GMBytesIn + k.GMBytesOut
	}
	r.Memory = float64(hbm) / (p.HBMGBps / p.ClockGHz)
	_, xfer := p.GMPath(npu.AICore) // a transfer's latency: L2's, or dma_latency_cycles without L2
	for _, b := range []int64{k.GMBytesIn, k.GMBytesOut} {
		if b > 0 {
			r.Latency += float64(xfer)
		}
	}
	return r, true
}

// checklist judges one case against every Target.
func checklist(c *Case) []Item {
	out := make([]Item, 0, len(Targets))
	for _, t := range Targets {
		out = append(out, judge(c, t))
	}
	return out
}

func judge(c *Case, t Target) Item {
	it := Item{Metric: t.Metric, Status: StatusNA, Value: math.NaN()}
	k := c.Cost
	switch {
	case t.NotModelled != "":
		it.Status, it.Reason = StatusNotModelled, t.NotModelled
		return it
	case k == nil:
		it.Reason = "no cost model"
		return it
	}
	verdict := func(v float64) Item {
		it.Value, it.Status = v, StatusFail
		if (!t.Below && v > t.Threshold) || (t.Below && v < t.Threshold) {
			it.Status = StatusPass
		}
		return it
	}
	switch t.Metric {
	case "cube utilisation":
		if k.CubeUsefulMACs == 0 {
			it.Reason = "no cube work"
			return it
		}
		r, ok := roofline(c)
		if !ok {
			it.Reason = "device " + k.Device + " unknown"
			return it
		}
		if why := latencyBound(r); why != "" {
			it.Reason = why
			return it
		}
		if reach := r.Cube / r.Bound(); reach <= t.Threshold {
			it.Reason = fmt.Sprintf("roofline caps it at %s", pct(reach))
			return it
		}
		return verdict(float64(k.CubeUtil))
	case "DMA/compute overlap":
		if k.DMACycles == 0 || k.VectorCycles+k.CubeCycles == 0 {
			it.Reason = "no DMA or no compute to overlap"
			return it
		}
		if r, ok := roofline(c); ok {
			if why := latencyBound(r); why != "" {
				it.Reason = why
				return it
			}
		}
		if m := float64(k.OverlapMax); math.IsNaN(m) {
			it.Reason = "device " + k.Device + " unknown"
			return it
		} else if m <= t.Threshold {
			it.Reason = fmt.Sprintf("first load and last store cannot hide: at most %s", pct(m))
			return it
		}
		return verdict(float64(k.Overlap))
	case "UB reuse":
		if k.UBReadBytes == 0 {
			it.Reason = "no compute reads UB"
			return it
		}
		if k.UBLoadBytes >= k.UBReadBytes {
			// Every byte compute reads was loaded for that one read: an
			// element-wise pass, whose only way to reuse UB would be to
			// read the same bytes again for nothing. Like a roofline cap,
			// the target does not apply to it.
			it.Reason = "compute reads each UB byte once, as loaded: no reuse to gain"
			return it
		}
		return verdict(float64(k.UBReuse))
	case "load balance":
		if k.BlockDim <= 1 {
			it.Reason = "one core"
			return it
		}
		return verdict(float64(k.LoadBalance))
	case "inter-core traffic":
		// Cycles spent moving data between cores, over the kernel's
		// cycles: none can be spent (interCoreNote).
		return verdict(0)
	}
	it.Reason = "unknown metric"
	return it
}

// latencyBound says why a throughput target does not apply when the
// least time for the case's work is the fixed DMA latency: no kernel can
// keep a unit busy or hide transfers behind compute that takes less time
// than one transfer's latency. "" when the work dominates.
func latencyBound(r Roofline) string {
	work := max(r.Cube, r.Vector, r.Memory)
	if r.Latency <= work {
		return ""
	}
	return fmt.Sprintf("latency-bound: %.0f cycles of work under %.0f cycles of DMA latency", work, r.Latency)
}

func pct(x float64) string {
	if x < 0.01 {
		return fmt.Sprintf("%.2g %%", 100*x)
	}
	return fmt.Sprintf("%.0f %%", 100*x)
}

// Performance is the checklist section: per op and target, how many cases
// pass, fail and cannot be judged, and why not.
type Performance struct{ Cases []Case }

// Key implements Section.
func (*Performance) Key() string { return "performance" }

// Tally is one op × target of the checklist.
type Tally struct {
	Op          string         `json:"op"`
	Metric      string         `json:"metric"`
	Pass        int            `json:"pass"`
	Fail        int            `json:"fail"`
	NA          int            `json:"na"`
	NotModelled int            `json:"not_modelled"`
	Reasons     map[string]int `json:"na_reasons"` // n/a reason → cases; ratios in reasons are folded to the reason's stem
	FailCases   []string       `json:"fail_cases"`
}

func (p *Performance) tallies() []Tally {
	var out []Tally
	for _, op := range opsOf(p.Cases) {
		for _, t := range Targets {
			tl := Tally{Op: op, Metric: t.Metric, Reasons: map[string]int{}, FailCases: []string{}}
			for i := range p.Cases {
				c := &p.Cases[i]
				if c.Op != op {
					continue
				}
				it := judge(c, t)
				switch it.Status {
				case StatusPass:
					tl.Pass++
				case StatusFail:
					tl.Fail++
					tl.FailCases = append(tl.FailCases, c.ID)
				case StatusNotModelled:
					tl.NotModelled++
				default:
					tl.NA++
					tl.Reasons[stem(it.Reason)]++
				}
			}
			out = append(out, tl)
		}
	}
	return out
}

// stem drops the figure from a reason ("roofline caps it at 3 %" →
// "roofline caps it"), so reasons can be counted.
func stem(r string) string {
	for _, sep := range []string{" at ", ": "} {
		if i := strings.Index(r, sep); i >= 0 {
			return r[:i]
		}
	}
	return r
}

func (t *Tally) text(bold func(string) string) string {
	if t.NotModelled > 0 && t.Pass+t.Fail+t.NA == 0 {
		return "not modelled"
	}
	var parts []string
	if t.Pass > 0 {
		parts = append(parts, fmt.Sprintf("%d pass", t.Pass))
	}
	if t.Fail > 0 {
		parts = append(parts, bold(fmt.Sprintf("%d fail", t.Fail)))
	}
	if t.NA > 0 {
		parts = append(parts, fmt.Sprintf("%d n/a", t.NA))
	}
	return strings.Join(parts, ", ")
}

func (t *Tally) reasons() string {
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(t.Reasons)) {
		parts = append(parts, fmt.Sprintf("%s (%d)", r, t.Reasons[r]))
	}
	return strings.Join(parts, ", ")
}

const perfIntro = "Per case from the cost model: pass/fail where the case's shape can reach the target, n/a where it cannot " +
	"(its roofline — the least cycles any kernel needs for its cube, vector and GM work and DMA latency — or a single core " +
	"rules the target out), not modelled where the cost model has no such figure."

// Markdown implements Section.
func (p *Performance) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "## Performance checklist\n\n%s\n\n%s\n\n", perfNote, perfIntro)
	head := []string{"op"}
	for _, t := range Targets {
		head = append(head, t.Metric+" "+t.Target)
	}
	fmt.Fprintf(ew, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat(" --- |", len(head)))
	tl := p.tallies()
	bold := func(s string) string { return "**" + s + "**" }
	for i := 0; i < len(tl); i += len(Targets) {
		row := []string{tl[i].Op}
		for j := range Targets {
			row = append(row, tl[i+j].text(bold))
		}
		fmt.Fprintf(ew, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(ew)
	for _, t := range tl {
		if r := t.reasons(); r != "" {
			fmt.Fprintf(ew, "- %s, %s n/a: %s\n", t.Op, t.Metric, r)
		}
	}
	for _, t := range Targets {
		if t.NotModelled != "" {
			fmt.Fprintf(ew, "- %s: not modelled (%s)\n", t.Metric, t.NotModelled)
		}
		if t.Note != "" {
			fmt.Fprintf(ew, "- %s: %s\n", t.Metric, t.Note)
		}
	}
	fmt.Fprintln(ew)
	return ew.err
}

// JSON implements Section.
func (p *Performance) JSON() any {
	return struct {
		Targets []Target `json:"targets"`
		Tallies []Tally  `json:"tallies"`
	}{Targets, p.tallies()}
}
