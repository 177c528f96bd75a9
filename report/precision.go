package report

import (
	"fmt"
	"io"
	"time"

	"github.com/npuverify/npuverify/verify"
)

// PrecisionConfig sets up a precision-mode table: GEMM of size M×K×N on
// one float64 source per distribution, cast to every mode.
type PrecisionConfig struct {
	M, K, N int
	Dists   []string
	Seed    uint64
	// Timeout bounds each long step of the table (a distribution's
	// source and float64 product, each mode's run and reference) as
	// --timeout bounds a case's; 0 = no limit. Not rendered.
	Timeout time.Duration `json:"-"`
}

// PrecisionRow is one mode on one distribution. Errors are measured
// against the float64 product of the float64 source, not against the
// reference on the cast inputs: the row says what the mode loses, input
// casting and quantisation included.
type PrecisionRow struct {
	Dist        string       `json:"dist"`
	Mode        string       `json:"mode"`
	Cycles      int64        `json:"cycles"`
	GMBytes     int64        `json:"gm_bytes"`
	HBMBytes    int64        `json:"hbm_bytes,omitempty"` // the launch's HBM traffic (npu.Cost.HBMBytes; an L2 serves the rest)
	CubeUtil    verify.Float `json:"cube_util"`
	MaxRel      verify.Float `json:"max_rel"`
	MERE        verify.Float `json:"mere"`
	RMSE        verify.Float `json:"rmse"`
	Cosine      verify.Float `json:"cosine"`
	BoundPassed bool         `json:"bound_passed"` // the run passes: output within the mode's own bound, inputs unchanged
	Tightness   verify.Float `json:"tightness"`    // max err/bound against the mode's own reference
	Seconds     float64      `json:"-"`
}

// PrecisionTable is the report section answering "what does each GEMM
// precision mode cost and lose" on the backend that produced it.
// experiments.PrecisionModes fills it by running gemm through the
// harness; this package only renders it.
type PrecisionTable struct {
	Config  PrecisionConfig `json:"config"`
	Backend string          `json:"backend"`
	Rows    []PrecisionRow  `json:"rows"`
}

// Key implements Section.
func (*PrecisionTable) Key() string { return "gemm_precision_modes" }

// JSON implements Section.
func (t *PrecisionTable) JSON() any { return t }

// Markdown implements Section.
func (t *PrecisionTable) Markdown(w io.Writer) error {
	c := t.Config
	fmt.Fprintf(w, "## GEMM precision modes\n\n")
	fmt.Fprintf(w, "One float64 source A [%d×%d], B [%d×%d] per distribution (seed %d), cast to each mode's input dtype "+
		"(int8: symmetric per-row/per-column scales, max |x| → 127), run on backend %s. Errors are against the float64 "+
		"product of the source; *bound* says whether the output is within the mode's own rigorous bound, with its tightness.\n\n",
		c.M, c.K, c.K, c.N, c.Seed, t.Backend)
	fmt.Fprintln(w, "| dist | mode | cycles | GM bytes | HBM bytes | cube util | max rel err | MERE | RMSE | cosine | bound (tightness) |")
	fmt.Fprintln(w, "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range t.Rows {
		verdict := "pass"
		if !r.BoundPassed {
			verdict = "FAIL"
		}
		_, err := fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %.3f | %.3g | %.3g | %.3g | %.9f | %s (%.3g) |\n",
			r.Dist, r.Mode, r.Cycles, r.GMBytes, r.HBMBytes, float64(r.CubeUtil), float64(r.MaxRel), float64(r.MERE), float64(r.RMSE), float64(r.Cosine), verdict, float64(r.Tightness))
		if err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n\n", precisionNote)
	return err
}
