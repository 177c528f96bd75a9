package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/perf"
	"github.com/npuverify/npuverify/verify"
)

// Case is one case as the report knows it: everything every section
// renders, and exactly what the JSON report stores under "cases". A report
// is rendered from Cases only, never from live harness results, so that a
// report rebuilt from JSON (Merge: the results of several `check --shard`
// runs) is byte for byte the report of the run itself.
type Case struct {
	ID       string            `json:"id"`
	Op       string            `json:"op"`
	Params   map[string]string `json:"params"`
	Dims     map[string]int    `json:"dims"`
	Dist     string            `json:"dist"`
	Seed     uint64            `json:"seed"`
	Labels   []string          `json:"labels"`
	Numerics string            `json:"numerics,omitempty"`
	Policies []string          `json:"policies"`
	Verdict  string            `json:"verdict"`
	Error    string            `json:"error,omitempty"`
	// Failure is the verifier's failure report ("" when every output
	// passed its policies).
	Failure string          `json:"failure,omitempty"`
	Outputs []Output        `json:"outputs"`
	Checks  []harness.Check `json:"checks"`
	// Cost is the modelled cost, nil when the backend models none.
	Cost *Cost `json:"cost"`
	// KernelSeconds are the kernel times the backend measured (an exec
	// kernel's timing.json), in the order measured; nil when none.
	KernelSeconds []float64 `json:"kernel_seconds,omitempty"`
	// Roofline is the case's least time on the device (its work and the
	// device's peaks), set when the backend reported kernel times: the
	// Throughput section compares the two (SetRoofline chooses the device).
	Roofline *perf.Roofline `json:"roofline,omitempty"`
}

// Output is the verdict on one output tensor.
type Output struct {
	Name     string         `json:"name"`
	DType    string         `json:"dtype"`
	Shape    []int          `json:"shape"`
	Metrics  verify.Metrics `json:"metrics"`
	Verdicts []Verdict      `json:"verdicts"`
}

// Verdict is one policy's verdict on an output.
type Verdict struct {
	Policy string `json:"policy"`
	Pass   bool   `json:"pass"`
	Reason string `json:"reason"`
}

// Cost is the modeled cost of a case: npu.Cost without the per-core
// arrays, plus the per-core counters summed over cores and the one figure
// the performance checklist needs per core (OverlapMax).
type Cost struct {
	Device      string       `json:"device"`
	Cycles      int64        `json:"cycles"`
	Seconds     verify.Float `json:"seconds"`
	GMBytesIn   int64        `json:"gm_bytes_in"`
	GMBytesOut  int64        `json:"gm_bytes_out"`
	VectorUtil  verify.Float `json:"vector_util"`
	CubeUtil    verify.Float `json:"cube_util"`
	Overlap     verify.Float `json:"overlap"`
	LoadBalance verify.Float `json:"load_balance"`
	UBPeakBytes int64        `json:"ub_peak_bytes"`
	BlockDim    int          `json:"block_dim"`
	// UBReuse is npu.Cost.UBReuse, NaN when compute reads no UB
	// (UBReadBytes = 0), where the ratio has nothing to measure.
	UBReuse     verify.Float `json:"ub_reuse"`
	UBLoadBytes int64        `json:"ub_load_bytes"` // npu.Cost.UBLoadBytes
	UBReadBytes int64        `json:"ub_read_bytes"` // npu.Cost.UBReadBytes
	UBOutBytes  int64        `json:"ub_out_bytes"`  // npu.Cost.UBOutBytes

	// Summed over cores.
	DMACycles      int64 `json:"dma_cycles"`
	VectorCycles   int64 `json:"vector_cycles"`
	CubeCycles     int64 `json:"cube_cycles"`
	VectorBytes    int64 `json:"vector_bytes"`
	CubeMACs       int64 `json:"cube_macs"`
	CubeUsefulMACs int64 `json:"cube_useful_macs"`
	// OverlapMax is the largest DMA/compute overlap any pipelining of the
	// same transfers could reach: each core's first load precedes all its
	// compute and its last store follows it, each at least the profile's
	// DMA latency, so at most DMA − 2·latency of a core's DMA cycles (one
	// latency when traffic goes one way only) can hide behind compute. NaN
	// when the device profile is unknown or nothing can overlap.
	OverlapMax verify.Float `json:"overlap_max"`
}

// Tightness is the largest bound tightness over the case's outputs, NaN
// when the case was not judged.
func (c *Case) Tightness() float64 {
	if c.Error != "" || len(c.Outputs) == 0 {
		return math.NaN()
	}
	t := 0.0
	for _, o := range c.Outputs {
		t = math.Max(t, o.Metrics.Tightness)
	}
	return t
}

// Variant is the column of the case in the summary matrix: the value of
// its "mode:" label (ops with precision modes), else of its "dtype:"
// label, else the mode or dtype param, else "—".
func (c *Case) Variant() string {
	for _, prefix := range []string{"mode:", "dtype:"} {
		for _, l := range c.Labels {
			if v, ok := strings.CutPrefix(l, prefix); ok {
				return v
			}
		}
		if v := c.Params[strings.TrimSuffix(prefix, ":")]; v != "" {
			return v
		}
	}
	return "—"
}

// FromOutcome converts a harness outcome to the report's record of it.
func FromOutcome(o *harness.Outcome) Case {
	hc := o.Ran()
	c := Case{
		ID: o.ID, Op: hc.Op, Params: map[string]string(hc.Params), Dims: hc.Dims, Dist: hc.Dist, Seed: hc.Seed,
		Labels: hc.Labels, Policies: o.Policies, Verdict: o.Verdict(), Checks: o.Checks,
	}
	if o.Err != nil {
		c.Error = o.Err.Error()
	}
	if r := o.Result; r != nil {
		c.Params = map[string]string(r.Params)
		c.Numerics = r.Numerics.String()
		if r.Verify != nil {
			c.Failure = r.Verify.Failure()
			for _, out := range r.Verify.Outputs {
				oj := Output{Name: out.Name, DType: out.DType.String(), Shape: out.Shape, Metrics: out.Metrics}
				for _, v := range out.Verdicts {
					oj.Verdicts = append(oj.Verdicts, Verdict{Policy: v.Policy, Pass: v.Pass, Reason: v.Reason})
				}
				c.Outputs = append(c.Outputs, oj)
			}
		}
		if m := r.Measurement; m != nil {
			if k := modelledCost(m); k != nil {
				c.Cost = costOf(k)
			}
			c.KernelSeconds = m.KernelSeconds
			if len(m.KernelSeconds) > 0 {
				if w, err := perf.WorkOf(hc.Op, r.Params, r.Inputs); err == nil {
					rl := perf.RooflineOf(w, perf.PeaksOf(npu.Ascend910B()))
					c.Roofline = &rl
				}
			}
		}
	}
	c.normalise()
	return c
}

// modelledCost is the emulator's cost a measurement carries as its
// model's detail, or nil: another backend's model is not the emulator's,
// whose figures the report's tables and checklist read.
func modelledCost(m *backend.Measurement) *npu.Cost {
	if m.Model == nil {
		return nil
	}
	k, _ := m.Model.Detail.(*npu.Cost)
	return k
}

func costOf(k *npu.Cost) *Cost {
	c := &Cost{
		Device: k.Device, Cycles: k.Cycles, Seconds: verify.Float(k.Seconds), GMBytesIn: k.GMBytesIn, GMBytesOut: k.GMBytesOut,
		VectorUtil: verify.Float(k.VectorUtil), CubeUtil: verify.Float(k.CubeUtil), Overlap: verify.Float(k.Overlap),
		LoadBalance: verify.Float(k.LoadBalance), UBPeakBytes: k.UBPeakBytes, BlockDim: k.BlockDim,
		UBReuse: verify.Float(k.UBReuse), UBLoadBytes: k.UBLoadBytes, UBReadBytes: k.UBReadBytes, UBOutBytes: k.UBOutBytes,
	}
	if k.UBReadBytes == 0 {
		c.UBReuse = verify.Float(math.NaN())
	}
	lat := int64(-1)
	if p, err := npu.ProfileByName(k.Device); err == nil {
		lat = 0
		for _, b := range []int64{k.GMBytesIn, k.GMBytesOut} {
			if b > 0 {
				lat += int64(p.DMALatencyCycles)
			}
		}
	}
	var hideable, overlappable int64
	for _, cc := range k.Cores {
		c.DMACycles += cc.DMACycles
		c.VectorCycles += cc.VectorCycles
		c.CubeCycles += cc.CubeCycles
		c.VectorBytes += cc.VectorBytes
		c.CubeMACs += cc.CubeMACs
		c.CubeUsefulMACs += cc.CubeUsefulMACs
		compute := cc.VectorCycles + cc.CubeCycles
		overlappable += min(cc.DMACycles, compute)
		hideable += min(max(0, cc.DMACycles-lat), compute)
	}
	c.OverlapMax = verify.Float(math.NaN())
	if lat >= 0 && overlappable > 0 {
		c.OverlapMax = verify.Float(float64(hideable) / float64(overlappable))
	}
	return c
}

// normalise makes nil and empty collections the same, so that a case
// read back from JSON equals the case that was written.
func (c *Case) normalise() {
	if c.Params == nil {
		c.Params = map[string]string{}
	}
	if c.Dims == nil {
		c.Dims = map[string]int{}
	}
	for _, s := range []*[]string{&c.Labels, &c.Policies} {
		if *s == nil {
			*s = []string{}
		}
	}
	if c.Outputs == nil {
		c.Outputs = []Output{}
	}
	if c.Checks == nil {
		c.Checks = []harness.Check{}
	}
	for i := range c.Outputs {
		o := &c.Outputs[i]
		if o.Verdicts == nil {
			o.Verdicts = []Verdict{}
		}
		if o.Shape == nil {
			o.Shape = []int{}
		}
		if o.Metrics.UlpHist == nil {
			o.Metrics.UlpHist = map[string]int{}
		}
		if len(o.Metrics.Worst) == 0 {
			o.Metrics.Worst = nil
		}
	}
}

// Results are the cases and meta of one JSON report (e.g. one
// `check --shard I/N --json FILE` run).
type Results struct {
	Meta  map[string]string `json:"meta"`
	Cases []Case            `json:"cases"`
}

// ReadResults reads the "meta" and "cases" of a JSON report.
func ReadResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if r.Cases == nil {
		return nil, fmt.Errorf("%s: no \"cases\": not a npuverify JSON report", path)
	}
	for i := range r.Cases {
		if r.Cases[i].ID == "" {
			return nil, fmt.Errorf("%s: case %d has no id", path, i)
		}
		r.Cases[i].normalise()
	}
	if r.Meta == nil {
		r.Meta = map[string]string{}
	}
	return &r, nil
}

// Merge joins the results of several runs (e.g. the shards of one check)
// into one: the cases of all, sorted by ID, and the meta they share. It
// fails when a case appears twice or when the runs disagree on a meta
// value (backend, profile, store): those are different runs, not shards.
func Merge(rs []*Results, names []string) (*Results, error) {
	out := &Results{Meta: map[string]string{}}
	from := map[string]string{}
	for i, r := range rs {
		for _, k := range slices.Sorted(maps.Keys(r.Meta)) {
			v := r.Meta[k]
			if i > 0 {
				if w, ok := out.Meta[k]; !ok || w != v {
					return nil, fmt.Errorf("%s: meta %s = %q, but %s has %q", names[i], k, v, names[0], w)
				}
			}
			out.Meta[k] = v
		}
		if i > 0 && len(r.Meta) != len(out.Meta) {
			return nil, fmt.Errorf("%s: meta %v differs from %s's %v", names[i], r.Meta, names[0], out.Meta)
		}
		for _, c := range r.Cases {
			if f, dup := from[c.ID]; dup {
				return nil, fmt.Errorf("%s: case %s is also in %s (shards overlap)", names[i], c.ID, f)
			}
			from[c.ID] = names[i]
			out.Cases = append(out.Cases, c)
		}
	}
	slices.SortStableFunc(out.Cases, func(a, b Case) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
