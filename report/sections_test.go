package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/npuverify/npuverify/ops"
	"github.com/npuverify/npuverify/verify"
)

// The tables here are made up: this package renders what package
// experiments computes, so its tests render fixed data and do not run a
// backend or a kernel to get some. experiments' tests compute the tables
// and render them too.

// precisionFixture is a precision-mode table with a row per gemm mode on
// two distributions, its RMSE growing mode by mode, one row over its bound.
func precisionFixture() *PrecisionTable {
	t := &PrecisionTable{Config: PrecisionConfig{M: 32, K: 64, N: 16, Dists: []string{ops.DistUniform, ops.DistCancel}, Seed: 1}, Backend: "emulator"}
	for d, dist := range t.Config.Dists {
		for m, mode := range ops.GEMMModes() {
			e := math.Pow(10, float64(m-8+d))
			t.Rows = append(t.Rows, PrecisionRow{
				Dist: dist, Mode: mode.Name, Cycles: int64(1000 + 100*m), GMBytes: int64(4096 * (m + 1)), CubeUtil: verify.Float(0.25 * float64(d+1)),
				MaxRel: verify.Float(4 * e), MERE: verify.Float(e / 2), RMSE: verify.Float(e), Cosine: verify.Float(1 - e),
				BoundPassed: d == 0 || m > 0, Tightness: verify.Float(0.1 * float64(m+1)),
			})
		}
	}
	return t
}

// decodingFixture is a decoding comparison at two context lengths whose
// rows add up as IncrementalVsRecompute's do; one overlap is undefined.
func decodingFixture() *DecodingTable {
	t := &DecodingTable{Config: DecodingConfig{B: 2, Hq: 4, Hkv: 2, D: 64, Lengths: []int{64, 256}, Seed: 3}, Device: "ascend910b"}
	for i, l := range t.Config.Lengths {
		r := DecodingRow{L: l, KVUpdateCycles: 5000, AttentionCycles: int64(3000 * (i + 1)), ProjectionCycles: int64(6000 * (2*i + 1))}
		r.Incremental = DecodingPath{Cycles: r.KVUpdateCycles + r.AttentionCycles, Launches: 2, UBPeakBytes: 65536, Overlap: verify.Float(0.5)}
		r.Recompute = DecodingPath{Cycles: r.ProjectionCycles + r.AttentionCycles, Launches: 2*t.Config.Hkv + 1, UBPeakBytes: 98304, Overlap: verify.Float(math.NaN())}
		r.Speedup = float64(r.Recompute.Cycles) / float64(r.Incremental.Cycles)
		t.Rows = append(t.Rows, r)
	}
	return t
}

// TestPrecisionTableRendered: every mode gets a row, and the description
// names the configuration and backend the rows came from.
func TestPrecisionTableRendered(t *testing.T) {
	tab := precisionFixture()
	var md bytes.Buffer
	if err := tab.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, mode := range ops.GEMMModes() {
		if !strings.Contains(md.String(), "| "+mode.Name+" |") {
			t.Errorf("precision table markdown lacks mode %s:\n%s", mode.Name, md.String())
		}
	}
	for _, s := range []string{"## GEMM precision modes", "A [32×64], B [64×16]", "(seed 1)", "backend emulator", "| FAIL (", "| pass ("} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("precision table markdown lacks %q:\n%s", s, md.String())
		}
	}
}

// TestDecodingTableRendered: the section renders the same twice in every
// format, with both plots, and an undefined overlap as a dash.
func TestDecodingTableRendered(t *testing.T) {
	var out [2]string
	for i := range out {
		var b bytes.Buffer
		r := &Report{Title: "t", Sections: []Section{decodingFixture()}}
		if err := r.JSON(&b); err != nil {
			t.Fatal(err)
		}
		if err := r.Markdown(&b); err != nil {
			t.Fatal(err)
		}
		if err := r.HTML(&b); err != nil {
			t.Fatal(err)
		}
		out[i] = b.String()
	}
	if out[0] != out[1] {
		t.Error("decoding table: two renderings differ")
	}
	for _, s := range []string{`"incremental_decoding"`, "## Incremental decoding vs full recompute", "| 256 |", "0.50 / —", `id="plot-decoding-1"`, `id="plot-decoding-2"`} {
		if !strings.Contains(out[0], s) {
			t.Errorf("decoding table: rendered report lacks %q", s)
		}
	}
}
