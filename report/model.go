package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/npuverify/npuverify/backend"
	"github.com/npuverify/npuverify/harness"
	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/perf"
	"github.com/npuverify/npuverify/safefile"
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
	Device     string       `json:"device"`
	Cycles     int64        `json:"cycles"`
	Seconds    verify.Float `json:"seconds"`
	GMBytesIn  int64        `json:"gm_bytes_in"`
	GMBytesOut int64        `json:"gm_bytes_out"`
	// HBMBytes and L2HitBytes are npu.Cost's: the launch's HBM traffic
	// and the bytes its reads found in L2 (0 on a device without L2, or
	// in a report written before L2 was modelled).
	HBMBytes    int64        `json:"hbm_bytes,omitempty"`
	L2HitBytes  int64        `json:"l2_hit_bytes,omitempty"`
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
// label, else the mode or dtype param, else the cache_dtype param (a KV
// cache's precision: decode_attention, kv_update), else "—".
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
	if v := c.Params["cache_dtype"]; v != "" {
		return v
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
		HBMBytes: k.HBMBytes, L2HitBytes: k.L2HitBytes,
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
		_, xfer := p.GMPath(npu.AICore) // a transfer's latency: L2's, or dma_latency_cycles without L2
		for _, b := range []int64{k.GMBytesIn, k.GMBytesOut} {
			if b > 0 {
				lat += int64(xfer)
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

// The meta keys of a `check --json` file that say which part of which run
// it holds (docs/cli.md, report --merge). Files written before they existed
// lack them and are merged without the completeness check.
const (
	// MetaShard is "I/N" on a sharded run's file (absent when unsharded).
	MetaShard = "shard"
	// MetaRun identifies the run: a digest of what decides which cases
	// run and how (backend, profile, store, the selection before sharding,
	// the shard count), so that every shard of one run records the same
	// value and a shard of another run or store differs.
	MetaRun = "run"
	// MetaRunCases is how many cases the whole run selects (every shard
	// together).
	MetaRunCases = "run_cases"
	// MetaInterrupted is set on the file of a run a signal cut short.
	MetaInterrupted = "interrupted"
	// MetaPartial is set on a merged report that lacks part of its run
	// (report --merge --allow-partial): the shards merged and missing.
	MetaPartial = "partial"
)

// MaxResultsBytes caps one result file that ReadResults reads: a whole
// run of the default store writes about a megabyte, so the cap leaves
// room for stores far larger while a FIFO, a device or a runaway file
// costs at most this much memory (its decoded cases cost a few times
// more).
const MaxResultsBytes = 64 << 20

// ReadResults reads the "meta" and "cases" of a JSON report through the
// bounded reader: at most maxBytes bytes of a regular file (no FIFO,
// device or symbolic link), else an error naming path and the cap.
func ReadResults(path string, maxBytes int64) (*Results, error) {
	b, err := safefile.ReadFile(path, maxBytes)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", safefile.Quote(path), err)
	}
	if r.Cases == nil {
		return nil, fmt.Errorf("%s: no \"cases\": not a npuverify JSON report", safefile.Quote(path))
	}
	for i := range r.Cases {
		if r.Cases[i].ID == "" {
			return nil, fmt.Errorf("%s: case %d has no id", safefile.Quote(path), i)
		}
		r.Cases[i].normalise()
	}
	if r.Meta == nil {
		r.Meta = map[string]string{}
	}
	return &r, nil
}

// Merged says what Merge joined: which shards of which run, and what is
// missing.
type Merged struct {
	// Files is how many result files were merged.
	Files int
	// Run is the run ID the files share ("" when they record none).
	Run string
	// Shards is the run's shard count N (0: no file records a shard).
	Shards int
	// Have are the shard indices merged, Missing those of 1..N that are
	// not, both ascending.
	Have, Missing []int
	// Unrecorded is how many files record no shard or run (written by an
	// older npuverify, or by explore): their completeness is not known.
	Unrecorded int
	// Interrupted names the files of runs a signal cut short.
	Interrupted []string
	// Cases is how many cases were merged; RunCases how many the whole
	// run selects (0 when the files do not say).
	Cases, RunCases int
}

// Complete reports whether nothing is known to be missing: every shard
// 1..N present, no run cut short, and as many cases as the run selects.
func (m *Merged) Complete() bool {
	return len(m.Missing) == 0 && len(m.Interrupted) == 0 && (m.RunCases == 0 || m.Cases == m.RunCases)
}

// String says what was merged in one line, e.g. "3 files: shards 1/3,
// 2/3, 3/3 of run 1f0c…, 233 of 233 cases".
func (m *Merged) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d file(s)", m.Files)
	if m.Shards > 0 {
		b.WriteString(": shard")
		if len(m.Have) > 1 {
			b.WriteString("s")
		}
		for i, s := range m.Have {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, " %d/%d", s, m.Shards)
		}
	}
	if m.Run != "" {
		fmt.Fprintf(&b, " of run %s", m.Run)
	}
	if m.RunCases > 0 {
		fmt.Fprintf(&b, ", %d of %d cases", m.Cases, m.RunCases)
	} else {
		fmt.Fprintf(&b, ", %d cases", m.Cases)
	}
	if len(m.Missing) > 0 {
		miss := make([]string, len(m.Missing))
		for i, s := range m.Missing {
			miss[i] = fmt.Sprintf("%d/%d", s, m.Shards)
		}
		fmt.Fprintf(&b, "; missing shard(s) %s", strings.Join(miss, ", "))
	}
	if len(m.Interrupted) > 0 {
		fmt.Fprintf(&b, "; interrupted: %s", strings.Join(m.Interrupted, ", "))
	}
	if m.Unrecorded > 0 {
		fmt.Fprintf(&b, "; %d file(s) record no shard or run (completeness not checked)", m.Unrecorded)
	}
	return b.String()
}

// ErrIncomplete is wrapped by Merge's error when the files lack part of
// their run (a missing shard, a run cut short, fewer cases than the run
// selected) and partial merges are not allowed.
var ErrIncomplete = errors.New("incomplete run")

// ErrEmpty is wrapped by Merge's error when the files hold no case at
// all: an empty result is nothing to pass. Explore's results are the
// exception: their cases are its findings, and a search that found
// nothing is its result (MetaCommand CommandExplore).
var ErrEmpty = errors.New("no case to report")

// MetaCommand is the meta key naming the command that wrote a result
// file, and CommandExplore its value for `npuverify explore`.
const (
	MetaCommand    = "command"
	CommandExplore = "npuverify explore"
)

// perFile are the meta keys that differ between the files of one run and
// are bookkeeping, not facts about the report: Merge checks them and
// leaves them out of the merged meta, so that a complete merge equals the
// report of the unsharded run.
var perFile = []string{MetaShard, MetaRun, MetaRunCases, MetaInterrupted}

// Merge joins the results of several runs (e.g. the shards of one check)
// into one: the cases of all, sorted by ID, and the meta they share. It
// fails when a case appears twice, when the runs disagree on a meta
// value (backend, profile, store): those are different runs, not shards,
// when the files hold no case (ErrEmpty), and, unless allowPartial, when
// they lack part of their run (ErrIncomplete): a missing shard, one cut
// short by a signal, fewer cases than the run selected. A partial merge
// that is allowed carries MetaPartial in its meta. Merged says what was
// joined either way.
func Merge(rs []*Results, names []string, allowPartial bool) (*Results, *Merged, error) {
	out := &Results{Meta: map[string]string{}}
	info := &Merged{Files: len(rs)}
	from := map[string]string{}
	shardOf := map[int]string{}
	var shared map[string]string
	for i, r := range rs {
		meta := maps.Clone(r.Meta)
		if err := info.add(meta, names[i], shardOf); err != nil {
			return nil, nil, err
		}
		for _, k := range perFile {
			delete(meta, k)
		}
		if i == 0 {
			shared = meta
		}
		for _, k := range slices.Sorted(maps.Keys(meta)) {
			if w, ok := shared[k]; !ok || w != meta[k] {
				return nil, nil, fmt.Errorf("%s: meta %s = %q, but %s has %q", names[i], k, meta[k], names[0], w)
			}
		}
		if len(meta) != len(shared) {
			return nil, nil, fmt.Errorf("%s: meta %v differs from %s's %v", names[i], meta, names[0], shared)
		}
		for _, c := range r.Cases {
			if f, dup := from[c.ID]; dup {
				return nil, nil, fmt.Errorf("%s: case %s is also in %s (shards overlap)", names[i], c.ID, f)
			}
			from[c.ID] = names[i]
			out.Cases = append(out.Cases, c)
		}
	}
	maps.Copy(out.Meta, shared)
	info.Cases = len(out.Cases)
	for s := 1; s <= info.Shards; s++ {
		if _, ok := shardOf[s]; ok {
			info.Have = append(info.Have, s)
		} else {
			info.Missing = append(info.Missing, s)
		}
	}
	if info.Cases == 0 && shared[MetaCommand] != CommandExplore {
		return nil, info, fmt.Errorf("%s: %w: an empty result is not a pass", info, ErrEmpty)
	}
	if !info.Complete() {
		if !allowPartial {
			return nil, info, fmt.Errorf("%s: %w (--allow-partial renders it anyway, marked partial)", info, ErrIncomplete)
		}
		out.Meta[MetaPartial] = info.String()
	}
	slices.SortStableFunc(out.Cases, func(a, b Case) int { return strings.Compare(a.ID, b.ID) })
	return out, info, nil
}

// add records one file's shard, run and case count in m; it fails when
// the file's shard is malformed, taken by another file, or of another run.
func (m *Merged) add(meta map[string]string, name string, shardOf map[int]string) error {
	run, sh, rc := meta[MetaRun], meta[MetaShard], meta[MetaRunCases]
	if v, ok := meta[MetaInterrupted]; ok {
		m.Interrupted = append(m.Interrupted, fmt.Sprintf("%s (%s)", name, v))
	}
	if run == "" && sh == "" {
		m.Unrecorded++
		return nil
	}
	if m.Run == "" && m.Shards == 0 && m.RunCases == 0 {
		m.Run = run
		if rc != "" {
			n, err := strconv.Atoi(rc)
			if err != nil || n < 0 {
				return fmt.Errorf("%s: meta %s = %q: want a case count", name, MetaRunCases, rc)
			}
			m.RunCases = n
		}
	} else if run != m.Run || (rc != "" && rc != strconv.Itoa(m.RunCases)) {
		return fmt.Errorf("%s: meta %s = %q (%s cases), another run than the files before it (%s, %d cases)", name, MetaRun, run, rc, m.Run, m.RunCases)
	}
	i, n := 1, 1
	if sh != "" {
		var err error
		if i, n, err = parseShard(sh); err != nil {
			return fmt.Errorf("%s: meta %s = %q: %w", name, MetaShard, sh, err)
		}
	}
	if m.Shards == 0 {
		m.Shards = n
	} else if n != m.Shards {
		return fmt.Errorf("%s: shard %d/%d, but the files before it are of %d shards", name, i, n, m.Shards)
	}
	if f, dup := shardOf[i]; dup {
		return fmt.Errorf("%s: shard %d/%d is also %s (shards overlap)", name, i, n, f)
	}
	shardOf[i] = name
	return nil
}

// parseShard parses "I/N" with 1 ≤ I ≤ N.
func parseShard(s string) (int, int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || i < 1 || i > n {
		return 0, 0, errors.New("want I/N with 1 ≤ I ≤ N")
	}
	return i, n, nil
}
