// Package perf holds the performance verdicts on kernels that report their
// own times (an exec or worker kernel's timing.json): the slowdown test
// against an earlier run's times (Compare: enough samples, a Mann-Whitney
// rank test as benchstat does, a noise floor), and the roofline, the
// least time any kernel needs for a case's work on a device (Work, Peaks,
// Roofline), from which a measured time's efficiency follows. The
// statistics and the device file format are described in docs/cli.md
// ("Performance budgets on kernel times").
package perf

import (
	"fmt"
	"math"
)

// The roofs a case's roofline can be bound by (Roofline.Bound).
const (
	BoundMemory = "memory"
	BoundVector = "vector"
	// A cube bound is "cube " + the input class, e.g. "cube fp16".
	boundCube = "cube "
)

// Roofline is a case's attainable time on a device: the largest of its
// work's times at each peak rate (GM bytes at the bandwidth, cube flops at
// the cube rate of their class, vector operations at the vector rate for
// their width). No kernel, however tiled, can beat it, so a measured
// time's efficiency is Seconds over it.
type Roofline struct {
	Device string `json:"device"`
	Work   Work   `json:"work"`
	// The time of each roof, in seconds (0 where there is no such work).
	MemorySeconds float64 `json:"memory_s"`
	CubeSeconds   float64 `json:"cube_s"`
	VectorSeconds float64 `json:"vector_s"`
	// Seconds is the attainable time, the largest of the three, and Bound
	// the roof it comes from (BoundMemory, "cube fp16", BoundVector).
	Seconds float64 `json:"seconds"`
	Bound   string  `json:"bound"`
	// LatencySeconds is the device's fixed latency (Peaks.LatencyNS).
	LatencySeconds float64 `json:"latency_s"`
}

// RooflineOf is w's roofline on the device with peaks p.
func RooflineOf(w Work, p Peaks) Roofline {
	r := Roofline{Device: p.Name, Work: w, LatencySeconds: p.LatencyNS * 1e-9, Bound: BoundMemory}
	r.MemorySeconds = float64(w.Bytes) / (p.GMGBps * 1e9)
	if w.CubeFlops > 0 {
		rate := p.CubeFP16TFLOPS
		switch w.Cube {
		case CubeFP32:
			rate = p.CubeFP32TFLOPS
		case CubeInt8:
			rate = p.CubeInt8TOPS
		}
		r.CubeSeconds = w.CubeFlops / (rate * 1e12)
	}
	if w.VectorOps > 0 {
		r.VectorSeconds = w.VectorOps * float64(max(w.VectorElemBytes, 1)) / (p.VectorGBps * 1e9)
	}
	r.Seconds = r.MemorySeconds
	if r.CubeSeconds > r.Seconds {
		r.Seconds, r.Bound = r.CubeSeconds, boundCube+w.Cube
	}
	if r.VectorSeconds > r.Seconds {
		r.Seconds, r.Bound = r.VectorSeconds, BoundVector
	}
	return r
}

// ThroughputBound reports whether a throughput roof, not the device's
// fixed latency, sets the case's attainable time: only then does the
// ratio of roofline to measured time say how well the kernel uses the
// chip (a case of a few hundred bytes takes the latency whatever it does).
func (r Roofline) ThroughputBound() bool { return r.Seconds > 0 && r.Seconds >= r.LatencySeconds }

// Efficiency is the roofline time over a measured time: 1 at the roof.
func (r Roofline) Efficiency(measured float64) float64 { return r.Seconds / measured }

// GBps is the achieved GM bandwidth at the measured time, 10^9 B/s (of the
// minimum traffic, Work.Bytes).
func (r Roofline) GBps(measured float64) float64 { return float64(r.Work.Bytes) / measured / 1e9 }

// GFLOPs is the achieved computation rate at the measured time, 10^9
// flops (cube and vector operations) per second.
func (r Roofline) GFLOPs(measured float64) float64 { return r.Work.Flops() / measured / 1e9 }

// The states of an efficiency judgement.
const (
	// StateEfficient: the kernel reached at least the minimum efficiency.
	StateEfficient = "efficient"
	// StateInefficient: the kernel's median time is further from the
	// roofline than the minimum efficiency allows.
	StateInefficient = "inefficient"
	// StateLatencyBound: the roofline is below the device's latency, so
	// efficiency is not judged.
	StateLatencyBound = "latency-bound"
	// StateNoTimes: the backend reported no kernel times for the case.
	StateNoTimes = "no kernel times"
)

// JudgeEfficiency holds the median of a case's kernel times to the
// minimum efficiency minEff (a fraction in (0, 1]) of its roofline; it
// returns the state and a one-line detail naming the figures.
func JudgeEfficiency(r Roofline, times []float64, minEff float64) (state, detail string) {
	if len(times) == 0 {
		return StateNoTimes, StateNoTimes
	}
	med := median(times)
	eff := r.Efficiency(med)
	fig := fmt.Sprintf("median kernel time %s of %d, roofline %s (%s-bound on %s: %s, %s)",
		Duration(med), len(times), Duration(r.Seconds), r.Bound, r.Device, Bytes(r.Work.Bytes), Flops(r.Work.Flops()))
	switch {
	case !r.ThroughputBound():
		return StateLatencyBound, fmt.Sprintf("latency-bound, not judged: the roofline is below the device latency %s; %s",
			Duration(r.LatencySeconds), fig)
	case eff < minEff:
		return StateInefficient, fmt.Sprintf("efficiency %.3g below the minimum %g: %s", eff, minEff, fig)
	}
	return StateEfficient, fmt.Sprintf("efficiency %.3g, at least the minimum %g: %s", eff, minEff, fig)
}

// Bytes renders a byte count with a decimal SI prefix ("8.389 MB").
func Bytes(b int64) string {
	x := float64(b)
	for _, u := range []string{"B", "kB", "MB", "GB", "TB"} {
		if math.Abs(x) < 1000 || u == "TB" {
			if u == "B" {
				return fmt.Sprintf("%d B", b)
			}
			return fmt.Sprintf("%.4g %s", x, u)
		}
		x /= 1000
	}
	return "" // not reached
}

// Flops renders a flop count with a decimal SI prefix ("2.147 GFLOP").
func Flops(f float64) string {
	for _, u := range []string{"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP"} {
		if math.Abs(f) < 1000 || u == "TFLOP" {
			return fmt.Sprintf("%.4g %s", f, u)
		}
		f /= 1000
	}
	return "" // not reached
}
