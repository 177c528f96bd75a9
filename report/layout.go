package report

import (
	"fmt"
	"io"
)

// LayoutRow is one workload in one layout, as the cost model prices it.
type LayoutRow struct {
	Workload string `json:"workload"`
	Layout   string `json:"layout"`
	Cycles   int64  `json:"cycles"`
	// GMBytesIn and GMBytesOut are the launch's GM traffic, padding
	// included (an NC1HWC0 or NZ tensor is larger than its plain one when
	// a dimension is not a multiple of its fractal).
	GMBytesIn  int64 `json:"gm_bytes_in"`
	GMBytesOut int64 `json:"gm_bytes_out"`
	// GMBursts are the contiguous GM runs the launch's copies moved (a
	// strided copy is one per row, each charged the 32-byte blocks it
	// touches): what a plain layout's short rows cost.
	GMBursts int64 `json:"gm_bursts"`
	// DMACycles is the launch's DMA busy cycles summed over its cores.
	DMACycles int64 `json:"dma_cycles"`
}

// LayoutTable is the report section "the cost of layout": the same
// workloads over a plain and an Ascend fractal layout, side by side, as
// the emulator's cost model prices the emulated kernels.
// experiments.LayoutCost fills it, so that this package links no kernel.
type LayoutTable struct {
	Device string      `json:"device"`
	Notes  []string    `json:"notes"`
	Rows   []LayoutRow `json:"rows"`
}

// Key implements Section.
func (*LayoutTable) Key() string { return "layout_cost" }

// JSON implements Section.
func (t *LayoutTable) JSON() any { return t }

// Markdown implements Section.
func (t *LayoutTable) Markdown(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, "## The cost of layout\n\nModelled on %s: each workload in a plain layout and in the fractal one Ascend's cube and vector units prefer. ", t.Device)
	for _, n := range t.Notes {
		fmt.Fprintf(ew, "%s ", n)
	}
	fmt.Fprintf(ew, "\n\n| workload | layout | cycles | GM bytes in | GM bytes out | GM bursts | DMA cycles (all cores) |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range t.Rows {
		fmt.Fprintf(ew, "| %s | %s | %d | %d | %d | %d | %d |\n", cell(r.Workload), cell(r.Layout), r.Cycles, r.GMBytesIn, r.GMBytesOut, r.GMBursts, r.DMACycles)
	}
	fmt.Fprintln(ew)
	return ew.err
}
