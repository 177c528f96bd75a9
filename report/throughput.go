package report

import (
	"fmt"
	"html/template"
	"io"

	"github.com/npuverify/npuverify/perf"
	"github.com/npuverify/npuverify/verify"
)

// SetRoofline recomputes the case's roofline on the device with peaks p
// (FromOutcome takes ascend910b's): `check --device` or `--profile` name
// the device the kernel ran on. A case without a roofline keeps none.
func (c *Case) SetRoofline(p perf.Peaks) {
	if c.Roofline == nil {
		return
	}
	r := perf.RooflineOf(c.Roofline.Work, p)
	c.Roofline = &r
}

// timed reports whether the case has kernel times and a roofline, the
// two the Throughput section compares.
func (c *Case) timed() bool { return c.Roofline != nil && len(c.KernelSeconds) > 0 }

// Throughput is the section on kernels that report their own times (an
// exec or worker kernel's timing.json): per case the median kernel time,
// the achieved GB/s (of the least traffic the case needs) and GFLOP/s,
// and the share of the roofline reached, the least time any kernel needs
// for the case's work on the device (package perf). FromCases adds it
// when some case has times.
type Throughput struct{ Cases []Case }

// Key implements Section.
func (*Throughput) Key() string { return "throughput" }

// ThroughputRow is one timed case in the Throughput section.
type ThroughputRow struct {
	Case    string `json:"case"`
	Verdict string `json:"verdict"`
	Device  string `json:"device"`
	Samples int    `json:"samples"`
	// MedianSeconds is the median kernel time.
	MedianSeconds verify.Float `json:"median_s"`
	GBps          verify.Float `json:"gb_per_s"`
	GFLOPs        verify.Float `json:"gflop_per_s"`
	// RooflineSeconds is the attainable time and Bound its roof.
	RooflineSeconds verify.Float `json:"roofline_s"`
	Bound           string       `json:"bound"`
	// Efficiency is RooflineSeconds/MedianSeconds (1 at the roof).
	Efficiency verify.Float `json:"efficiency"`
	// LatencyBound is true when the roofline is below the device's fixed
	// latency: the efficiency says little there, and check does not judge it.
	LatencyBound bool `json:"latency_bound,omitempty"`
}

// Rows are the timed cases in ID order.
func (s *Throughput) Rows() []ThroughputRow {
	var rows []ThroughputRow
	for i := range s.Cases {
		c := &s.Cases[i]
		if !c.timed() {
			continue
		}
		r := c.Roofline
		med := perf.Median(c.KernelSeconds)
		rows = append(rows, ThroughputRow{
			Case: c.ID, Verdict: c.Verdict, Device: r.Device, Samples: len(c.KernelSeconds),
			MedianSeconds: verify.Float(med), GBps: verify.Float(r.GBps(med)), GFLOPs: verify.Float(r.GFLOPs(med)),
			RooflineSeconds: verify.Float(r.Seconds), Bound: r.Bound, Efficiency: verify.Float(r.Efficiency(med)),
			LatencyBound: !r.ThroughputBound(),
		})
	}
	return rows
}

// JSON implements Section.
func (s *Throughput) JSON() any {
	rows := s.Rows()
	if rows == nil {
		rows = []ThroughputRow{}
	}
	return rows
}

const throughputIntro = "Measured kernel times (the median of the times the kernel reported) against the roofline: the least time any kernel " +
	"needs for the case's work, the largest of its minimum GM traffic at the device's bandwidth, its cube flops at the cube rate of " +
	"their input type and its vector operations at the vector rate for their width. GB/s and GFLOP/s are that work over the median " +
	"time; % of roofline is roofline / median. A roofline below the device's fixed latency is latency-bound (marked *): " +
	"check --min-efficiency does not judge it."

func (r *ThroughputRow) cells() []string {
	roof := num(100*float64(r.Efficiency)) + " %"
	if r.LatencyBound {
		roof += " *"
	}
	return []string{
		perf.Duration(float64(r.MedianSeconds)) + fmt.Sprintf(" (%d)", r.Samples),
		num(float64(r.GBps)), num(float64(r.GFLOPs)),
		perf.Duration(float64(r.RooflineSeconds)), r.Bound, roof,
	}
}

// Markdown implements Section.
func (s *Throughput) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	rows := s.Rows()
	fmt.Fprintf(ew, "## Kernel throughput\n\n%s\n\n", throughputIntro)
	if len(rows) == 0 {
		fmt.Fprint(ew, "No case reported kernel times.\n\n")
		return ew.err
	}
	fmt.Fprintln(ew, "| case | verdict | device | kernel time (samples) | GB/s | GFLOP/s | roofline | bound | % of roofline |")
	fmt.Fprintln(ew, "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for i := range rows {
		r := &rows[i]
		c := r.cells()
		fmt.Fprintf(ew, "| [%s](#%s) | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Case, anchor(r.Case), r.Verdict, cell(r.Device),
			c[0], c[1], c[2], c[3], c[4], c[5])
	}
	fmt.Fprintln(ew)
	return ew.err
}

var throughputHTML = template.Must(template.New("throughput").Parse(`<h2>Kernel throughput</h2>
<p>{{.Intro}}</p>
{{- if .Rows}}
<table>
<tr><th>case</th><th>verdict</th><th>device</th><th>kernel time (samples)</th><th>GB/s</th><th>GFLOP/s</th><th>roofline</th><th>bound</th><th>% of roofline</th></tr>
{{- range .Rows}}
<tr><td><a href="#{{.Anchor}}">{{.Case}}</a></td><td class="{{.Class}}">{{.Verdict}}</td><td>{{.Device}}</td>{{range .Cells}}<td class="n">{{.}}</td>{{end}}</tr>
{{- end}}
</table>
{{- else}}
<p>No case reported kernel times.</p>
{{- end}}
`))

// HTML implements HTMLSection.
func (s *Throughput) HTML(w io.Writer) error {
	type rowView struct {
		Case, Anchor, Verdict, Class, Device string
		Cells                                []string
	}
	anchors := anchorMap(s.Cases)
	var rows []rowView
	for _, r := range s.Rows() {
		rows = append(rows, rowView{Case: r.Case, Anchor: anchors[r.Case], Verdict: r.Verdict, Class: verdictClass(r.Verdict), Device: r.Device, Cells: r.cells()})
	}
	return throughputHTML.Execute(w, struct {
		Intro string
		Rows  []rowView
	}{throughputIntro, rows})
}
