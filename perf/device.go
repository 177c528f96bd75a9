package perf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/npuverify/npuverify/npu"
	"github.com/npuverify/npuverify/safefile"
)

// Peaks are a device's peak rates, the roofs of the roofline, in the form
// `check --device FILE.json` reads (docs/cli.md, "Performance budgets on kernel times"): every field is
// required, every rate a positive finite number, latency_ns finite and
// not negative; an unknown field is an error.
type Peaks struct {
	// Name names the device in reports.
	Name string `json:"name"`
	// GMGBps is the global-memory (HBM) bandwidth of the whole chip, in
	// 10^9 bytes per second.
	GMGBps float64 `json:"gm_gbps"`
	// CubeFP16TFLOPS is the cube units' rate on fp16 and bf16 inputs over
	// every core, in 10^12 flops per second (a multiply-accumulate is 2).
	CubeFP16TFLOPS float64 `json:"cube_fp16_tflops"`
	// CubeFP32TFLOPS is the cube rate on fp32 inputs.
	CubeFP32TFLOPS float64 `json:"cube_fp32_tflops"`
	// CubeInt8TOPS is the cube rate on int8 inputs, 10^12 operations per
	// second (a multiply-accumulate is 2).
	CubeInt8TOPS float64 `json:"cube_int8_tops"`
	// VectorGBps is the bytes of operand the vector units of every core
	// process per second, 10^9 B/s: an elementwise operation on a dtype of
	// b bytes runs at VectorGBps/b operations per second, the way a vector
	// unit of fixed width takes twice as many fp16 lanes as fp32 ones.
	VectorGBps float64 `json:"vector_gbps"`
	// LatencyNS is the fixed time of a kernel, in ns, that no throughput
	// hides (the first load precedes any result, the last store follows
	// it): a case whose roofline time is below it is latency-bound, and
	// --min-efficiency does not judge it.
	LatencyNS float64 `json:"latency_ns"`
}

// PeaksOf derives the peaks of an emulated device profile: cube rates
// from its cores × fractal multiply-accumulates × 2 × clock (fp32 at half
// the fp16 rate, as the cube model runs it), the vector byte rate from
// its vector cores × bytes per cycle × clock, the HBM bandwidth as is, and
// the latency as two DMA latencies (one load before, one store after).
func PeaksOf(p npu.Profile) Peaks {
	ghz := p.ClockGHz
	fp16 := float64(float64(p.AICores)*float64(p.CubeFP16.MACs())) * 2 * ghz / 1e3
	return Peaks{
		Name:           p.Name,
		GMGBps:         p.HBMGBps,
		CubeFP16TFLOPS: fp16,
		CubeFP32TFLOPS: fp16 / 2,
		CubeInt8TOPS:   float64(float64(p.AICores)*float64(p.CubeInt8.MACs())) * 2 * ghz / 1e3,
		VectorGBps:     float64(p.VectorCores) * float64(p.VectorBytesPerCycle) * ghz,
		LatencyNS:      2 * float64(p.DMALatencyCycles) / ghz,
	}
}

// maxDeviceJSON caps the size of a device file: it is a few hundred bytes.
const maxDeviceJSON = 64 << 10

// LoadPeaks reads and validates a device file (ParsePeaks).
func LoadPeaks(path string) (Peaks, error) {
	b, err := safefile.ReadFile(path, maxDeviceJSON)
	if err != nil {
		return Peaks{}, fmt.Errorf("device %s: %w", path, err)
	}
	p, err := ParsePeaks(b)
	if err != nil {
		return Peaks{}, fmt.Errorf("device %s: %w", path, err)
	}
	return p, nil
}

// ParsePeaks decodes and validates a device file's JSON. Errors name the
// field: an unknown one, a missing one, one that is not a number, or one
// out of range.
func ParsePeaks(b []byte) (Peaks, error) {
	var raw struct {
		Name           *string  `json:"name"`
		GMGBps         *float64 `json:"gm_gbps"`
		CubeFP16TFLOPS *float64 `json:"cube_fp16_tflops"`
		CubeFP32TFLOPS *float64 `json:"cube_fp32_tflops"`
		CubeInt8TOPS   *float64 `json:"cube_int8_tops"`
		VectorGBps     *float64 `json:"vector_gbps"`
		LatencyNS      *float64 `json:"latency_ns"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Peaks{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Peaks{}, errors.New("trailing data after the JSON object")
	}
	if raw.Name == nil || *raw.Name == "" {
		return Peaks{}, errors.New("name: missing or empty")
	}
	p := Peaks{Name: *raw.Name}
	for _, f := range []struct {
		name string
		v    *float64
		to   *float64
	}{
		{"gm_gbps", raw.GMGBps, &p.GMGBps},
		{"cube_fp16_tflops", raw.CubeFP16TFLOPS, &p.CubeFP16TFLOPS},
		{"cube_fp32_tflops", raw.CubeFP32TFLOPS, &p.CubeFP32TFLOPS},
		{"cube_int8_tops", raw.CubeInt8TOPS, &p.CubeInt8TOPS},
		{"vector_gbps", raw.VectorGBps, &p.VectorGBps},
		{"latency_ns", raw.LatencyNS, &p.LatencyNS},
	} {
		if f.v == nil {
			return Peaks{}, fmt.Errorf("%s: missing", f.name)
		}
		*f.to = *f.v
	}
	return p, p.Validate()
}

// Validate checks every rate is positive and finite and the latency
// finite and not negative; the error names the first bad field.
func (p Peaks) Validate() error {
	if p.Name == "" {
		return errors.New("name: must not be empty")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"gm_gbps", p.GMGBps}, {"cube_fp16_tflops", p.CubeFP16TFLOPS}, {"cube_fp32_tflops", p.CubeFP32TFLOPS},
		{"cube_int8_tops", p.CubeInt8TOPS}, {"vector_gbps", p.VectorGBps},
	} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%s: must be a positive finite number, got %v", f.name, f.v)
		}
	}
	if !(p.LatencyNS >= 0) || math.IsInf(p.LatencyNS, 0) {
		return fmt.Errorf("latency_ns: must be a finite number ≥ 0, got %v", p.LatencyNS)
	}
	return nil
}
